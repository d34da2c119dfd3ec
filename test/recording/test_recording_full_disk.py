"""`run(record=...)` onto a disk that fills (a small tmpfs, filled): the run goes on and completes,
the outcome and a warning say the recording stopped and why, the error is logged once, and the file
keeps what was written before — finished, with the error and the outcome in its metadata."""

from __future__ import annotations

import base64
import io
import os
import warnings

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
from _loop_robot import Robot, policy_for, run_kwargs
from small_disk import fill, small_disk

from sequence_ai import ImageFrame, Observation, Proprioception, cli
from sequence_ai.recording import read_run

NO_SPACE = "OSError: [Errno 28] No space left on device"


def _noise_jpeg() -> str:
    """A 224×224 frame of noise: ~40 kB that no compression shrinks, so the disk fills for real."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (224, 224), os.urandom(224 * 224 * 3)).save(buffer, format="JPEG", quality=95)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class NoisyRobot(Robot):
    def __init__(self) -> None:
        super().__init__()
        self.frames = [_noise_jpeg() for _ in self.views]

    def observe(self) -> Observation:
        observation = Observation(images=[ImageFrame(view=v, data=f) for v, f in zip(self.views, self.frames)],
                                  proprioception=Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
                                  instruction=self.instruction)
        self.observations.append(observation)
        return observation


def test_a_run_recorded_onto_a_disk_that_fills_completes_and_says_the_recording_stopped(platform, tmp_path, caplog,
                                                                                         capsys):
    with small_disk(tmp_path / "disk", 512) as disk:
        fill(disk, 16 << 10)  # the file's first bytes fit, its first chunk (a second of frames) does not
        path = disk / "run.mcap"
        robot = NoisyRobot()
        with policy_for(platform) as policy, warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            out = policy.run(**run_kwargs(robot), max_actions=45, record=str(path))

        # The run: every action reached the robot, nothing held, and the outcome says what was lost.
        assert out.reason == "completed" and len(robot.actions) == 45 and robot.holds == 0
        assert out.recording_error == NO_SPACE and "recording stopped (OSError" in str(out)
        # Said once on the caller's line (the warning) and once in the log (ERROR, when it happened).
        said = [w for w in warned if "stopped writing" in str(w.message)]
        assert len(said) == 1 and str(said[0].message).startswith(f"the recording {path} stopped writing ({NO_SPACE})")
        assert said[0].filename == __file__
        logged = [r for r in caplog.records if r.name == "sequence_ai.recording" and r.levelname == "ERROR"]
        assert len(logged) == 1 and NO_SPACE in logged[0].getMessage()

        # The file keeps what was written before, finished, and says why it stops there.
        record = read_run(path)
        assert record.complete and record.recording_error == NO_SPACE
        assert [list(c.values) for c in record.commands] == robot.actions[:len(record.commands)]
        assert len(record.commands) < 45
        assert record.metadata["sequence_ai.outcome"]["reason"] == "completed"
        assert record.metadata["sequence_ai.outcome"]["actions"] == "45"
        assert cli.main(["replay", str(path)]) == 0
        assert f"{path}: the recording stopped writing early ({NO_SPACE})" in capsys.readouterr().out


def test_a_disk_too_full_for_the_file_to_start_refuses_the_run_before_anything_moves(platform, tmp_path):
    with small_disk(tmp_path / "disk", 64) as disk:
        fill(disk, 0)
        robot = Robot()
        platform.reset()
        with policy_for(platform) as policy, pytest.raises(OSError) as raised:
            policy.run(**run_kwargs(robot), max_actions=10, record=str(disk / "run.mcap"))
        assert raised.value.errno == 28 and str(disk / "run.mcap") in str(raised.value)
        assert robot.actions == [] and robot.observations == [] and platform.requests() == []
