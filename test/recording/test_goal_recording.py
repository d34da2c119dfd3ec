"""The node's record_dir: one file per goal, with the node's own feedback and RunOutcome message,
finished off the goal's thread; a record_dir that cannot be used stops the node at startup."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
msg = pytest.importorskip("sequence_ai_ros.msg", reason="needs the built ROS workspace")

from sequence_ai._loop._outcome import RunProgress
from sequence_ai.recording import read_run
from sequence_ai_ros.goal.recording import GoalRecordings

JOINTS = [f"fr3_joint{i}" for i in range(1, 8)] + ["fr3_finger_joint1"]


def _recordings(folder):
    return GoalRecordings.from_parameter(str(folder), model="pi05-droid", joint_names=JOINTS,
                                         camera_views=("exterior_1", "wrist_left"), node="/left_arm/sequence_ai_policy")


def test_an_empty_record_dir_records_nothing_and_one_of_blanks_is_refused_naming_it():
    assert GoalRecordings.from_parameter("", model="m", joint_names=(), camera_views=(), node="n") is None
    with pytest.raises(ValueError, match=r"record_dir '  ' is only blanks"):  # was: no recording, silently
        GoalRecordings.from_parameter("  ", model="m", joint_names=(), camera_views=(), node="n")


def test_each_goal_gets_a_file_with_the_nodes_feedback_and_outcome(tmp_path):
    recordings = _recordings(tmp_path / "runs" / "today")  # created when missing
    recorder = recordings.open("0f3c9a77e2d44b1c8f00aa11bb22cc33")
    assert recorder.path.startswith(str(tmp_path / "runs" / "today")) and recorder.path.endswith("-0f3c9a77.mcap")
    recorder.run_started(model="pi05-droid", episode_id="e")  # what run() does first
    recorder.command([0.1] * 8, rid="r-1", row_index=0)
    recorder.feedback(RunProgress(running=True, actions=1, chunks=1, instruction="pick"))
    outcome = msg.RunOutcome(reason="canceled", stopped_early=True, message="canceled by the planner", actions=1,
                             chunks=1, held=True, model="pi05-droid", final_instruction="pick")
    closing = recordings.finish(recorder, outcome)
    assert recordings.finish(recorder, outcome) is None, "one outcome per goal"
    closing.join(10.0)
    record = read_run(recorder.path)
    assert record.complete and len(record.commands) == 1 and record.feedback[0].instruction == "pick"
    assert record.topics["/policy/outcome"][1] == 1
    assert (record.outcome.reason, record.outcome.message, record.outcome.held) == ("canceled",
                                                                                     "canceled by the planner", True)
    assert json.loads(record.run.extra_json) == {"goal_id": "0f3c9a77e2d44b1c8f00aa11bb22cc33", "model": "pi05-droid",
                                                 "node": "/left_arm/sequence_ai_policy"}
    assert list(record.run.joint_names) == JOINTS and list(record.run.camera_views) == ["exterior_1", "wrist_left"]


def test_shutdown_finishes_a_goal_still_open(tmp_path):
    recordings = _recordings(tmp_path)
    recorder = recordings.open("aa" * 16)
    recorder.run_started(model="pi05-droid", episode_id="e")
    recordings.close()
    assert read_run(recorder.path).complete


def test_a_goal_whose_file_cannot_be_created_runs_unrecorded_and_says_so(tmp_path):
    errors = []
    folder = tmp_path / "runs"
    recordings = GoalRecordings.from_parameter(str(folder), model="m", joint_names=(), camera_views=(), node="n",
                                               log_error=errors.append)
    folder.rmdir()  # the folder went away after startup (an unmounted disk, say)
    assert recordings.open("bb" * 16) is None
    assert len(errors) == 1 and "this goal is not recorded" in errors[0] and str(folder) in errors[0]


def test_a_record_dir_that_cannot_be_created_is_refused_naming_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ValueError, match=r"record_dir '.*a-file/runs' cannot be created"):
        _recordings(blocker / "runs")


def test_record_dir_without_the_record_extra_is_refused_naming_it(tmp_path):
    probe = ("import sys; sys.modules['mcap'] = None\n"
             "from sequence_ai_ros.goal.recording import GoalRecordings\n"
             "try:\n"
             f"    GoalRecordings.from_parameter({str(tmp_path)!r}, model='m', joint_names=(), camera_views=(), node='n')\n"
             "except ValueError as exc:\n"
             "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "record_dir is set but recording needs the MCAP packages" in out.stdout, out.stderr
    assert "(mcap is missing): pip install 'mcap>=1.6,<2' 'mcap-ros2-support>=0.6,<1'" in out.stdout
