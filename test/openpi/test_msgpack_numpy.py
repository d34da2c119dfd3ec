"""Our openpi frames against openpi-client's own msgpack_numpy (in its scratch venv), both ways, and the
frames ours refuses: object, void and complex dtypes, lying shapes, too much nesting, not msgpack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sequence_ai._net._msgpack_numpy import FrameError, pack, unpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scratch import scratch_env, scratch_python

sys.path.pop(0)

# Run in openpi's venv: read a frame of ours from stdin, check it, answer with a frame of openpi's.
OPENPI_SIDE = r"""
import sys
import numpy as np
from openpi_client import msgpack_numpy
ours = msgpack_numpy.unpackb(sys.stdin.buffer.read())
image = ours["observation/exterior_image_1_left"]
assert image.dtype == np.uint8 and image.shape == (224, 224, 3), (image.dtype, image.shape)
assert np.array_equal(image, (np.arange(224 * 224 * 3) % 251).astype(np.uint8).reshape(224, 224, 3))
assert ours["observation/joint_position"].dtype == np.float64
assert list(ours["observation/joint_position"]) == [0.5, -1.25, 2.0]
assert ours["prompt"] == "pick up the cup"
assert ours["count"] == np.int32(7) and type(ours["count"]) is np.int32
answer = {"actions": np.linspace(-1, 1, 15 * 8, dtype=np.float32).reshape(15, 8),
          "server_timing": {"infer_ms": 12.5}, "flag": np.bool_(True), "index": np.uint16(3)}
sys.stdout.buffer.write(msgpack_numpy.packb(answer))
"""


def test_frames_cross_with_openpi_clients_own_codec_both_ways():
    python = scratch_python("openpi")
    frame = pack({"observation/exterior_image_1_left": (np.arange(224 * 224 * 3) % 251).astype(np.uint8).reshape(224, 224, 3),
                  "observation/joint_position": np.array([0.5, -1.25, 2.0]), "prompt": "pick up the cup",
                  "count": np.int32(7)})
    done = subprocess.run([python, "-c", OPENPI_SIDE], input=frame, capture_output=True, env=scratch_env(), timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answer = unpack(done.stdout)
    assert answer["actions"].dtype == np.float32 and answer["actions"].shape == (15, 8)
    assert np.array_equal(answer["actions"], np.linspace(-1, 1, 120, dtype=np.float32).reshape(15, 8))
    assert answer["server_timing"] == {"infer_ms": 12.5}
    assert answer["flag"] == np.bool_(True) and type(answer["index"]) is np.uint16 and answer["index"] == 3


def _array_map(dtype: str, data: bytes, shape: list) -> bytes:
    import msgpack

    return msgpack.packb({"a": {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}})


@pytest.mark.parametrize("dtype", ["|O", "|V8", "<c16", "[('a', '<i4')]"])
def test_object_void_and_complex_arrays_are_refused_on_the_way_in(dtype):
    with pytest.raises(FrameError, match="dtype"):
        unpack(_array_map(dtype, b"\0" * 16, [1]))


@pytest.mark.parametrize("value", [np.array([object()], dtype=object), np.zeros(2, dtype=np.complex64),
                                   np.zeros(2, dtype=[("a", "i4")])])
def test_object_void_and_complex_arrays_are_refused_on_the_way_out(value):
    with pytest.raises(FrameError, match="refusing"):
        pack({"x": value})


def test_an_array_whose_shape_asks_for_more_bytes_than_it_carries_is_refused():
    with pytest.raises(FrameError, match="needs 8000000000 bytes, its data has 8"):
        unpack(_array_map("<f8", b"\0" * 8, [1000, 1000, 1000]))
    with pytest.raises(FrameError, match="shape"):
        unpack(_array_map("<f8", b"\0" * 8, [-1]))


def test_a_frame_that_is_not_msgpack_or_nests_too_deeply_is_a_clear_error():
    with pytest.raises(FrameError, match="not a msgpack frame"):
        unpack(b"\xc1\xc1\xc1")
    with pytest.raises(FrameError):
        unpack(b"\x91" * 100_000 + b"\xc0")  # 100 000 nested arrays
    with pytest.raises(FrameError, match="not a msgpack frame"):
        unpack(b"\xdd\xff\xff\xff\xff")  # an array header claiming 4 G entries in a 5-byte frame
