"""record_dir on a disk that fills (a small tmpfs, filled after the node started): the goal ends
as it would unrecorded — held, one RunOutcome — the outcome says why its recording stopped, the
node logs it at ERROR once, and the file keeps what was written before, with the error in it."""

from __future__ import annotations

import time

import pytest
from eventually import wait_until
from ros_harness import Planner, start_arm
from small_disk import fill, small_disk

pytest.importorskip("mcap", reason="needs the [record] extra")
from sequence_ai.recording import read_run

pytestmark = [pytest.mark.ros, pytest.mark.slow]

NO_SPACE = "OSError: [Errno 28] No space left on device"


def test_a_goal_whose_recording_fills_the_disk_ends_normally_and_says_so(ros, policy_node, platform, tmp_path):
    with small_disk(tmp_path / "runs", 512) as folder:
        process, arm, planner = start_arm(ros, policy_node, platform, record_dir=str(folder))
        fill(folder, 4 << 10)  # one page: the file's first bytes fit, its first chunk (at 1 s) does not
        sent = time.monotonic()
        result = Planner.result(planner.send("pick up the red cube", max_seconds=30.0, max_actions=45)).result

        # The goal: completed with all its actions, held, one outcome, and the outcome says it.
        outcome = result.outcome
        assert outcome.reason == "completed" and outcome.actions == 45 and outcome.held, result.message
        assert outcome.recording.startswith(str(folder)) and outcome.recording_error == NO_SPACE
        assert wait_until(lambda: len([t for t, _ in arm.command_log() if t >= sent]) >= outcome.actions + 1, 5.0)
        # The node's log: one ERROR line, when the writing stopped (before the goal's result).
        assert wait_until(lambda: "stopped writing" in process.output(), 10.0)
        said = [line for line in process.output().splitlines() if "stopped writing" in line]
        assert len(said) == 1 and "[ERROR]" in said[0] and NO_SPACE in said[0], said
        assert f"the recording {outcome.recording} stopped writing" in said[0]
        assert len(planner.outcomes) == 1 and planner.outcomes[0].recording_error == NO_SPACE

        # The file: finished after the outcome went out, a prefix of the goal, and why it stops.
        assert wait_until(lambda: read_run(outcome.recording).complete, 20.0, poll_s=0.2)
        record = read_run(outcome.recording)
        assert record.recording_error == NO_SPACE and len(record.commands) < outcome.actions
        assert record.metadata["sequence_ai.outcome"]["reason"] == "completed"
