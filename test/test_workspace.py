"""scripts/workspace.sh as a user with a second terminal meets it: a command finds nothing to rebuild
and starts at once, waits for a build in progress rather than racing it, and finds the package's
own commands on PATH."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "scripts" / "workspace.sh")
LOCK = ROOT / ".ws" / ".lock"

pytestmark = pytest.mark.skipif(not (ROOT / ".ws" / "install").is_dir(),
                                reason="no workspace build (.ws/install): run through scripts/workspace.sh")


def workspace(*args: str, timeout_s: float = 600.0) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=timeout_s)


def test_a_command_with_nothing_changed_does_not_rebuild():
    started = time.monotonic()
    ran = workspace("run", "true")
    took = time.monotonic() - started
    assert ran.returncode == 0, ran.stderr
    assert "colcon build" not in ran.stderr, "rebuilt with nothing changed"
    assert took < 5.0, f"{took:.1f}s to start a command with nothing to build"


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) not installed: no build lock")
def test_a_command_waits_for_a_build_in_progress_instead_of_racing_it():
    # Hold the workspace's lock, as a build in progress in another terminal does (in a process
    # group of its own, ended whole below).
    holder = subprocess.Popen(["flock", str(LOCK), "sh", "-c", "echo held; exec sleep 60"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        waiting = subprocess.Popen([SCRIPT, "run", "echo", "ran"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(3.0)  # it would be done in a fraction of that without the lock
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(5.0)
    out, err = waiting.communicate(timeout=120.0)
    assert waiting.returncode == 0, err
    assert out.strip() == "ran"


def test_sequence_ai_and_ros2_are_on_path_in_the_workspace():
    for command in ("sequence-ai", "seqai"):
        shown = workspace("run", command, "--help")
        assert shown.returncode == 0, shown.stderr
        assert "serve" in shown.stdout
    found = workspace("run", "sh", "-c", "command -v sequence-ai")
    assert found.stdout.strip() == os.path.join(ROOT, ".ws", "install", "sequence_ai_ros", "bin", "sequence-ai")


@pytest.mark.parametrize("outcome, status", [("pass", 0), ("fail", 1)])
def test_the_test_command_exits_with_the_suites_own_status(tmp_path, outcome, status):
    # `make test` is `workspace.sh test`: its status must be pytest's, whatever the helpers it
    # started beside the suite have done by then. A green run once exited 1: the scratch venvs were
    # made before the suite ended, and the trap that ends them failed to kill what was gone.
    suite = tmp_path / f"test_{outcome}.py"
    suite.write_text("def test_it():\n    assert %s\n" % ("True" if outcome == "pass" else "False"))
    ran = workspace("test", str(suite), "-n", "0", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path))
    assert ran.returncode == status, (ran.stdout[-1500:], ran.stderr[-1500:])


def _without_domain() -> dict:
    return {k: v for k, v in os.environ.items() if k != "ROS_DOMAIN_ID"}


def test_a_domain_picked_for_a_command_is_printed_and_one_given_is_not():
    picked = subprocess.run([SCRIPT, "run", "sh", "-c", "echo $ROS_DOMAIN_ID"], capture_output=True, text=True,
                            timeout=600, env=_without_domain())
    assert picked.returncode == 0, picked.stderr
    domain = picked.stdout.strip()
    assert f"ROS_DOMAIN_ID={domain} (picked for this command" in picked.stderr
    assert f"export ROS_DOMAIN_ID={domain}" in picked.stderr
    given = subprocess.run([SCRIPT, "run", "true"], capture_output=True, text=True, timeout=600,
                           env=dict(_without_domain(), ROS_DOMAIN_ID="42"))
    assert "picked for this command" not in given.stderr


@pytest.mark.ros
def test_a_goal_sent_where_no_server_answers_says_which_domain_it_is_on():
    """The real `ros2 action send_goal`, on a domain where nothing serves the action."""
    process = subprocess.Popen([SCRIPT, "run", "ros2", "action", "send_goal", "/nowhere/sequence_ai_policy/act",
                                "sequence_ai_ros/action/Act", "{instruction: 'x', max_seconds: 1.0, max_actions: 0}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_without_domain(),
                               start_new_session=True)
    try:
        assert process.stderr is not None
        lines = []
        for line in process.stderr:  # ends when the hint came, or at the bound below
            lines.append(line)
            if "no action server" in line:
                break
        picked = next(line for line in lines if "picked for this command" in line)
        domain = picked.split("ROS_DOMAIN_ID=")[1].split()[0]
        hint = lines[-1]
        assert "no action server /nowhere/sequence_ai_policy/act" in hint, "".join(lines)
        assert f"ROS_DOMAIN_ID={domain}" in hint
        assert process.poll() is None, "the command keeps waiting for its server, as ros2 does"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
