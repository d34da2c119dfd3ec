"""Where recorded messages go: a bounded queue, drained into a chunked MCAP file by a thread of its own.

The thread that drives the robot only appends to the queue (no encoding, no I/O); the writer
thread runs under SCHED_BATCH like the client's refill threads, and hands the GIL back at least
every 0.5 ms while it works. Camera frames are the one thing that may be dropped: while the
frames already queued exceed `max_pending_bytes` (the disk cannot keep up), new frames are
counted and dropped. Everything else — requests,
chunks, commands, holds, the outcome — is always queued.

The file is written in MCAP chunks, and the chunk in progress is closed and flushed to the OS at
least every `flush_interval_s`, so a writer killed mid-run (SIGKILL, a crash) leaves a file that
reads back up to its last complete chunk: at most that interval is lost.

A write error (a full disk) stops the writing: it is handed to `on_error` once (or, without one,
logged at ERROR), the file (a RecordingFile) is cut back to its last whole record, and at close the
file is finished where it can still take it — the metadata (the error, the counts, the outcome)
then an MCAP footer — so a reader sees the run up to the error and why it stops there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import IO, Any, Callable, Deque, Dict, Mapping, Optional, Tuple

from .._extras import install_hint
from .._link._fetch import background_thread
from .._version import __version__
from .cdr import encoder_for
from .schemas import ros_name, schema_text

__all__ = ["RecordSink", "RecordingStats", "require_mcap"]

log = logging.getLogger("sequence_ai.recording")

# build(*args) -> [(topic, schema name, message dict, log time ns)] or ("metadata", name, {str: str})
Build = Callable[..., Any]
METADATA = "metadata"
STATS_METADATA = "sequence_ai.recording"
YIELD_AFTER_S = 0.0005  # the longest the writer holds the GIL in one go while it has work


def require_mcap() -> None:
    """ImportError naming the extra to install, when the MCAP packages are missing."""
    try:
        import mcap  # noqa: F401
        import mcap_ros2  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"recording needs the MCAP packages ({exc.name} is missing): "
                          f"{install_hint('record')}") from None


class _Skipped(Exception):
    """An event left out (already counted and logged)."""


def _metadata(name: str, values: Callable[[], Mapping[str, str]]) -> Tuple[str, str, Dict[str, str]]:
    """A metadata record, its values taken on the writer thread (counts as of then)."""
    return (METADATA, name, dict(values()))


@dataclass(frozen=True)
class RecordingStats:
    """What a recording kept: frames written and dropped, messages written, events left out
    because they could not be encoded, and the first write error (after which nothing more is
    written)."""

    frames_recorded: int
    frames_dropped: int
    messages: int
    skipped: int = 0
    error: Optional[str] = None


class RecordSink:
    """A background MCAP writer. `put` never blocks and never drops; `put_frames` drops when over budget."""

    def __init__(self, stream: IO[bytes], *, max_pending_bytes: int = 32 << 20, chunk_size: int = 1 << 20,
                 flush_interval_s: float = 1.0, compression: str = "zstd", close_stream: bool = True,
                 poll_s: float = 0.25, on_error: Optional[Callable[[str], None]] = None):
        require_mcap()
        from mcap.well_known import MessageEncoding, SchemaEncoding
        from mcap.writer import CompressionType, Writer

        kinds = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}
        if compression not in kinds:
            raise ValueError(f"compression must be one of {', '.join(kinds)}, not {compression!r}")
        if max_pending_bytes <= 0 or flush_interval_s <= 0:
            raise ValueError("max_pending_bytes and flush_interval_s must be > 0")
        self._stream, self._close_stream = stream, close_stream
        self._writer = Writer(stream, chunk_size=chunk_size, compression=kinds[compression])
        self._writer.start(profile="ros2", library=f"sequence-ai/{__version__}")
        self._schema_encoding, self._cdr = SchemaEncoding.ROS2, MessageEncoding.CDR
        self._encoders: Dict[str, Callable[[Any], bytes]] = {}  # schema name -> CDR encoder
        self._schema_ids: Dict[str, int] = {}
        self._channels: Dict[str, Tuple[int, Callable[[Any], bytes]]] = {}  # topic -> (channel id, encoder)
        self._queue: Deque[Tuple[Build, tuple, int]] = deque()  # (build, args, frame bytes)
        self._lock = threading.Lock()
        self._pending_bytes = 0
        self._max_pending_bytes = max_pending_bytes
        self._flush_interval_s, self._poll_s = flush_interval_s, poll_s
        self.frames_recorded = 0
        self.frames_dropped = 0
        self.messages = 0
        self.skipped = 0
        self.error: Optional[str] = None
        self._error_lock = threading.Lock()  # the first error is set once (the writer, or check_stream)
        self._on_error = on_error
        self._tail: Dict[str, Dict[str, str]] = {}  # metadata queued after a write error, for the file's end
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._drain_forever, name="sequence-ai-recorder", daemon=True)
        self._thread.start()

    # -- the producer side (any thread) ------------------------------------------------------

    def put(self, build: Build, *args: Any) -> None:
        """Queue a message that is never dropped (its encoding happens on the writer thread)."""
        self._queue.append((build, args, 0))

    def put_frames(self, build: Build, args: tuple, nbytes: int, count: int) -> bool:
        """Queue `count` camera frames of `nbytes`, or drop them (False) while the queue is over budget."""
        with self._lock:
            if self._pending_bytes + nbytes > self._max_pending_bytes and self._pending_bytes > 0:
                self.frames_dropped += count
                return False
            self._pending_bytes += nbytes
            self.frames_recorded += count
        self._queue.append((build, args, nbytes))
        return True

    def put_metadata(self, name: str, values: Callable[[], Mapping[str, str]]) -> None:
        """Queue a metadata record whose values are taken when it is written (also after a write
        error: the file's end then carries the latest of each name)."""
        self._queue.append((_metadata, (name, values), 0))

    def stats(self) -> RecordingStats:
        return RecordingStats(self.frames_recorded, self.frames_dropped, self.messages, self.skipped, self.error)

    def stats_strings(self) -> Dict[str, str]:
        """The `sequence_ai.recording` metadata: the counts and the first write error."""
        return {"frames_recorded": str(self.frames_recorded), "frames_dropped": str(self.frames_dropped),
                "messages": str(self.messages), "skipped": str(self.skipped), "error": self.error or ""}

    def check_stream(self) -> Optional[str]:
        """The error, after checking that the file is still there (a RecordingFile's `gone()`): one
        deleted or replaced while being written stops the recording with that as its error. Any
        thread; the writer checks at each flush."""
        gone = getattr(self._stream, "gone", None)
        why = gone() if gone is not None and self.error is None else None
        if why is not None:
            self._failed(FileNotFoundError(why), cut=False)
        return self.error

    def close(self, timeout_s: Optional[float] = None) -> RecordingStats:
        """Write everything queued, finish the file (summary and index) and close it."""
        self._closing.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("the recording was still writing after %.1fs; the file is left without its summary",
                        timeout_s or 0.0)
        return self.stats()

    @property
    def closed(self) -> bool:
        return self._closing.is_set()

    # -- the writer thread ---------------------------------------------------------------------

    def _drain_forever(self) -> None:
        background_thread()  # SCHED_BATCH: a woken writer never preempts the driving thread
        last_flush = time.monotonic()
        try:
            while True:
                closing = self._closing.wait(self._poll_s)
                self._drain()
                if time.monotonic() - last_flush >= self._flush_interval_s and self.error is None:
                    self._flush()
                    self.check_stream()
                    last_flush = time.monotonic()
                if closing and not self._queue:
                    break
        finally:
            self._finish()

    def _drain(self) -> None:
        queue = self._queue
        worked_since = time.perf_counter()
        while queue:
            build, args, nbytes = queue.popleft()
            try:
                if self.error is None:
                    self._write(self._encoded(build, args))
                elif build is _metadata:
                    _, name, values = build(*args)
                    self._tail[name] = values
            except _Skipped:
                pass
            except Exception as exc:  # a full disk, a closed stream: keep draining, report it
                self._failed(exc)
            finally:
                if nbytes:
                    with self._lock:
                        self._pending_bytes -= nbytes
            if time.perf_counter() - worked_since > YIELD_AFTER_S:
                # Hand the GIL over: a driving thread woken for its tick takes it now instead of
                # waiting for this burst to end (or for the interpreter's 5 ms switch interval).
                time.sleep(0)
                worked_since = time.perf_counter()

    def _encoded(self, build: Build, args: tuple) -> Any:
        """The event as metadata or as [(channel id, CDR bytes, log ns)]. An event that cannot be
        built or encoded (a frame that is not base64, a value of the wrong type) is skipped and
        counted: one bad event never costs the rest of the recording."""
        try:
            built = build(*args)
            if built and built[0] == METADATA:
                return built
            encoded = []
            for topic, schema_name, message, log_ns in built:
                channel_id, encode = self._channels.get(topic) or self._open_channel(topic, schema_name)
                encoded.append((channel_id, encode(message), log_ns))
            return encoded
        except Exception as exc:
            self.skipped += 1
            if self.skipped == 1:
                log.error("a recorded event could not be encoded and was left out (%s: %s)", type(exc).__name__, exc)
            raise _Skipped() from None

    def _write(self, encoded: Any) -> None:
        if encoded and encoded[0] == METADATA:
            self._writer.add_metadata(encoded[1], encoded[2])
            return
        for channel_id, data, log_ns in encoded:
            self._writer.add_message(channel_id, log_time=log_ns, data=data, publish_time=log_ns)
            self.messages += 1

    def _open_channel(self, topic: str, schema_name: str) -> Tuple[int, Callable[[Any], bytes]]:
        if schema_name not in self._encoders:
            self._schema_ids[schema_name] = self._writer.register_schema(
                ros_name(schema_name), self._schema_encoding, schema_text(schema_name).encode())
            self._encoders[schema_name] = encoder_for(schema_name)
        channel_id = self._writer.register_channel(topic, self._cdr, self._schema_ids[schema_name])
        channel = self._channels[topic] = (channel_id, self._encoders[schema_name])
        return channel

    def _flush(self) -> None:
        try:
            self._writer.flush()  # close the chunk in progress and hand it to the OS
        except Exception as exc:
            self._failed(exc)

    def _finish(self) -> None:
        try:
            if self.error is None:
                before = getattr(self._stream, "whole", None)  # a failed finish is cut back to here
                try:
                    self._writer.finish()
                    self._stream.flush()
                except Exception as exc:
                    self._failed(exc, cut_to=before)
            if self.error is not None:
                self._write_tail()
        finally:
            if self._close_stream:
                try:
                    self._stream.close()
                except Exception:
                    pass

    def _failed(self, exc: Exception, cut_to: Optional[int] = None, cut: bool = True) -> None:
        """The first write error: nothing more is written but the file's end (at close). `cut`
        False: the file is not cut back (check_stream, from any thread: the file is gone anyway)."""
        with self._error_lock:
            if self.error is not None:
                return
            self.error = f"{type(exc).__name__}: {exc}"
        if cut:
            self._cut_back(cut_to)
        if self._on_error is None:
            log.error("recording stopped writing: %s; the file keeps what was written before", self.error)
            return
        try:
            self._on_error(self.error)  # the owner says it, in its own log
        except Exception:
            log.exception("recording stopped writing (%s), and its on_error failed", self.error)

    def _cut_back(self, offset: Optional[int] = None) -> None:
        """Drop a torn write from the file (only a RecordingFile can; a caller's stream is left)."""
        cut_to = getattr(self._stream, "cut_to", None)
        if cut_to is not None:
            try:
                cut_to(offset)
            except OSError:
                pass

    def _write_tail(self) -> None:
        """After a write error: the metadata (the error, the counts, the outcome if it came), then a
        footer, where the file can still take them; else the file stays cut at its last whole record."""
        if getattr(self._stream, "cut_to", None) is None:
            return
        from mcap.data_stream import RecordBuilder
        from mcap.records import DataEnd, Footer, Metadata
        from mcap.writer import MCAP0_MAGIC

        builder = RecordBuilder()
        for name, values in {**self._tail, STATS_METADATA: self.stats_strings()}.items():
            Metadata(name=name, metadata=values).write(builder)
        DataEnd(data_section_crc=0).write(builder)  # 0: not computed (the torn write was in it)
        Footer(summary_start=0, summary_offset_start=0, summary_crc=0).write(builder)
        try:
            self._stream.write(builder.end() + MCAP0_MAGIC)
        except OSError:
            self._cut_back()

