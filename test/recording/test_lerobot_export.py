"""`sequence-ai export --format lerobot` with the real lerobot 0.6 (the scratch venv .lerobot-venv/,
Python 3.12): recordings written by the real Recorder, the dataset written by LeRobotDataset's own
writer and loaded back by LeRobotDataset. Bad input gets one line each; a second export appends
and never writes a run twice; --only-completed, --fps and --views; and the docs' example runs."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest
from numpy.testing import assert_allclose

pytest.importorskip("mcap", reason="needs the [record] extra")
from _runs import VIEWS, scripted_run
from scratch import ROOT, scratch_env, scratch_python

from sequence_ai.recording import Recorder, read_run

pytestmark = [pytest.mark.slow, pytest.mark.scratch, pytest.mark.timeout(2400)]  # the first may wait for the venv

LOAD = textwrap.dedent("""
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/dataset", root=sys.argv[1])
    frames = [dataset[i] for i in range(len(dataset))]
    print(json.dumps({
        "episodes": dataset.num_episodes, "fps": dataset.fps, "features": sorted(dataset.features),
        "episode": [int(f["episode_index"]) for f in frames], "task": [f["task"] for f in frames],
        "action": [f["action"].tolist() for f in frames], "state": [f["observation.state"].tolist() for f in frames],
        "images": {k: list(frames[0][k].shape) for k in frames[0] if k.startswith("observation.images.")},
    }))
""")


def _run(python: str, *args: str) -> Tuple[int, List[str], List[str]]:
    done = subprocess.run([python, *args], capture_output=True, text=True, env=scratch_env(), timeout=600,
                          cwd=str(ROOT))
    return done.returncode, done.stdout.splitlines(), [line for line in done.stderr.splitlines() if line.strip()]


def _export(python: str, *args: object) -> Tuple[int, List[str], List[str]]:
    return _run(python, "-m", "sequence_ai", "export", "--format", "lerobot", *(str(a) for a in args))


def _load(python: str, root: Path) -> dict:
    code, out, err = _run(python, "-c", LOAD, str(root))
    assert code == 0, "\n".join(err[-20:])
    return json.loads(out[-1])


def _recording(path: Path, **kwargs: object):
    with Recorder(path, chunk_size=2048) as recorder:
        return scripted_run(recorder, **kwargs)



@pytest.fixture(scope="module")
def python() -> str:
    return scratch_python("lerobot")


def test_bad_input_gets_one_line_each_and_a_second_export_appends_without_writing_a_run_twice(python, tmp_path):
    completed = _recording(tmp_path / "completed.mcap", reason="completed")
    _recording(tmp_path / "full.mcap")
    data = (tmp_path / "full.mcap").read_bytes()
    cut = tmp_path / "cut.mcap"
    for size in range(len(data) - 1, 0, -97):  # killed mid-run: the chunks before the cut are whole
        cut.write_bytes(data[:size])
        record = read_run(cut)
        if 0 < len(record.commands) < 15 and "sequence_ai.outcome" not in record.metadata:
            break
    (tmp_path / "notes.mcap").write_text("not a recording\n")
    dataset = tmp_path / "dataset"

    code, out, err = _export(python, tmp_path / "notes.mcap", cut, tmp_path / "completed.mcap", dataset)
    assert code == 1, err
    assert err[0] == (f"error: {tmp_path / 'notes.mcap'}: not a recording: not an MCAP file (its first bytes are not "
                      "the MCAP magic)")
    assert re.fullmatch(rf"warning: {re.escape(str(cut))} was cut short \(.+\): exporting the (\d+) frames it holds; "
                        r"(\d+) bytes after its last complete record could not be read, and the run's ending is not "
                        r"in it", err[1]), err
    assert int(re.search(r"exporting the (\d+) frames", err[1]).group(1)) == len(record.commands) and len(err) == 2
    cut_frames = len(record.commands)
    assert out[-1] == (f"2 episode(s), {cut_frames + 15} frames written to {dataset}; 0 skipped; not exported: "
                       "notes.mcap (not a recording)")

    # Again, with the completed run once more and a recording of a six-joint arm: appended, nothing twice.
    _recording(tmp_path / "six.mcap", joints=6)
    code, out, err = _export(python, tmp_path / "completed.mcap", tmp_path / "six.mcap", dataset)
    assert code == 1
    assert out[0] == f"skipped {tmp_path / 'completed.mcap'}: already in the dataset as episode 1"
    assert err == [f"error: {tmp_path / 'six.mcap'}: the dataset at {dataset} is of another robot's shape: "
                   f"observation.state is 8 (panda_joint1, panda_joint2, panda_joint3, panda_joint4, panda_joint5, "
                   f"panda_joint6, panda_joint7, gripper) there, 7 (panda_joint1, panda_joint2, panda_joint3, "
                   f"panda_joint4, panda_joint5, panda_joint6, gripper) here"]
    loaded = _load(python, dataset)
    assert loaded["episodes"] == 2 and loaded["episode"] == [0] * cut_frames + [1] * 15
    assert_allclose(loaded["action"][cut_frames:], [row for row, _, _ in completed.commands], atol=1e-6)
    assert loaded["images"] == {f"observation.images.{v}": [3, 48, 64] for v in VIEWS}
    kept = [json.loads(line) for line in (dataset / "meta" / "sequence_ai_episodes.jsonl").read_text().splitlines()]
    assert [(e["episode_index"], e["complete"], e["outcome"].get("reason", "")) for e in kept] == [
        (0, False, ""), (1, True, "completed")]


def test_only_completed_runs_at_another_fps_with_one_view(python, tmp_path):
    completed = _recording(tmp_path / "a.mcap", reason="completed")
    _recording(tmp_path / "b.mcap", reason="interrupted")
    dataset = tmp_path / "dataset"
    code, out, err = _export(python, tmp_path, dataset, "--only-completed", "--fps", 5, "--views", VIEWS[1])
    assert code == 0, err
    assert out[0] == f"skipped {tmp_path / 'b.mcap'}: the run ended interrupted (--only-completed)"  # the first pass
    assert out[1] == ("episode 0: a.mcap, 5 frames at 5 fps, ended completed, tasks: pick up the red cube | put it on "
                      "the plate")
    loaded = _load(python, dataset)
    assert (loaded["episodes"], loaded["fps"]) == (1, 5)
    assert list(loaded["images"]) == [f"observation.images.{VIEWS[1]}"]
    assert_allclose(loaded["action"], [row for row, _, _ in completed.commands[0::3]], atol=1e-6)


def test_the_docs_example_loads_an_export(python, tmp_path):
    _recording(tmp_path / "run.mcap", reason="completed")
    dataset = tmp_path / "my-robot-runs"
    assert _export(python, tmp_path / "run.mcap", dataset)[0] == 0
    text = (ROOT / "docs" / "RECORDING.md").read_text()
    example = text.split("## From runs to a training set", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(example.strip().splitlines()) <= 5, example
    code, out, err = _run(python, "-c", example.replace('"my-robot-runs"', repr(str(dataset))))
    assert code == 0, "\n".join(err[-20:])
    assert "15" in out[0] and "pick up the red cube" in "\n".join(out), out


def test_on_a_terminal_the_export_draws_one_progress_line_per_file_and_none_otherwise(python, tmp_path):
    import os
    import pty

    run = _recording(tmp_path / "a.mcap")
    frames = len(run.commands)
    master, terminal = pty.openpty()  # the export's stderr is a terminal, as a user's shell gives it
    with subprocess.Popen([python, "-m", "sequence_ai", "export", "--format", "lerobot", str(tmp_path / "a.mcap"),
                           str(tmp_path / "on_a_tty")], stdout=subprocess.PIPE, stderr=terminal, env=scratch_env(),
                          cwd=str(ROOT)) as child:
        os.close(terminal)
        drawn = b""
        while True:
            try:
                block = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not block:
                break
            drawn += block
        child.wait(timeout=600)
    os.close(master)
    assert child.returncode == 0, drawn.decode(errors="replace")[-2000:]
    text = drawn.decode(errors="replace")
    redraws = re.findall(r"\r\[export\] 1/1 a\.mcap \[[#.]{30}\] (\d+)/(\d+) frames", text)
    assert len(redraws) >= 2 and redraws[-1] == (str(frames), str(frames)), text[-2000:]
    assert [int(done) for done, _ in redraws] == sorted(int(done) for done, _ in redraws)  # it only moves on
    code, _, err = _export(python, tmp_path / "a.mcap", tmp_path / "not_a_tty")  # stderr a pipe: no bar in a log
    assert code == 0 and not any("[export]" in line and "frames" in line for line in err), err


TYPES = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/dataset", root=sys.argv[1])
    lines = (Path(sys.argv[1]) / "meta" / "sequence_ai_episodes.jsonl").read_text().splitlines()
    print(json.dumps({"names": {k: dataset.features[k]["names"] for k in
                                ("observation.state", "action", "action.joint_position")},
                      "episodes": dataset.num_episodes, "lines": [json.loads(line) for line in lines]}))
""")


def test_the_metadata_keeps_its_types_and_one_joint_has_one_name_read_back_beside_lerobot(python, tmp_path):
    """Issue #39: every outcome value was a string ("actions": "139", "held": "True"), and the
    gripper was `gripper` in the state but `fr3_finger_joint1` in action.joint_position."""
    _recording(tmp_path / "delta.mcap", reason="completed", space="joint_delta", published=True)
    dataset = tmp_path / "dataset"
    code, out, err = _export(python, tmp_path / "delta.mcap", dataset)
    assert code == 0, err
    code, out, err = _run(python, "-c", TYPES, str(dataset))
    assert code == 0, "\n".join(err[-20:])
    loaded = json.loads(out[-1])
    joints = [f"panda_joint{i}" for i in range(1, 8)] + ["gripper"]
    assert loaded["names"] == {"observation.state": joints, "action": joints, "action.joint_position": joints}
    [line] = loaded["lines"]
    assert line["published_names"] == [*joints[:7], "fr3_finger_joint1"]  # the node's own names, kept
    outcome = line["outcome"]
    assert (outcome["actions"], outcome["chunks"], outcome["underruns"], outcome["held"], outcome["stopped_early"],
            outcome["underrun_s"], outcome["reason"]) == (15, 3, 1, False, False, 0.1, "completed")
    assert all(not isinstance(v, str) for k, v in outcome.items()
               if k not in ("reason", "message", "action_space", "final_instruction")), outcome
    assert (line["frames"], line["complete"], line["control_hz"]) == (15, True, 15.0)


def test_on_an_older_python_the_export_says_why_first_and_the_command_it_gives_runs(python, tmp_path):
    """Issue #39: on Python 3.11 the export said to install the extra just installed; the reason
    (lerobot needs 3.12) was in parentheses. Now the reason comes first, and the command it gives
    for this checkout exports."""
    import shlex
    import sys

    if sys.version_info >= (3, 12):
        pytest.skip("this Python runs lerobot")
    _recording(tmp_path / "run.mcap", reason="completed")
    code, out, err = _run(sys.executable, "-m", "sequence_ai", "export", "--format", "lerobot",
                          str(tmp_path / "run.mcap"), str(tmp_path / "dataset"))
    assert code == 1 and out == [] and len(err) == 1, err
    assert err[0].startswith("error: export --format lerobot needs Python 3.12 or newer, and this is Python 3.11")
    given = shlex.split(err[0].split("In this checkout: ", 1)[1])
    assert given[0].startswith("PYTHONPATH=") and given[-2:] == ["RECORDING...", "OUT_DIR"], given
    env = dict(scratch_env(), PYTHONPATH=given[0].split("=", 1)[1])
    done = subprocess.run([*given[1:-2], str(tmp_path / "run.mcap"), str(tmp_path / "dataset")], env=env,
                          capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"1 episode(s), 15 frames written to {tmp_path / 'dataset'}; 0 skipped"
