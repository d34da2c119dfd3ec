"""record_dir: the policy node, in its own process over real topics, records each goal to an MCAP
file of its own — what the model saw, what it answered, what went out on the command topic, and
the node's outcome — and a node killed mid-goal leaves a file readable to its last chunk."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from eventually import wait_until
from ros_harness import JOINTS, Planner, start_arm
from sequence_ai_ros.srv import SetInstruction

pytest.importorskip("mcap", reason="needs the [record] extra")
from PIL import Image as PILImage

from sequence_ai import cli
from sequence_ai.recording import read_run
from sequence_ai_ros.tools.processes import NodeProcess

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def _read_when(path, predicate, timeout_s=20.0):
    """The recording at `path` once `predicate(record)` holds (the file is written off the loop)."""
    found = []

    def ready():
        record = read_run(path, frames=True)
        if predicate(record):
            found.append(record)
            return True
        return False

    assert wait_until(ready, timeout_s, poll_s=0.2), f"{path} never satisfied the check"
    return found[0]


def test_each_goal_is_recorded_to_its_own_file_and_a_killed_node_leaves_a_readable_one(ros, policy_node, platform,
                                                                                        tmp_path, capsys):
    folder = tmp_path / "runs"  # created by the node
    process, arm, planner = start_arm(ros, policy_node, platform, record_dir=str(folder))

    # 1. A goal that completes, with an instruction change on the way.
    sent = time.monotonic()
    goal = planner.send("pick up the red cube", max_seconds=30.0, max_actions=45)
    assert wait_until(lambda: len(arm.command_log()) >= 10, 20.0)
    changed = planner.call(planner.set_instruction, SetInstruction.Request(instruction="put it on the plate"))
    assert changed.accepted
    result = Planner.result(goal).result
    assert result.outcome.reason == "completed", result.message
    path = result.outcome.recording
    assert path.startswith(str(folder)) and path.endswith(".mcap"), path
    record = _read_when(path, lambda r: r.complete)
    assert result.outcome.recording_frames_dropped == 0
    assert wait_until(lambda: len([t for t, _ in arm.command_log() if t >= sent]) >= result.outcome.actions + 1, 5.0)
    received = [values for t, values in arm.command_log() if t >= sent]

    # What the model saw: per request, the joints and both views' frames after the client's resize.
    assert len(record.requests) >= result.outcome.chunks and len(record.joint_states) == len(record.requests)
    assert list(record.joint_states[0].name) == [*JOINTS, "gripper"]  # pi05-droid reads the gripper too
    assert record.frame_counts == {"exterior_1": len(record.requests), "wrist_left": len(record.requests)}
    assert PILImage.open(io.BytesIO(record.frames[0].data)).size == (224, 224)  # the camera sends 448×252
    assert [text for _, text in record.instructions] == ["pick up the red cube", "put it on the plate"]
    assert {r.instruction for r in record.requests} == {"pick up the red cube", "put it on the plate"}
    # What it answered and what played: each action names the request and row it came from.
    answered = {a.rid: a for a in record.answers if not a.error}
    assert len(record.commands) == result.outcome.actions
    assert all(c.rid in answered and c.row_index < len(answered[c.rid].steps) for c in record.commands)
    # What went out on the command topic, the hold included, equal to what the arm received.
    published = [list(c.position) for c in record.arm_commands]
    assert len(published) == len(received) == result.outcome.actions + 1
    assert all(sent_row == pytest.approx(got) for sent_row, got in zip(published, received))
    assert list(record.arm_commands[0].name) == [*JOINTS, "fr3_finger_joint1"]
    assert record.holds[-1][1] == "completed" and record.holds[-1][2] == result.outcome.actions
    assert [reason for _, reason, _ in record.holds if reason != "underrun"] == ["completed"], "one ending hold"
    # The node's own feedback and outcome message.
    assert record.feedback and record.feedback[-1].actions <= result.outcome.actions
    assert (record.outcome.reason, record.outcome.actions, record.outcome.frames_dropped) == (
        "completed", result.outcome.actions, 0)
    assert record.outcome.final_instruction == "put it on the plate"
    # How fresh each action was, as act() saw it (the client's side), and the run's figures in the
    # node's outcome, which takes them from the client's RunOutcome (its own message has none).
    assert all(c.age_s is not None and c.age_s >= 0 and c.lateness_s is not None for c in record.commands)
    assert record.outcome.age_max_s == max(c.age_s for c in record.commands)
    assert record.outcome.lateness_max_s == max(c.lateness_s for c in record.commands)
    assert record.outcome.age_p50_s is not None and record.outcome.lateness_p50_s is not None
    extra = json.loads(record.run.extra_json)
    assert extra["node"].endswith("/sequence_ai_policy") and path.endswith(f"-{extra['goal_id'][:8]}.mcap")
    # `sequence-ai replay` reads it; its timeline (the demo's PNG) plots what was published.
    assert cli.main(["replay", path, "--plot", str(tmp_path / "timeline.png")]) == 0
    assert "/policy/arm_command" in capsys.readouterr().out and (tmp_path / "timeline.png").stat().st_size > 10_000
    from sequence_ai.recording.summary import command_series

    assert [list(row) for row in command_series(record)[1]] == published

    # 2. record_dir deleted mid-goal: writes to the file go nowhere, so the outcome says the file
    # went (with its folder), logged once at ERROR; the goal runs on to its end.
    goal = planner.send("pick up the red cube", max_seconds=30.0, max_actions=40)
    assert wait_until(lambda: list(folder.glob("*.mcap")) != [Path(path)] and len(list(folder.glob("*.mcap"))) == 2,
                      20.0), "no file for the goal"
    assert wait_until(lambda: len(arm.command_log()) >= len(received) + 10, 20.0)
    shutil.rmtree(folder)
    result = Planner.result(goal).result
    assert result.outcome.reason == "completed", result.message
    error = result.outcome.recording_error
    assert f"{result.outcome.recording} was deleted while it was being written" in error, error
    assert f"its folder {folder} is gone too" in error, error
    logged = [line for line in process.output().splitlines()
              if line.startswith("[ERROR]") and "was deleted while it was being written" in line]
    assert len(logged) == 1, logged
    folder.mkdir()

    # 3. A node killed with SIGKILL mid-goal: its file reads back up to the last complete chunk.
    planner.send("pick up the red cube", max_seconds=60.0)
    second = wait_until(lambda: [p for p in folder.glob("*.mcap") if str(p) != path], 20.0)
    assert second, "no file for the second goal"
    [killed] = [p for p in folder.glob("*.mcap") if str(p) != path]
    _read_when(killed, lambda r: len(r.commands) >= 30, timeout_s=30.0)
    process.process.send_signal(signal.SIGKILL)
    process.process.wait(10.0)
    record = read_run(killed)
    assert not record.complete and record.outcome is None
    assert len(record.commands) >= 30 and len(record.arm_commands) >= 30
    assert all(c.rid in {a.rid for a in record.answers} for c in record.commands)


def test_a_record_dir_the_node_cannot_write_stops_it_at_startup_naming_it(policy_node, platform, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    process, _ = policy_node(platform, record_dir=str(blocker / "runs"))
    assert process.process.wait(60.0) != 0
    output = process.output()
    assert "FATAL" in output and f"record_dir '{blocker / 'runs'}' cannot be created" in output, output[-2000:]


def test_a_record_dir_without_the_mcap_packages_stops_the_node_at_startup_naming_the_pip_command(platform, tmp_path):
    # As on a robot that installed with rosdep alone: rosdep has no key for mcap (package.xml).
    hidden = tmp_path / "without_mcap"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\nsys.modules['mcap'] = None\n")
    env = {**platform.env(), "PYTHONPATH": os.pathsep.join(p for p in (str(hidden), os.environ.get("PYTHONPATH")) if p)}
    with NodeProcess("policy_node", namespace="/no_mcap_arm", parameters={"record_dir": str(tmp_path / "runs")},
                     env=env, log_path=tmp_path / "policy_node.log") as process:
        assert wait_until(lambda: not process.running, 60.0)
        text = process.output()
    assert process.process.returncode == 1, text[-2000:]
    fatal = [line for line in text.splitlines() if "FATAL" in line and "cannot start" in line]
    assert len(fatal) == 1, text[-2000:]
    assert "record_dir is set but recording needs the MCAP packages (mcap is missing)" in fatal[0], fatal
    assert "pip install 'mcap>=1.6,<2' 'mcap-ros2-support>=0.6,<1'" in fatal[0], fatal
    assert not (tmp_path / "runs").exists()  # refused before anything was made
