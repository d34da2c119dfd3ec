"""A recording whose writer died — SIGKILL, or a file cut at any byte — still reads back up to
its last complete chunk, and says it was not finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from eventually import wait_until

pytest.importorskip("mcap", reason="needs the [record] extra")
from _runs import scripted_run
from mcap.stream_reader import StreamReader

from sequence_ai import cli
from sequence_ai.recording import Recorder, read_run

HERE = Path(__file__).resolve().parent



def test_a_writer_killed_with_sigkill_leaves_a_file_readable_to_its_last_chunk(tmp_path, capsys):
    path = tmp_path / "killed.mcap"
    writer = subprocess.Popen([sys.executable, str(HERE / "_writer_to_kill.py"), str(path), "0.1"])
    try:
        # Event-driven: kill once the file on disk already holds 100 commands in complete chunks.
        assert wait_until(lambda: path.exists() and len(read_run(path).commands) >= 100, 30.0), \
            "the writer never flushed 100 commands"
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(10)
    assert writer.returncode == -signal.SIGKILL

    record = read_run(path)
    assert not record.complete, "a killed writer cannot have written the footer"
    assert record.outcome is None
    n = len(record.commands)
    assert n >= 100
    # a prefix of what was recorded: nothing missing in the middle, every value intact
    assert [c.action_index for c in record.commands] == list(range(1, n + 1))
    assert all(c.values == (float(i), i / 2, -float(i)) for i, c in enumerate(record.commands, start=1))
    assert record.run is not None and record.run.episode_id == "killed"
    assert sum(record.frame_counts.values()) >= n // 10

    # mcap's own sequential reader agrees, up to where the file stops
    with open(path, "rb") as stream:
        seen = 0
        try:
            for item in StreamReader(stream, validate_crcs=True).records:
                seen += type(item).__name__ == "Message"
        except Exception:
            pass
    assert seen == sum(count for _, count in record.topics.values())

    assert cli.main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not finished by its writer" in out and f"{n} actions" in out


def test_a_file_cut_at_any_byte_reads_a_prefix_of_the_run(tmp_path):
    whole = tmp_path / "whole.mcap"
    # small chunks and uncompressed, so cuts land inside and between many chunks
    with Recorder(whole, chunk_size=2048, compression="none") as recorder:
        sent = scripted_run(recorder, chunks=12, rows=10)
    data = whole.read_bytes()
    cut = tmp_path / "cut.mcap"
    previous, counts = -1, set()
    for size in range(0, len(data), max(1, len(data) // 150)):
        cut.write_bytes(data[:size])
        record = read_run(cut)
        assert not record.complete
        n = len(record.commands)
        assert [(list(c.values), c.rid, c.row_index) for c in record.commands] == sent.commands[:n]
        assert n >= previous, "a longer prefix of the file never reads fewer commands"
        previous = n
        counts.add(n)
    assert min(counts) == 0 and len(counts) >= 5, f"cuts should land between many chunks: {sorted(counts)}"
    complete = read_run(whole)
    assert complete.complete and len(complete.commands) == len(sent.commands)
