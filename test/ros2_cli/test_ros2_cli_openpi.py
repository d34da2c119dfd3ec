"""The README's "An openpi server on another machine" section, run as a user would, with the real tools:
its bash block is read from README.md (so the test breaks when the README drifts) and each command runs
as written, with the user's names put in:

    gpu-box:8000   openpi's real WebsocketPolicyServer serving the stand-in (test/openpi/_openpi_server.py)
    $HOME/runs     a temp folder (my_arm.yaml and my-robot-runs: in the temp folder every command runs in)
    30.0 s         3.0 s, the goal ending on its time bound

my_arm.yaml is config/demo.yaml with `model: pi05_droid`; sim_robot started from it is the arm.

`sequence-ai export --format lerobot` runs where lerobot is installed (its scratch venv, .lerobot-venv/,
Python 3.12), and the dataset is loaded back with lerobot's own LeRobotDataset. Nothing of the Sequences
platform is in any command's environment: only the launch's policy_url names the server.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest
import yaml
from eventually import wait_until
from ros2_commands import GoalOutput, Ros2, status_ok
from scratch import ROOT, scratch_env, scratch_python

from sequence_ai_ros.tools.processes import config_path, ros2_cli, ros_environment

sys.path.insert(0, str(ROOT / "test" / "openpi"))
from _openpi_server import OpenpiServer

sys.path.pop(0)

pytest.importorskip("mcap", reason="needs the [record] extra")
from sequence_ai.recording import read_run

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.scratch, pytest.mark.timeout(2400)]  # may wait for venvs

SECTION = "## An openpi server on another machine"
POLICY = "/**/sequence_ai_policy"
READY_S = 90.0
GOAL_S = 3.0
LOAD = textwrap.dedent("""
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/dataset", root=sys.argv[1])
    frames = [dataset[i] for i in range(len(dataset))]
    print(json.dumps({
        "episodes": dataset.num_episodes, "fps": dataset.fps, "task": [f["task"] for f in frames],
        "episode": [int(f["episode_index"]) for f in frames],
        "images": sorted({(k, tuple(f[k].shape)) for f in frames for k in f if k.startswith("observation.images.")}),
    }))
""")


def readme_commands() -> List[List[str]]:
    """The section's bash block, one word list per command (continuation lines joined, comments dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no {SECTION!r} section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block, = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    lines = (shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines())
    return [words for words in lines if words]


def _put_in(words: List[str], names: dict) -> List[str]:
    out = []
    for word in words:
        for old, new in names.items():
            word = word.replace(old, new)
        out.append(word)
    return out


def _params_file(path: Path) -> None:
    """my_arm.yaml: the demo's arm and node, the model a shipped openpi card, input ages a loaded machine keeps."""
    document = yaml.safe_load(config_path("demo.yaml").read_text())
    params = document[POLICY]["ros__parameters"]
    params.update(model="pi05_droid", max_image_age_s=2.0, max_joint_state_age_s=2.0)
    assert "policy_url" not in params  # only the launch argument names the server
    path.write_text(yaml.safe_dump(document))


def test_the_readme_openpi_section_start_launch_goal_record_export(tmp_path):
    executable = ros2_cli()
    if executable is None:
        pytest.skip("ros2 CLI missing: no ../shared/ros2-cli-wheels installed by make setup and no system ros2 on PATH")
    sequence_ai = shutil.which("sequence-ai")
    assert sequence_ai, "sequence-ai is not on PATH (the workspace installs it with the ROS package)"
    lerobot = scratch_python("lerobot")  # before anything starts: may wait for `make test`'s install

    commands = readme_commands()
    # What the section asks, in order: the server, the robot's installs (this workspace has both), the key (no
    # proxy here), doctor, models, launch, goal, export.
    assert [w[:2] for w in commands] == [["uv", "run"], ["pip", "install"], ["pip", "install"],
                                         ["export", "OPENPI_API_KEY=..."], ["sequence-ai", "--base-url"],
                                         ["sequence-ai", "--base-url"], ["ros2", "launch"], ["ros2", "action"],
                                         ["sequence-ai", "export"]], commands
    doctor, models, launch, send_goal, export = commands[4:]
    params_path, runs, dataset = tmp_path / "my_arm.yaml", tmp_path / "runs", tmp_path / "my-robot-runs"
    _params_file(params_path)
    env = {k: v for k, v in ros_environment().items() if not k.startswith("SEQUENCES_")}
    ros2 = Ros2(executable, env)

    # the GPU machine's `serve_policy.py`: openpi's own server in front of the stand-in, at 100 ms a chunk
    with OpenpiServer("--latency-ms", "100", "--jitter", "0.2") as server:
        names = {"ws://gpu-box:8000": server.url, "$HOME/runs": str(runs), "max_seconds: 30.0": f"max_seconds: {GOAL_S}"}
        doctor, models, launch, send_goal, export = (_put_in(c, names) for c in (doctor, models, launch, send_goal,
                                                                                  export))
        assert f"max_seconds: {GOAL_S}" in send_goal[-2] and f"policy_url:={server.url}" in launch, (launch, send_goal)
        for words in (doctor, models):
            done = subprocess.run([sequence_ai, *words[1:]], env=env, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 0, f"{shlex.join(words)}:\n{done.stdout}\n{done.stderr}"
            if "doctor" in words:
                assert done.stdout.rstrip().endswith("ready") and "pi05_droid" in done.stdout, done.stdout
            else:
                assert "pi05_droid" in done.stdout, done.stdout

        try:
            diagnostics = ros2.start("topic", "echo", "/diagnostics", "diagnostic_msgs/msg/DiagnosticArray")
            launched = ros2.start(*launch[1:], cwd=str(tmp_path))
            ros2.start("run", "sequence_ai_ros", "sim_robot", "--ros-args", "--params-file", str(params_path))
            assert diagnostics.wait_for(lambda text: status_ok(text, ""), READY_S), \
                f"the node never reported ready with fresh inputs:\n{launched.text[-3000:]}"

            goal = ros2.start(*send_goal[1:], cwd=str(tmp_path))
            out = GoalOutput(goal.finish(60.0))
            assert out.status == "SUCCEEDED" and out.result["status"] == 2, goal.text[-3000:]  # STATUS_TIMEOUT
            outcome = out.result["outcome"]
            # the normal time-bounded ending, held; 3 s at the card's 15 Hz is 45 actions
            assert outcome["reason"] == "timeout" and outcome["held"] and outcome["actions"] >= 20, outcome
            assert outcome["final_instruction"] == "pick up the cup", outcome
            assert out.feedback and any(f and f.get("actions", 0) > 0 for f in out.feedback), goal.text[-3000:]
            assert {f.get("instruction") for f in out.feedback if f} == {"pick up the cup"}
        finally:
            ros2.stop_all()
            ros2.run("daemon", "stop", timeout_s=30.0)  # started by the first ros2 command here

    # The goal's recording, in record_dir (the launch argument), finished with the goal's ending.
    recording = Path(outcome["recording"])
    assert recording.parent == runs, outcome
    assert wait_until(lambda: read_run(recording).complete, 30.0, poll_s=0.2), "the recording was never finished"
    record = read_run(recording)
    assert (record.outcome.reason, record.outcome.actions) == ("timeout", outcome["actions"])

    # `sequence-ai export --format lerobot $HOME/runs my-robot-runs`, where lerobot is installed
    done = subprocess.run([lerobot, "-m", "sequence_ai", *export[1:]], capture_output=True, text=True,
                          env=scratch_env(), cwd=str(tmp_path), timeout=600)
    assert done.returncode == 0, f"{shlex.join(export)}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    loaded = subprocess.run([lerobot, "-c", LOAD, str(dataset)], capture_output=True, text=True, env=scratch_env(),
                            cwd=str(ROOT), timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    data = json.loads(loaded.stdout.splitlines()[-1])
    # One episode, one frame per action the goal played, at the card's 15 Hz, both views as the model got them.
    assert (data["episodes"], data["fps"]) == (1, 15)
    assert data["episode"] == [0] * outcome["actions"]
    assert set(data["task"]) == {"pick up the cup"}
    assert data["images"] == [["observation.images.exterior_1", [3, 224, 224]],
                              ["observation.images.wrist_left", [3, 224, 224]]]
