"""Recording never holds up the control loop: a stalled or full disk costs camera frames (counted,
and reported in the file and the outcome), never a command, a request or the outcome."""

from __future__ import annotations

import base64
import errno
import os
import threading
import time

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")

from sequence_ai._loop._outcome import RunOutcome
from sequence_ai.recording import Recorder, read_run


class StallingDisk:
    """A real file whose writes block while the disk is stalled (a hung NFS mount, a full queue)."""

    def __init__(self, path, *, release_after_s: float = 10.0):
        self._file = open(path, "wb")  # noqa: SIM115 - closed by the recorder
        self._moving = threading.Event()
        self._moving.set()
        self.blocked = threading.Event()
        self._safety = threading.Timer(release_after_s, self._moving.set)  # never hang the suite
        self._safety.daemon = True

    def stall(self) -> None:
        self._moving.clear()
        self._safety.start()

    def move(self) -> None:
        self._moving.set()
        self._safety.cancel()

    def write(self, data) -> int:
        if not self._moving.is_set():
            self.blocked.set()
            self._moving.wait()
        return self._file.write(data)

    def tell(self) -> int:
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class FullDisk(StallingDisk):
    """A real file that runs out of space after `capacity` bytes."""

    def __init__(self, path, capacity: int):
        super().__init__(path)
        self._left = capacity

    def write(self, data) -> int:
        if len(data) > self._left:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._left -= len(data)
        return self._file.write(data)


def _observation(i: int, size: int = 15000) -> dict:
    frame = base64.b64encode(b"\xff\xd8\xff" + bytes([i % 256]) * size).decode()
    return {"images": [{"view": "exterior", "data": frame}, {"view": "wrist", "data": frame}],
            "proprioception": {"joint_positions": [float(i)] * 7}}


def test_a_stalled_disk_drops_frames_never_commands_and_never_blocks_the_caller(tmp_path):
    path = tmp_path / "stalled.mcap"
    disk = StallingDisk(path)
    budget = 200_000
    recorder = Recorder(stream=disk, max_pending_bytes=budget, flush_interval_s=0.05)
    recorder.run_started(model="pi05-droid", episode_id="stalled")
    disk.stall()
    assert disk.blocked.wait(10.0), "the writer thread never reached the disk"

    slowest = 0.0
    for i in range(200):
        rid = f"r-{i:08x}"
        started = time.perf_counter()
        recorder.observation(rid, _observation(i))
        recorder.request(rid, "pick", actions_at_submit=i)
        recorder.answer(rid, [[float(i)] * 8], sent_t=time.monotonic(), latency_s=0.1)
        recorder.command([float(i)] * 8, rid=rid, row_index=0)
        slowest = max(slowest, time.perf_counter() - started)
    frame_bytes = len(_observation(0)["images"][0]["data"])
    stats = recorder.stats()
    assert stats.frames_recorded + stats.frames_dropped == 400
    assert stats.frames_dropped > 0
    assert stats.frames_recorded <= budget // frame_bytes + 2, "the queue held more frames than its budget"
    assert slowest < 0.5, f"an event call waited {slowest:.3f}s on a stalled disk"
    recorder.outcome(RunOutcome(actions=200, chunks=200, elapsed_s=1.0, reason="completed"))
    disk.move()
    final = recorder.close(timeout_s=30.0)

    record = read_run(path)
    assert record.complete and record.damage is None
    assert [c.values[0] for c in record.commands] == [float(i) for i in range(200)], "a command was lost"
    assert len(record.requests) == 200 and len(record.answers) == 200
    assert sum(record.frame_counts.values()) == final.frames_recorded
    assert record.outcome.frames_dropped == final.frames_dropped == stats.frames_dropped
    assert record.outcome.frames_recorded == final.frames_recorded
    assert record.metadata["sequence_ai.recording"]["frames_dropped"] == str(final.frames_dropped)
    assert len(record.joint_states) == 200, "joint states are small: they are never dropped"


def test_the_default_budget_absorbs_a_burst_the_disk_catches_up_with(tmp_path):
    path = tmp_path / "ok.mcap"
    with Recorder(path) as recorder:  # 100 requests' frames at once: 3 MB, well inside 32 MiB
        for i in range(100):
            recorder.observation(f"r-{i}", _observation(i))
            recorder.command([float(i)], rid=f"r-{i}")
    assert recorder.stats().frames_dropped == 0
    assert sum(read_run(path).frame_counts.values()) == 200


def test_a_full_disk_is_reported_and_the_run_goes_on(tmp_path):
    path = tmp_path / "full.mcap"
    recorder = Recorder(stream=FullDisk(path, capacity=60_000), flush_interval_s=0.05, compression="none")
    recorder.run_started(model="pi05-droid")
    for i in range(20):
        recorder.observation(f"r-{i}", _observation(i, size=5000))
        recorder.command([float(i)], rid=f"r-{i}")
    recorder.outcome(RunOutcome(actions=20, chunks=20, elapsed_s=1.0, reason="completed"))
    stats = recorder.close(timeout_s=30.0)
    assert stats.error is not None and "No space left" in stats.error
    record = read_run(path)
    assert not record.complete
    n = len(record.commands)
    assert [c.values for c in record.commands] == [(float(i),) for i in range(n)]
