"""`sequence-ai replay run.mcap`: the run's summary and its timeline, from the file alone; and the
client without the [record] extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")

from sequence_ai import cli
from sequence_ai.recording import read_run
from sequence_ai.recording.summary import summarize


def test_replay_prints_the_summary_and_writes_the_timeline(recorded, capsys):
    path, sent, _ = recorded
    assert cli.main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}: complete" in out
    assert "model pi05-droid, episode ep-1, 15 Hz" in out
    assert "15 actions, 3 chunks from 3 requests" in out
    assert "request latency: p50 150 ms, p95 150 ms, max 150 ms" in out
    assert "held 0.17 s over 2 holds (interrupted, underrun)" in out
    assert "instruction at 0.00 s: 'pick up the red cube'" in out
    assert "instruction at 0.98 s: 'put it on the plate'" in out
    assert "frames: 6 recorded (exterior_image_1_left 3, wrist_image_left 3), 0 dropped" in out
    assert "outcome: interrupted, 15 actions over 3 chunks" in out and "1 underruns (0.10 s)" in out
    assert "/policy/command" in out and "sequence_ai_record/msg/Command" in out
    png = path.with_name("run-timeline.png")
    assert f"timeline: {png}" in out
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
print("replay exit", sequence_ai.cli.main(["replay", sys.argv[1], "--no-plot"]))
"""


def test_the_client_works_without_the_record_extra(recorded):
    path, _, _ = recorded
    probe = subprocess.run([sys.executable, "-c", _WITHOUT_MCAP, str(path)], capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert "recorder: recording needs the MCAP packages" in probe.stdout and "sequence-ai[record]" in probe.stdout
    assert "replay exit 1" in probe.stdout and "sequence-ai[record]" in probe.stderr
