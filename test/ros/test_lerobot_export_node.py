"""Issue #27's done-when: two goals recorded through one launched node (the first with an
instruction change), exported with `sequence-ai export --format lerobot`, and loaded with the real
lerobot's LeRobotDataset (the scratch venv .lerobot-venv/): one episode per goal, one frame per
action, the images at the size the model was sent, the tasks, and each frame's published command
equal to what the arm received at that step."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time

import pytest
from eventually import wait_until
from numpy.testing import assert_allclose
from ros_harness import JOINTS, Planner, start_arm
from scratch import ROOT, scratch_env, scratch_python
from sequence_ai_ros.srv import SetInstruction

pytest.importorskip("mcap", reason="needs the [record] extra")
from sequence_ai.recording import read_run

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.scratch, pytest.mark.timeout(2400)]  # may wait for the venv

LOAD = textwrap.dedent("""
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/dataset", root=sys.argv[1])
    frames = [dataset[i] for i in range(len(dataset))]
    print(json.dumps({
        "episodes": dataset.num_episodes, "fps": dataset.fps, "names": dataset.features["action.joint_position"]["names"],
        "episode": [int(f["episode_index"]) for f in frames], "task": [f["task"] for f in frames],
        "action": [f["action"].tolist() for f in frames],
        "published": [f["action.joint_position"].tolist() for f in frames],
        "images": sorted({(k, tuple(f[k].shape)) for f in frames for k in f if k.startswith("observation.images.")}),
    }))
""")



def _goal(arm, planner, instruction, max_actions, change=None):
    """Run one goal to its end: (its result, the commands the arm received during it)."""
    since = time.monotonic()
    goal = planner.send(instruction, max_seconds=30.0, max_actions=max_actions)
    if change:
        assert wait_until(lambda: len([t for t, _ in arm.command_log() if t >= since]) >= 12, 20.0)
        assert planner.call(planner.set_instruction, SetInstruction.Request(instruction=change)).accepted
    result = Planner.result(goal).result
    assert result.outcome.reason == "completed", result.message
    received = arm.settled_commands(result.outcome.actions + 1, since=since)  # the hold after it too
    return result, [values for _, values in received]


def test_two_goals_recorded_by_the_node_load_as_a_lerobot_dataset(ros, policy_node, platform, tmp_path):
    python = scratch_python("lerobot")  # before the node starts: may wait for `make test`'s install
    folder = tmp_path / "runs"
    _, arm, planner = start_arm(ros, policy_node, platform, record_dir=str(folder))
    first, received_first = _goal(arm, planner, "pick up the red cube", 45, change="put it on the plate")
    second, received_second = _goal(arm, planner, "open the drawer", 30)
    paths = [first.outcome.recording, second.outcome.recording]
    assert wait_until(lambda: all(read_run(p).complete for p in paths), 20.0, poll_s=0.2)
    played = [[list(c.values) for c in read_run(p).commands] for p in paths]

    dataset = tmp_path / "dataset"
    export = subprocess.run([python, "-m", "sequence_ai", "export", "--format", "lerobot", str(folder), str(dataset)],
                            capture_output=True, text=True, env=scratch_env(), cwd=str(ROOT), timeout=600)
    assert export.returncode == 0, export.stderr[-3000:]
    loaded = subprocess.run([python, "-c", LOAD, str(dataset)], capture_output=True, text=True, env=scratch_env(),
                            cwd=str(ROOT), timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    data = json.loads(loaded.stdout.splitlines()[-1])

    # One episode per goal, one frame per action played, at the model's 15 Hz.
    actions = [first.outcome.actions, second.outcome.actions]
    assert (data["episodes"], data["fps"]) == (2, 15)
    assert data["episode"] == [0] * actions[0] + [1] * actions[1]
    # Both views, at the size the model was sent (the camera publishes 448×252; pi05-droid gets 224×224).
    assert data["images"] == [["observation.images.exterior_1", [3, 224, 224]],
                              ["observation.images.wrist_left", [3, 224, 224]]]
    # The tasks: the instruction in force, changed mid-goal in the first.
    tasks = data["task"][:actions[0]]
    change = tasks.index("put it on the plate")
    assert change >= 12 and tasks == ["pick up the red cube"] * change + ["put it on the plate"] * (actions[0] - change)
    assert set(data["task"][actions[0]:]) == {"open the drawer"}
    # action[t]: the row as played (the model's joint_delta space) and the command the arm received
    # at step t (the hold after each goal is no step).
    assert_allclose(data["action"], played[0] + played[1], atol=1e-6)
    assert data["names"] == [*JOINTS, "gripper"]  # one joint, one name: the state's (the node's: published_names)
    assert len(received_first) == actions[0] + 1 and len(received_second) == actions[1] + 1
    assert_allclose(data["published"], received_first[:-1] + received_second[:-1], atol=1e-6)
