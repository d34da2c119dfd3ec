"""The e-stop topic's messages, each with the publisher that sent it.

The e-stop is tracked per publisher (estop/sources.py), so each `std_msgs/Bool` must come with
its publisher's gid. rcl's take hands it over (`rmw_message_info_t.publisher_gid`), but rclpy
before 9 (Jazzy's 7.1, Humble's 3) drops it from the message info it gives a callback. So this
subscription is taken here, as a Waitable on the node's executor, through rcl's own `rcl_take`
(ctypes, into the C struct of `std_msgs/Bool`, one bool). Its gid bytes are the same the graph
lists as the publisher's `endpoint_gid`.

The message-info layout is checked on every take: its `implementation_identifier` must be the
rmw this process runs. If it is not (an rcl whose layout differs), the e-stop cannot tell its
publishers apart and says so: every message then counts as a press from one unknown source.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, List, Optional, Tuple

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # the subscription's own handle
from rclpy.qos import QoSProfile
from rclpy.type_support import check_for_type_support
from rclpy.utilities import get_rmw_implementation_identifier
from rclpy.waitable import NumberOfEntities, Waitable
from std_msgs.msg import Bool

__all__ = ["GID_BYTES", "UNKNOWN_GID", "EStopInput"]

GID_BYTES = 16  # a DDS GUID (12-byte participant prefix + 4-byte entity id); zenoh's gids are 16 too
UNKNOWN_GID = bytes(GID_BYTES)
_RCL_RET_OK = 0


class _Gid(ctypes.Structure):  # rmw_gid_t; 24 bytes of storage on Humble, 16 since Iron
    _fields_ = [("implementation_identifier", ctypes.c_char_p), ("data", ctypes.c_uint8 * 24)]


class _MessageInfo(ctypes.Structure):  # rmw_message_info_t, with room to spare at the end
    _fields_ = [("source_timestamp", ctypes.c_int64), ("received_timestamp", ctypes.c_int64),
                ("publication_sequence_number", ctypes.c_uint64), ("reception_sequence_number", ctypes.c_uint64),
                ("publisher_gid", _Gid), ("spare", ctypes.c_uint8 * 64)]


class _CBool(ctypes.Structure):  # std_msgs__msg__Bool, with room to spare
    _fields_ = [("data", ctypes.c_bool), ("spare", ctypes.c_uint8 * 15)]


def _rcl_take() -> Any:
    rcl = ctypes.CDLL("librcl.so")  # already loaded by rclpy: this finds that copy
    take = rcl.rcl_take
    take.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    take.restype = ctypes.c_int32
    return take


class EStopInput(Waitable):
    """A subscription to `topic` whose callback gets `(pressed, publisher gid)`; `layout_broken`
    is set (and `on_broken` called once) if the message info is not what this module reads."""

    def __init__(self, node: Any, topic: str, qos: QoSProfile, callback: Callable[[bool, bytes], None],
                 callback_group: Any, event_callbacks: Any, on_broken: Callable[[str], None]):
        super().__init__(callback_group)
        check_for_type_support(Bool)  # loads its type support (Humble has this one too)
        with node.handle:
            self._handle = _rclpy.Subscription(node.handle, Bool, topic, qos.get_c_qos_profile())
        self._take = _rcl_take()
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

    def take_data(self) -> Optional[Tuple[bool, bytes]]:
        message, info = _CBool(), _MessageInfo()
        with self._handle:
            if self._take(self._handle.pointer, ctypes.byref(message), ctypes.byref(info), None) != _RCL_RET_OK:
                return None  # nothing there after all
        gid = info.publisher_gid
        if gid.implementation_identifier != self._rmw:
            if not self.layout_broken:
                self.layout_broken = True
                self._on_broken(f"the message info of this rcl does not carry the publisher's gid where expected "
                                f"(implementation {gid.implementation_identifier!r}, not {self._rmw!r})")
            return True, UNKNOWN_GID  # fail closed: a press nobody can be told apart from
        return bool(message.data), bytes(gid.data[:GID_BYTES])

    async def execute(self, taken: Optional[Tuple[bool, bytes]]) -> None:
        if taken is not None:
            self._callback(*taken)
