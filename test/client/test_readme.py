"""The README's "From Python, without ROS" section, run as written: its shell lines (the pip
install left out: this environment has the extras) and then its Python block as `my_loop.py`.
Both blocks are read from README.md, so the test breaks when the README drifts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION = "## From Python, without ROS"


def _blocks(language: str):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def _environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQUENCES_")}  # a newcomer's shell
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return env


def test_readme_python_section_runs_as_written(tmp_path):
    shell, = _blocks("bash")
    program, = _blocks("python")
    (tmp_path / "my_loop.py").write_text(program)
    env = _environment()
    ran = []
    for line in shell.splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[:2] == ["pip", "install"]:
            continue
        if words[0] == "export":
            name, value = words[1].split("=", 1)
            env[name] = value
            continue
        command = [sys.executable, "-m", "sequence_ai", *words[1:]] if words[0] == "sequence-ai" else \
            [sys.executable, *words[1:]] if words[0] == "python" else words
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, f"`{line.strip()}` failed:\n{done.stdout}\n{done.stderr}"
        ran.append((words[:2], done.stdout))
    assert [w for w, _ in ran] == [["sequence-ai", "models"], ["sequence-ai", "doctor"], ["python", "my_loop.py"]]
    assert "pi05-droid" in ran[0][1] and ran[1][1].rstrip().endswith("ready")
    outcome = ran[2][1].strip().splitlines()[-1]
    assert re.fullmatch(r"RunOutcome\(60 actions over \d+ chunks in [\d.]+s, age p50 [\d.]+s, late p50 -?[\d.]+s, "
                        r"completed\)", outcome), outcome


def test_readme_names_only_what_the_client_has():
    program, = _blocks("python")
    import sequence_ai.sim

    for name in re.findall(r"robot\.(\w+)", program):
        assert hasattr(sequence_ai.sim.SimulatedArm, name), f"the README calls robot.{name}, which SimulatedArm lacks"
