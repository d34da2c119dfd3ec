"""The openpi wire's frames: msgpack maps whose arrays travel as maps with bin keys.

    ndarray -> {b"__ndarray__": True, b"data": raw bytes, b"dtype": dtype.str, b"shape": [dims]}
    numpy scalar -> {b"__npgeneric__": True, b"data": the value, b"dtype": dtype.str}

Only plain numbers cross: bool, int, unsigned and float dtypes. Object, void (structured) and
complex dtypes are refused both ways, so nothing is ever unpickled, and a decoded array must have
exactly the bytes its shape and dtype call for. Every length the unpacker meets is bounded by the
frame it reads, so a hostile frame cannot make it allocate more than the frame's own size.
Needs `msgpack` and `numpy` (the [openpi] extra), imported when a frame is first packed or read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DIMS", "FrameError", "pack", "unpack"]

NDARRAY = b"__ndarray__"
NPGENERIC = b"__npgeneric__"
ALLOWED_KINDS = "biuf"  # bool, int, unsigned, float
MAX_DIMS = 32  # numpy's own limit is 64; no policy wire uses more than 4
MAX_CONTAINER_ITEMS = 100_000  # entries in any one msgpack array or map


class FrameError(ValueError):
    """A frame that is not a well-formed openpi msgpack frame; the message says what was wrong."""


def _refused_kind(dtype: Any) -> bool:
    return dtype.kind not in ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None


def _pack_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, (np.ndarray, np.generic)):
        if _refused_kind(obj.dtype):
            raise FrameError(f"refusing to send a {obj.dtype} array: only bool, int and float arrays cross the wire")
        if isinstance(obj, np.ndarray):
            return {NDARRAY: True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": list(obj.shape)}
        return {NPGENERIC: True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise FrameError(f"cannot send a {type(obj).__name__} on the openpi wire")


def pack(obj: Any) -> bytes:
    """`obj` (maps, lists, str, numbers, numpy arrays and scalars) as one binary frame."""
    import msgpack

    try:
        return msgpack.packb(obj, default=_pack_default, use_bin_type=True)
    except FrameError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise FrameError(f"cannot pack the request: {exc}") from None


def _dtype(value: Any) -> Any:
    import numpy as np

    if not isinstance(value, (str, bytes)):
        raise FrameError(f"an array's dtype is a {type(value).__name__}, not a dtype string")
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        raise FrameError(f"unknown dtype {text[:40]!r}") from None
    if _refused_kind(dtype):
        raise FrameError(f"refused dtype {text[:40]!r}: only bool, int and float arrays are read")
    return dtype


def _array(obj: dict) -> Any:
    import numpy as np

    dtype = _dtype(obj.get(b"dtype"))
    data, shape = obj.get(b"data"), obj.get(b"shape")
    if not isinstance(data, bytes):
        raise FrameError("an array's data is not bytes")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise FrameError(f"an array's shape is not a list of at most {MAX_DIMS} non-negative ints")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise FrameError(f"an array of shape {tuple(shape)} and dtype {dtype.str} needs "
                         f"{count * dtype.itemsize} bytes, its data has {len(data)}")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _scalar(obj: dict) -> Any:
    dtype = _dtype(obj.get(b"dtype"))
    value = obj.get(b"data")
    if not isinstance(value, (bool, int, float)):
        raise FrameError(f"a {dtype.str} scalar's data is a {type(value).__name__}")
    try:
        return dtype.type(value)
    except (OverflowError, ValueError, TypeError):
        raise FrameError(f"{value!r} is not a {dtype.str} value") from None


def _object_hook(obj: dict) -> Any:
    if NDARRAY in obj:
        return _array(obj)
    if NPGENERIC in obj:
        return _scalar(obj)
    return obj


def unpack(frame: bytes) -> Any:
    """One binary frame as Python values (arrays as read-only numpy arrays), or FrameError."""
    import msgpack

    if not isinstance(frame, (bytes, bytearray, memoryview)):
        raise FrameError(f"expected a binary frame, got {type(frame).__name__}")
    size = len(frame)
    items = min(size, MAX_CONTAINER_ITEMS)
    try:
        return msgpack.unpackb(bytes(frame), object_hook=_object_hook, raw=False,
                               max_bin_len=size, max_str_len=size, max_array_len=items, max_map_len=items,
                               max_ext_len=0)
    except FrameError:
        raise
    except RecursionError:
        raise FrameError("the frame nests too deeply") from None
    except Exception as exc:  # msgpack's ExtraData, FormatError, StackError, ValueError, TypeError ...
        raise FrameError(f"not a msgpack frame ({type(exc).__name__}: {str(exc)[:120]})") from None
