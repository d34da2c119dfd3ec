"""`sequence-ai replay`: each run's summary from its file alone (the default, no matplotlib needed),
several files or a folder with a total, the timeline with --plot; and the client without the
[record] extra."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")

from sequence_ai import cli
from sequence_ai.recording import read_run
from sequence_ai.recording.summary import summarize


def test_replay_prints_the_summary_and_with_plot_draws_the_timeline(recorded, capsys):
    path, sent, _ = recorded
    assert cli.main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "timeline" not in out and sorted(p.name for p in path.parent.iterdir()) == ["run.mcap"]
    assert f"{path}: complete" in out
    assert "model pi05-droid, episode ep-1, 15 Hz" in out
    assert "15 actions, 3 chunks from 3 requests" in out
    assert "request latency: p50 150 ms, p95 150 ms, max 150 ms" in out
    assert "held 0.17 s over 2 holds (interrupted, underrun)" in out
    assert "instruction at 0.00 s: 'pick up the red cube'" in out
    assert "instruction at 0.98 s: 'put it on the plate'" in out
    assert "frames: 6 recorded (exterior_image_1_left 3, wrist_image_left 3), 0 dropped" in out
    assert "outcome: interrupted, 15 actions over 3 chunks" in out and "1 underrun (0.10 s)" in out
    assert "/policy/command" in out and "sequence_ai_record/msg/Command" in out
    png = path.parent / "plots" / "run.png"
    assert cli.main(["replay", str(path), "--plot", str(png)]) == 0
    plotted = capsys.readouterr().out
    assert plotted.startswith(out) and plotted[len(out):] == f"timeline: {png}\n"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_the_summary_finds_seams_held_time_and_instruction_changes(recorded):
    path, sent, _ = recorded
    summary = summarize(read_run(path))
    commands = read_run(path).commands
    first_of = [next((c.t_ns - commands[0].t_ns) for c in commands if c.rid == rid) for rid in sent.rids]
    start_to_first = summary.seams_s[0] - first_of[1] / 1e9
    assert len(summary.seams_s) == 2
    assert [s - start_to_first for s in summary.seams_s] == pytest.approx([f / 1e9 for f in first_of[1:]])
    (begin, end, reason), (end_begin, end_end, end_reason) = summary.held
    assert reason == "underrun" and end - begin == pytest.approx(0.1 + 1 / 15)
    assert end == pytest.approx(summary.seams_s[1]), "the underrun hold lasts until the next chunk's first action"
    assert end_reason == "interrupted" and end_end == end_begin
    assert [text for _, text in summary.instruction_changes] == sent.instructions
    assert summary.latencies_s == pytest.approx((0.15,) * 3)


def test_replay_refuses_what_is_not_a_recording(tmp_path, capsys):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file at all")
    assert cli.main(["replay", str(junk)]) == 2
    assert capsys.readouterr().err == f"error: {junk}: not an MCAP file (its first bytes are not the MCAP magic)\n"
    assert cli.main(["replay", str(tmp_path / "missing.mcap")]) == 1
    assert "is not a file" in capsys.readouterr().err
    assert cli.main(["replay"]) == 2


def test_replay_of_a_folder_of_two_recordings_prints_a_summary_each_and_a_total(tmp_path, capsys):
    """What the README's `sequence-ai replay out/recordings/*.mcap` does once the folder holds two
    recordings (`make demo` and the three-terminal recipe both record there)."""
    from _runs import scripted_run

    from sequence_ai.recording import Recorder

    folder = tmp_path / "recordings"
    folder.mkdir()
    for name, reason in (("a.mcap", "completed"), ("b.mcap", "interrupted")):
        with Recorder(folder / name) as recorder:
            scripted_run(recorder, reason=reason)
    for args in ([str(folder)], [str(folder / "a.mcap"), str(folder / "b.mcap")]):
        assert cli.main(["replay", *args]) == 0
        out = capsys.readouterr().out
        first, second, total = out.split("\n\n")
        assert first.startswith(f"{folder / 'a.mcap'}: complete") and "outcome: completed, 15 actions" in first
        assert second.startswith(f"{folder / 'b.mcap'}: complete") and "outcome: interrupted, 15 actions" in second
        assert total.startswith("total: 2 recordings, 2 read: 30 actions, 6 chunks, ")
        assert total.endswith("; endings: completed 1, interrupted 1\n")
    (folder / "junk.mcap").write_bytes(b"not a recording")  # each file is read whatever the one before did
    assert cli.main(["replay", str(folder), "--plot", str(tmp_path / "plots")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {folder / 'junk.mcap'}: not an MCAP file (its first bytes are not the MCAP magic)\n"
    assert "total: 3 recordings, 2 read, 1 not: 30 actions" in captured.out
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["a-timeline.png", "b-timeline.png"]
    assert cli.main(["replay", str(tmp_path / "plots")]) == 1
    assert capsys.readouterr().err == f"error: no recordings (.mcap files) in {tmp_path / 'plots'}\n"
    (folder / "junk.mcap").unlink()
    (folder / "b.mcap").unlink()  # a folder of one: its summary and the total; --plot names a folder
    assert cli.main(["replay", str(folder), "--plot", str(tmp_path / "one")]) == 0
    assert re.search(r"\n\ntotal: 1 recording, 1 read: 15 actions, 3 chunks, [\d.]+ s; endings: completed 1\n$",
                     capsys.readouterr().out)
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["a-timeline.png"]


_WITHOUT_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # importing it fails, as where the [replay] extra is not installed
import sequence_ai.cli
code = sequence_ai.cli.main(["replay", *sys.argv[1:]])
print("exit", code)
"""


def test_the_summary_needs_no_matplotlib_and_plot_says_what_is_missing(recorded):
    path, _, _ = recorded
    alone = subprocess.run([sys.executable, "-c", _WITHOUT_MATPLOTLIB, str(path)], capture_output=True, text=True,
                           timeout=60)
    assert alone.returncode == 0 and alone.stderr == "", alone.stderr
    assert alone.stdout.startswith(f"{path}: complete\n") and alone.stdout.endswith("exit 0\n")
    assert "outcome: interrupted, 15 actions over 3 chunks" in alone.stdout
    plotted = subprocess.run([sys.executable, "-c", _WITHOUT_MATPLOTLIB, str(path), "--plot", str(path) + ".png"],
                             capture_output=True, text=True, timeout=60)
    assert plotted.stdout.startswith(f"{path}: complete\n") and plotted.stdout.endswith("exit 1\n")
    assert plotted.stderr == (f"error: no plot of {path}: the timeline plot needs matplotlib: pip install "
                              "'mcap>=1.6,<2' 'mcap-ros2-support>=0.6,<1' 'matplotlib>=3.5' (the [replay] extra)\n")
    assert cli.main(["replay", str(path), "--no-plot"]) == 0  # the old flag still runs: the summary is the default


_WITHOUT_MCAP = """
import sys
sys.modules["mcap"] = None  # as if the [record] extra were not installed
import sequence_ai, sequence_ai.cli
from sequence_ai.recording import Recorder
assert "mcap" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
try:
    Recorder(sys.argv[1])
except ImportError as exc:
    print("recorder:", exc)
print("replay exit", sequence_ai.cli.main(["replay", sys.argv[1]]))
"""


def test_the_client_works_without_the_record_extra(recorded):
    path, _, _ = recorded
    probe = subprocess.run([sys.executable, "-c", _WITHOUT_MCAP, str(path)], capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stderr
    hint = "pip install 'mcap>=1.6,<2' 'mcap-ros2-support>=0.6,<1' (the [record] extra)"
    assert "recorder: recording needs the MCAP packages" in probe.stdout and hint in probe.stdout
    assert "replay exit 1" in probe.stdout and hint in probe.stderr


def test_the_timeline_draws_displacement_rows_as_such_and_overlapping_joints_once(tmp_path):
    """Issue #39: a joint_delta run drawn as a sawtooth resetting at each seam, unlabelled (a
    reader saw jerks), and identical joints on top of each other (8 legend entries, 5 lines)."""
    matplotlib = pytest.importorskip("matplotlib", reason="needs the [replay] extra")
    from _runs import JOINTS, scripted_run

    from sequence_ai.recording import Recorder
    from sequence_ai.recording.timeline import timeline_figure

    class Alike(Recorder):  # joints 3 and 4 move exactly as joint 2 does
        def command(self, row, **kwargs):
            super().command([row[0], row[1], row[1], row[1], *row[4:]], **kwargs)

    path = tmp_path / "delta.mcap"
    with Alike(path) as recorder:
        scripted_run(recorder, space="joint_delta")
    record = read_run(path)
    figure = timeline_figure(record)
    try:
        top = figure.axes[0]
        lines = top.get_lines()
        assert [line.get_label() for line in lines] == [
            JOINTS[0], f"{JOINTS[1]} = {JOINTS[2]} = {JOINTS[3]} (one line)", *JOINTS[4:]]
        assert [text.get_text() for text in top.get_legend().get_texts()] == [line.get_label() for line in lines]
        assert "displacement" in top.get_ylabel() and "not positions" in top.get_legend().get_title().get_text()
        # one piece per chunk: a gap (NaN) where each of the two later chunks begins, and the rows as played
        drawn = list(lines[0].get_ydata())
        assert [i for i, v in enumerate(drawn) if v != v] == [5, 11]
        assert [v for v in drawn if v == v] == pytest.approx([c.values[0] for c in record.commands])
    finally:
        matplotlib.pyplot.close(figure)
    with Recorder(tmp_path / "absolute.mcap") as recorder:  # absolute targets: one unbroken line per joint
        scripted_run(recorder)
    figure = timeline_figure(read_run(tmp_path / "absolute.mcap"))
    try:
        assert len(figure.axes[0].get_lines()) == 8 and "displacement" not in figure.axes[0].get_ylabel()
        assert not any(v != v for v in figure.axes[0].get_lines()[0].get_ydata())
    finally:
        matplotlib.pyplot.close(figure)
