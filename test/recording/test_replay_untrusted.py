"""`sequence-ai replay` on recordings from elsewhere (they are shared between people, so untrusted):
decompression bombs, a flood of records, malformed and truncated files each end in one line naming
what was wrong, and exit 2 — under a memory limit, long before the time cap — never a traceback. A
real recording with a value no arm reads (1e308) replays; its plot leaves the value out and says so."""

from __future__ import annotations

import resource
import struct
import subprocess
import sys

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
from _crafted import chunk, command_bytes, command_channel, mcap_file, message, records, zeros_compressed
from _runs import scripted_run
from mcap.writer import MCAP0_MAGIC

from sequence_ai.recording import ReadLimits, Recorder, RecordingRefused, read_run

MEMORY = 1 << 30  # replay's address space here; a normal recording replays in well under 300 MiB
GIB = 1 << 30


def _replay(path, *args: str, memory: int = MEMORY) -> subprocess.CompletedProcess:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    # The timeout only stops a hang; what stopped the read is in the line (a cap, not the clock).
    return subprocess.run([sys.executable, "-m", "sequence_ai", "replay", str(path), *args], capture_output=True,
                          text=True, timeout=90, preexec_fn=limited if memory else None)


def _flood(count: int) -> bytes:
    """`count` Message records with nothing in them, on channel 1."""
    one = records(message(b""))
    return one * count


def _crafted(kind: str, tmp_path):
    path = tmp_path / f"{kind}.mcap"
    if kind == "zstd bomb":  # 2 GiB of zeros in ~64 KB, declared as such
        return mcap_file(path, [*command_channel(), chunk(b"", "zstd", zeros_compressed("zstd", 2 * GIB), 2 * GIB)])
    if kind == "zstd bomb lying about its size":
        return mcap_file(path, [*command_channel(), chunk(b"", "zstd", zeros_compressed("zstd", 2 * GIB), 1 << 20)])
    if kind == "lz4 bomb lying about its size":  # 1 GiB in ~4 MB (lz4 decompresses it whatever it declares)
        return mcap_file(path, [*command_channel(), chunk(b"", "lz4", zeros_compressed("lz4", GIB), 1 << 20)])
    if kind == "a flood of records":  # 2,100,000 records in one 65 MB chunk, ~60 KB compressed
        import zstandard

        inner = _flood(2_100_000)
        return mcap_file(path, [*command_channel(), chunk(inner, "zstd", zstandard.compress(inner))])
    if kind == "a message that is not its type":
        inner = records(message(b"\x00\x01\x00\x00\xff\xff\xff\x7f"))  # a string of 2 GiB announced
        return mcap_file(path, [*command_channel(), chunk(inner, "", inner)])
    if kind == "a message on a channel never declared":
        inner = records(message(command_bytes(), channel_id=7))
        return mcap_file(path, [*command_channel(), chunk(inner, "", inner)])
    if kind == "an unknown compression":
        inner = records(message(command_bytes()))
        return mcap_file(path, [*command_channel(), chunk(inner, "bz2", inner)])
    if kind == "a chunk whose records overrun it":
        inner = records(message(command_bytes()))[:-3]
        return mcap_file(path, [*command_channel(), chunk(inner, "", inner)])
    if kind == "cut inside the magic":
        path.write_bytes(MCAP0_MAGIC[:5])
        return path
    if kind == "cut inside its first record":
        whole = mcap_file(path, command_channel()).read_bytes()
        path.write_bytes(whole[:len(MCAP0_MAGIC) + 12])
        return path
    if kind == "a record claiming 3 GiB in a 1 KB file":
        whole = mcap_file(path, [], finished=False).read_bytes()
        path.write_bytes(whole + struct.pack("<BQ", 6, 3 * GIB) + bytes(1000))
        return path
    raise AssertionError(kind)


CASES = {  # kind -> what the one line says
    "zstd bomb": "declares 2,147,483,648 bytes decompressed, over the 64 MiB cap",
    "zstd bomb lying about its size": "decompresses to more than the 1,048,576 bytes it declares",
    "lz4 bomb lying about its size": "decompresses to more than the 1,048,576 bytes it declares",
    "a flood of records": "more than 2,000,000 records (the cap)",
    "a message that is not its type": "a /policy/command message that does not read as its type",
    "a message on a channel never declared": "a message on channel 7, which the file never declared",
    "an unknown compression": "compressed with 'bz2', which this reader does not know",
    "a chunk whose records overrun it": "a record that runs past the end of the chunk",
    "cut inside the magic": "no complete record in it (cut short at byte 5, inside the MCAP magic)",
    "cut inside its first record": "no complete record in it (cut short inside the record at byte 8)",
    "a record claiming 3 GiB in a 1 KB file": "no complete record in it (cut short inside the record at byte",
}


@pytest.mark.parametrize("kind", list(CASES))
def test_a_hostile_file_ends_in_one_line_and_exit_2_under_a_memory_limit(kind, tmp_path):
    path = _crafted(kind, tmp_path)
    done = _replay(path)
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), done.stderr[-2000:]
    assert CASES[kind] in lines[0]


def test_a_recording_with_values_no_arm_reads_replays_and_its_plot_leaves_them_out(tmp_path):
    """1e308 is what run() without validate= can hand a robot and record: the file is real, so it
    replays (the plot crashed in matplotlib on it), saying what it left out of the plot."""

    class Wild(Recorder):
        def command(self, row, **kwargs):  # the 7th action: values no joint reads
            super().command([1e308, -1e308] * 4 if self._actions == 6 else row, **kwargs)

    path = tmp_path / "wild.mcap"
    with Wild(path) as recorder:
        scripted_run(recorder)
    done = _replay(path, "--plot", str(tmp_path / "wild.png"), memory=0)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "8 values not finite or beyond ±1e+09 (the first: 1e+308, a command at" in done.stdout
    assert f"timeline: {tmp_path / 'wild.png'} (8 values left out: not finite or beyond ±1e+09)" in done.stdout
    assert (tmp_path / "wild.png").stat().st_size > 20_000


def test_the_reader_refuses_what_is_over_its_limits_and_reads_a_real_recording_within_them(recorded):
    path, sent, _ = recorded
    record = read_run(path)  # the defaults: a real recording is nowhere near them
    assert record.complete and len(record.commands) == len(sent.commands)
    with pytest.raises(RecordingRefused, match=r"more than 10 records \(the cap\)"):
        read_run(path, limits=ReadLimits(records=10))
    with pytest.raises(RecordingRefused, match=r"more than 1,024 bytes of messages to decode"):
        read_run(path, limits=ReadLimits(decoded_bytes=1 << 10))
    with pytest.raises(RecordingRefused, match=r"took longer than 0 s \(the cap\)"):
        read_run(path, limits=ReadLimits(seconds=0))
    with pytest.raises(RecordingRefused, match=str(path)):
        read_run(path, limits=ReadLimits(chunk_bytes=100))


@pytest.mark.parametrize("end", ["cut", "zeros"])
def test_a_file_whose_end_was_lost_still_replays_its_prefix(tmp_path, end):
    """The checks never cost a crash-cut file its prefix (test_recording_crash.py cuts at every
    byte), nor one whose end a machine that lost power left as zeros."""
    path = tmp_path / "run.mcap"
    with Recorder(path, chunk_size=2048) as recorder:
        scripted_run(recorder, chunks=6)
    whole = read_run(path)
    data = path.read_bytes()
    kept = len(data) // 3
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[:kept] if end == "cut" else data[:kept] + bytes(len(data) - kept))
    done = _replay(cut)
    assert done.returncode == 0 and "not finished by its writer" in done.stdout, done.stderr
    commands = read_run(cut).commands
    assert 0 < len(commands) < len(whole.commands) and commands == whole.commands[:len(commands)]

