"""The e-stop topic's messages, each with the publisher that sent it, taken all at once.

The e-stop is tracked per publisher (estop/sources.py), so each `std_msgs/Bool` must come with
its publisher's gid. rcl's take hands it over (`rmw_message_info_t.publisher_gid`), but rclpy
before 9 (Jazzy's 7.1, Humble's 3) drops it from the message info it gives a callback. So this
subscription is taken here, as a Waitable on the node's executor, through rcl's own
`rcl_take_serialized_message` (ctypes). Its gid bytes are the same the graph lists as the
publisher's `endpoint_gid`.

Each time the subscription is ready, every sample queued is taken (up to MAX_TAKE) and handed
over in one call, so a press never waits behind another publisher's traffic for more than one
wake-up. The message is taken serialized and decoded here (a CDR header, then one byte): a
message that cannot be decoded (truncated, or not CDR) still names its publisher, and counts as
pressing (`Sample.decoded` False). Any non-zero byte is `true`, as the C type support reads it.

The message-info layout is checked on every take: its `implementation_identifier` must be the
rmw this process runs. If it is not (an rcl whose layout differs), the e-stop cannot tell its
publishers apart and says so: every message then counts as a press from one unknown source.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # the subscription's own handle
from rclpy.qos import QoSProfile
from rclpy.type_support import check_for_type_support
from rclpy.utilities import get_rmw_implementation_identifier
from rclpy.waitable import NumberOfEntities, Waitable
from std_msgs.msg import Bool

__all__ = ["GID_BYTES", "MAX_TAKE", "UNKNOWN_GID", "EStopInput", "Sample", "decode_bool"]

GID_BYTES = 16  # a DDS GUID (12-byte participant prefix + 4-byte entity id); zenoh's gids are 16 too
UNKNOWN_GID = bytes(GID_BYTES)
MAX_TAKE = 4096  # samples per wake-up: the rest are taken at the next one, straight after
_RCL_RET_OK = 0
_RCL_RET_SUBSCRIPTION_TAKE_FAILED = 401
# A CDR encapsulation header: 0, then the representation (CDR big/little endian, XCDR2 plain big/little).
_ENCAPSULATIONS = (0x00, 0x01, 0x06, 0x07)
_KEEP_CAPACITY = 1 << 16  # a buffer grown past this by one huge message is given back


@dataclass(frozen=True)
class Sample:
    """One message taken: its publisher, its value, whether it could be decoded (a message that
    could not counts as `true`), and its publisher's source stamp (ns since the epoch)."""

    gid: bytes
    pressed: bool
    decoded: bool = True
    sent_ns: int = 0


def decode_bool(payload: bytes) -> Optional[bool]:
    """A serialized std_msgs/Bool's value; None if it cannot be one (too short, not CDR)."""
    if len(payload) < 5 or payload[0] != 0 or payload[1] not in _ENCAPSULATIONS:
        return None
    return payload[4] != 0


class _Gid(ctypes.Structure):  # rmw_gid_t; 24 bytes of storage on Humble, 16 since Iron
    _fields_ = [("implementation_identifier", ctypes.c_char_p), ("data", ctypes.c_uint8 * 24)]


class _MessageInfo(ctypes.Structure):  # rmw_message_info_t, with room to spare at the end
    _fields_ = [("source_timestamp", ctypes.c_int64), ("received_timestamp", ctypes.c_int64),
                ("publication_sequence_number", ctypes.c_uint64), ("reception_sequence_number", ctypes.c_uint64),
                ("publisher_gid", _Gid), ("spare", ctypes.c_uint8 * 64)]


class _Allocator(ctypes.Structure):  # rcutils_allocator_t
    _fields_ = [("allocate", ctypes.c_void_p), ("deallocate", ctypes.c_void_p), ("reallocate", ctypes.c_void_p),
                ("zero_allocate", ctypes.c_void_p), ("state", ctypes.c_void_p)]


class _Bytes(ctypes.Structure):  # rcutils_uint8_array_t = rcl_serialized_message_t
    _fields_ = [("buffer", ctypes.POINTER(ctypes.c_uint8)), ("buffer_length", ctypes.c_size_t),
                ("buffer_capacity", ctypes.c_size_t), ("allocator", _Allocator)]


class _Rcl:
    """The three C calls this module makes (librcl and librcutils are loaded by rclpy already)."""

    def __init__(self) -> None:
        rcl, rcutils = ctypes.CDLL("librcl.so"), ctypes.CDLL("librcutils.so")
        self.take = rcl.rcl_take_serialized_message
        self.take.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bytes), ctypes.POINTER(_MessageInfo), ctypes.c_void_p]
        self.take.restype = ctypes.c_int32
        self.allocator = rcutils.rcutils_get_default_allocator
        self.allocator.restype = _Allocator
        self.init = rcutils.rcutils_uint8_array_init
        self.init.argtypes = [ctypes.POINTER(_Bytes), ctypes.c_size_t, ctypes.POINTER(_Allocator)]
        self.init.restype = ctypes.c_int32
        self.fini = rcutils.rcutils_uint8_array_fini
        self.fini.argtypes = [ctypes.POINTER(_Bytes)]
        self.fini.restype = ctypes.c_int32

    def new_buffer(self) -> _Bytes:
        buffer, allocator = _Bytes(), self.allocator()
        if self.init(ctypes.byref(buffer), 64, ctypes.byref(allocator)) != _RCL_RET_OK:
            raise MemoryError("the e-stop's take buffer could not be allocated")
        return buffer


class EStopInput(Waitable):
    """A subscription to `topic` whose callback gets every Sample taken at one wake-up, in order;
    `layout_broken` is set (and `on_broken` called once) if the message info is not what this
    module reads."""

    def __init__(self, node: Any, topic: str, qos: QoSProfile, callback: Callable[[List[Sample]], None],
                 callback_group: Any, event_callbacks: Any, on_broken: Callable[[str], None]):
        super().__init__(callback_group)
        check_for_type_support(Bool)  # loads its type support (Humble has this one too)
        with node.handle:
            self._handle = _rclpy.Subscription(node.handle, Bool, topic, qos.get_c_qos_profile())
        self._rcl = _Rcl()
        self._taking = threading.Lock()  # the buffer is freed by destroy() only between takes
        self._buffer: Optional[_Bytes] = self._rcl.new_buffer()
        self._info = _MessageInfo()
        self._rmw = get_rmw_implementation_identifier().encode()
        self._callback = callback
        self._on_broken = on_broken
        self.layout_broken = False
        self.event_handlers: List[Any] = event_callbacks.create_event_handlers(callback_group, self._handle, topic)
        node.add_waitable(self)
        for handler in self.event_handlers:
            node.add_waitable(handler)

    def destroy(self, node: Any) -> None:
        for waitable in [self, *self.event_handlers]:
            node.remove_waitable(waitable)
            if waitable is not self:
                waitable.destroy()
        self._handle.destroy_when_not_in_use()
        with self._taking:
            if self._buffer is not None:
                self._rcl.fini(ctypes.byref(self._buffer))
                self._buffer = None

    # -- the Waitable API ------------------------------------------------------------------------
    def __enter__(self) -> None:
        self._handle.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._handle.__exit__(*exc)

    def get_num_entities(self) -> NumberOfEntities:
        return NumberOfEntities(num_subs=1)

    def add_to_wait_set(self, wait_set: Any) -> None:
        wait_set.add_subscription(self._handle)

    def is_ready(self, wait_set: Any) -> bool:
        return self._handle.pointer in wait_set.get_ready_entities("subscription")

    def take_data(self) -> List[Sample]:
        """Every sample queued now (at most MAX_TAKE), oldest first."""
        samples: List[Sample] = []
        with self._taking:
            buffer = self._buffer
            if buffer is None:
                return samples  # destroyed
            with self._handle:
                while len(samples) < MAX_TAKE:
                    sample = self._take_one(buffer)
                    if sample is None:
                        break
                    samples.append(sample)
            if buffer.buffer_capacity > _KEEP_CAPACITY:
                self._rcl.fini(ctypes.byref(buffer))
                self._buffer = self._rcl.new_buffer()
        return samples

    async def execute(self, taken: List[Sample]) -> None:
        if taken:
            self._callback(taken)

    def _take_one(self, buffer: _Bytes) -> Optional[Sample]:
        info = self._info
        returned = self._rcl.take(self._handle.pointer, ctypes.byref(buffer), ctypes.byref(info), None)
        if returned == _RCL_RET_SUBSCRIPTION_TAKE_FAILED:
            return None  # nothing more queued
        if returned != _RCL_RET_OK:
            return None  # rcl could not hand a sample over (it has logged why); the next wake-up tries again
        gid = info.publisher_gid
        if gid.implementation_identifier != self._rmw:
            if not self.layout_broken:
                self.layout_broken = True
                self._on_broken(f"the message info of this rcl does not carry the publisher's gid where expected "
                                f"(implementation {gid.implementation_identifier!r}, not {self._rmw!r})")
            return Sample(UNKNOWN_GID, True)  # fail closed: a press nobody can be told apart from
        head = min(buffer.buffer_length, 8)  # the header and the value: a longer message's rest is not read
        value = decode_bool(ctypes.string_at(buffer.buffer, head) if head else b"")
        return Sample(bytes(gid.data[:GID_BYTES]), value is not False, value is not None, info.source_timestamp)
