"""The node's parts on their own: image conversion, the safety check, command mapping, the
parameter file and the launch files."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image

from sequence_ai_ros.control.safety import CommandLimits, UnsafeCommand, check_command
from sequence_ai_ros.inputs.images import ImageConversionError, to_rgb
from sequence_ai_ros.inputs.samples import BadInput, LatestSample, StaleInput, read_joints

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]
RED = (230, 10, 20)


def red_rgb(width=6, height=4):
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[:, :] = RED
    image[0, 0] = (1, 2, 3)  # a marker pixel to catch transposition and row shifts
    return image


def raw_message(rgb: np.ndarray, encoding: str, padding: int = 0, bigendian: bool = False) -> Image:
    height, width, _ = rgb.shape
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[:, :, ::-1]
    elif encoding == "rgba8":
        pixels = np.dstack([rgb, np.full((height, width), 255, np.uint8)])
    elif encoding == "bgra8":
        pixels = np.dstack([rgb[:, :, ::-1], np.full((height, width), 255, np.uint8)])
    elif encoding == "mono8":
        pixels = rgb[:, :, :1]
    elif encoding in ("mono16", "16UC1"):
        pixels = (rgb[:, :, :1].astype(np.uint16) * 257).astype(">u2" if bigendian else "<u2")
    else:
        raise AssertionError(encoding)
    row = np.ascontiguousarray(pixels).reshape(height, -1).view(np.uint8)
    padded = np.zeros((height, row.shape[1] + padding), dtype=np.uint8)
    padded[:, : row.shape[1]] = row
    return Image(height=height, width=width, encoding=encoding, is_bigendian=int(bigendian),
                 step=row.shape[1] + padding, data=padded.tobytes())


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8"])
@pytest.mark.parametrize("padding", [0, 5])
def test_colour_images_convert_to_rgb_with_red_staying_red(encoding, padding):
    rgb = red_rgb()
    out = to_rgb(raw_message(rgb, encoding, padding))
    assert out.shape == (4, 6, 3) and out.dtype == np.uint8
    assert tuple(out[2, 3]) == RED, "colour order wrong"
    assert tuple(out[0, 0]) == (1, 2, 3)


@pytest.mark.parametrize("encoding,bigendian", [("mono8", False), ("mono16", False), ("mono16", True), ("16UC1", False)])
def test_mono_images_become_grey_rgb(encoding, bigendian):
    out = to_rgb(raw_message(red_rgb(), encoding, padding=3, bigendian=bigendian))
    assert out.shape == (4, 6, 3)
    assert tuple(out[2, 3]) == (RED[0],) * 3


def test_compressed_images_decode_in_rgb_order():
    import cv2

    ok, jpeg = cv2.imencode(".png", red_rgb(16, 9)[:, :, ::-1])
    out = to_rgb(CompressedImage(format="png", data=jpeg.tobytes()))
    assert tuple(out[4, 8]) == RED


@pytest.mark.parametrize("message,why", [
    (Image(height=4, width=6, encoding="yuv422", step=12, data=bytes(48)), "unsupported image encoding"),
    (Image(height=4, width=6, encoding="rgb8", step=10, data=bytes(72)), "step 10 is shorter"),
    (Image(height=4, width=6, encoding="rgb8", step=18, data=bytes(50)), "needs"),
    (CompressedImage(format="jpeg", data=b"not a jpeg"), "could not be decoded"),
])
def test_malformed_images_are_refused_naming_why(message, why):
    with pytest.raises(ImageConversionError, match=why):
        to_rgb(message)


class _Joints:
    def __init__(self, name, position):
        self.name, self.position = name, position


def test_joint_states_are_reordered_by_name():
    names = ["b", "gripper", "a"]
    reading = read_joints(_Joints(names, [2.0, 0.04, 1.0]), ["a", "b"], "gripper")
    assert reading.positions == (1.0, 2.0) and reading.gripper == 0.04


@pytest.mark.parametrize("names,positions,why", [
    (["a"], [1.0], "lacks b"),
    (["a", "b", "gripper"], [1.0, math.nan, 0.0], "b = nan"),
    (["a", "b"], [1.0, 2.0], "lacks the gripper joint"),
    (["a", "b", "gripper"], [1.0, 2.0], "3 names but 2 positions"),
])
def test_bad_joint_states_are_refused(names, positions, why):
    with pytest.raises(BadInput, match=why):
        read_joints(_Joints(names, positions), ["a", "b"], "gripper")


def test_latest_sample_reports_missing_and_stale_input():
    now = [100.0]
    sample = LatestSample("/cam", 0.5, lambda: now[0])
    with pytest.raises(StaleInput, match="no message received on /cam"):
        sample.fresh()
    sample.store("frame")
    now[0] += 0.4
    assert sample.fresh() == "frame"
    now[0] += 0.2
    with pytest.raises(StaleInput, match="stale"):
        sample.fresh()


LIMITS = CommandLimits(("j1", "j2"), (-1.0, -1.0), (1.0, 1.0), (2.0, 2.0), 0.2)


@pytest.mark.parametrize("joints,previous,interface,why", [
    ((0.0, math.nan), None, "position", "j2 command is nan"),
    ((0.0, 1.5), None, "position", "j2 target"),
    ((0.0, 0.1), (0.0, -0.1), "position", "j2 target jumps"),
    ((0.0, 2.5), None, "velocity", "j2 velocity"),
    ((0.0,), None, "position", "1 joint values"),
])
def test_unsafe_commands_are_refused_naming_the_joint(joints, previous, interface, why):
    with pytest.raises(UnsafeCommand, match=why):
        check_command(joints, interface, LIMITS, previous, period_s=1 / 15)


def test_safe_commands_pass():
    check_command((0.1, -0.1), "position", LIMITS, (0.05, -0.05), period_s=1 / 15)
    check_command((1.9, -1.9), "velocity", LIMITS, None, period_s=1 / 15)


def test_launch_files_name_executables_and_files_that_exist():
    installed = {p.name for p in (ROOT / "scripts" / "bin").iterdir()}
    cmake = (ROOT / "CMakeLists.txt").read_text()
    for launch in (ROOT / "launch").glob("*.launch.py"):
        tree = ast.parse(launch.read_text())
        executables = [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call)
                       for kw in node.keywords if kw.arg == "executable"]
        assert executables, launch.name
        assert set(executables) <= installed, f"{launch.name} runs {executables}"
        for executable in executables:
            assert f"scripts/bin/{executable}" in cmake, f"{executable} is not installed by CMakeLists.txt"
        configs = [c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and str(c.value).endswith(".yaml")]
        assert all((ROOT / "config" / c).exists() for c in configs), configs
