"""An MCAP file's records, front to back, within caps: a recording from elsewhere is untrusted input.

Recordings are shared between people, and mcap's own reader trusts the file: it decompresses a
whole chunk at the size the chunk claims (a 131 KB file asked for 4 GB) and parses every record
before handing one over. Here every number the file states is checked before it is acted on:

* a record longer than what is left of the file is where the file was cut (a writer that
  died): `CutShort`, and what came before stands — as at zeros where a record should start and
  at a chunk that does not decompress or fails its CRC (what a machine that lost power leaves);
* a record, or a chunk decompressed, over `chunk_bytes`, a chunk that decompresses to anything
  but the size it declares, a record that runs past its chunk or has opcode 0 inside it, an unknown compression,
  and the caps of ReadLimits over the whole file (bytes decompressed, records, seconds; the
  reader adds the bytes it decodes): `RecordingRefused`, naming what and where;
* a chunk's records are counted (their headers only) before any of them is parsed, so a chunk
  of a million tiny records is refused in well under a second, with nothing decoded.
"""

from __future__ import annotations

import io
import struct
import time
import zlib
from dataclasses import dataclass
from typing import IO, Any, Iterator, List

__all__ = ["CutShort", "ReadLimits", "RecordingRefused", "records"]

MAGIC = b"\x89MCAP0\r\n"
_HEAD = struct.Struct("<BQ")  # opcode, length
_TIME_EVERY = 4096  # records between two looks at the clock
_TOP_LEVEL = {1: "Header", 2: "Footer", 3: "Schema", 4: "Channel", 5: "Message", 6: "Chunk", 12: "Metadata",
              15: "DataEnd"}  # the ones read; the indexes, statistics and attachments are skipped


@dataclass(frozen=True)
class ReadLimits:
    """What reading one recording may take (docs/RECORDING.md says why these numbers)."""

    chunk_bytes: int = 64 << 20  # one record, or one chunk decompressed (the writer's chunks: ~1 MiB)
    decompressed_bytes: int = 8 << 30  # every chunk of the file, decompressed
    records: int = 2_000_000  # records in the file, the chunks' contents included
    message_bytes: int = 4 << 20  # one decoded message (camera frames are kept as bytes, not decoded)
    decoded_bytes: int = 512 << 20  # every message decoded (all but the camera frames)
    seconds: float = 300.0  # reading the file


class RecordingRefused(ValueError):
    """The file is not a recording this reader will read: malformed, or over one of its ReadLimits
    (the message says which, and where)."""


class CutShort(Exception):
    """The readable file stops here: cut inside a record (a writer that died), zeros where a record
    should start, or a chunk that does not decompress or fails its CRC (a machine that lost power)."""


class Budget:
    """What the file has used of its ReadLimits so far."""

    def __init__(self, limits: ReadLimits):
        self.limits = limits
        self.records = self.decompressed = self.decoded = 0
        self._deadline = time.monotonic() + limits.seconds

    def count(self, n: int = 1) -> None:
        self.records += n
        if self.records > self.limits.records:
            raise RecordingRefused(f"more than {self.limits.records:,} records (the cap)")

    def in_time(self) -> None:
        if time.monotonic() > self._deadline:
            raise RecordingRefused(f"reading it took longer than {self.limits.seconds:g} s (the cap), "
                                   f"{self.records:,} records in")

    def decode(self, nbytes: int, what: str) -> None:
        """Before a message of `nbytes` is decoded."""
        if nbytes > self.limits.message_bytes:
            raise RecordingRefused(f"a {what} message of {nbytes:,} bytes, over the {_size(self.limits.message_bytes)} "
                                   "cap for one message")
        self.decoded += nbytes
        if self.decoded > self.limits.decoded_bytes:
            raise RecordingRefused(f"more than {_size(self.limits.decoded_bytes)} of messages to decode (the cap)")


def records(stream: IO[bytes], size: int, budget: Budget) -> Iterator[Any]:
    """The file's Schema, Channel, Message, Metadata and Footer records (mcap.records), in order;
    `size` is the file's length. Raises RecordingRefused or CutShort (after what came before)."""
    from mcap.records import DataEnd

    magic = stream.read(len(MAGIC))
    if magic != MAGIC:
        if MAGIC.startswith(magic):
            raise CutShort(f"cut short at byte {len(magic)}, inside the MCAP magic")
        raise RecordingRefused("not an MCAP file (its first bytes are not the MCAP magic)")
    offset, crc = len(MAGIC), zlib.crc32(magic)
    while True:
        budget.count()
        budget.in_time()
        head = stream.read(_HEAD.size)
        if len(head) < _HEAD.size:
            raise CutShort(f"cut short at byte {offset}, before its footer")
        opcode, length = _HEAD.unpack(head)
        if length > size - offset - _HEAD.size:
            raise CutShort(f"cut short inside the record at byte {offset}")
        if opcode == 0:  # zeros: what a machine that lost power may leave where the file's end was
            raise CutShort(f"zeros where a record should start, at byte {offset}")
        if length > budget.limits.chunk_bytes:
            raise RecordingRefused(f"a record of {length:,} bytes at byte {offset}, over the "
                                   f"{_size(budget.limits.chunk_bytes)} cap")
        body = stream.read(length)
        if len(body) < length:
            raise CutShort(f"cut short inside the record at byte {offset}")
        kind = _TOP_LEVEL.get(opcode)
        record = _parse(kind, body, offset) if kind else None
        if isinstance(record, DataEnd) and record.data_section_crc not in (0, crc):
            raise CutShort(f"the data section fails its CRC (at byte {offset})")
        crc = zlib.crc32(body, zlib.crc32(head, crc))
        if kind == "Chunk":
            yield from _chunk_records(record, offset, budget)
        elif kind not in (None, "Header", "DataEnd"):
            yield record
        if kind == "Footer":
            return
        offset += _HEAD.size + length


def _parse(kind: str, body: bytes, offset: int) -> Any:
    """One record from its body (all of it there); anything a writer never makes is refused."""
    from mcap import records as r
    from mcap.data_stream import ReadDataStream

    data = ReadDataStream(io.BytesIO(body))
    try:
        return r.Message.read(data, len(body)) if kind == "Message" else getattr(r, kind).read(data)
    except Exception as exc:
        raise RecordingRefused(f"a malformed {kind} record at byte {offset} ({_why(exc)})") from None


def _chunk_records(chunk: Any, offset: int, budget: Budget) -> Iterator[Any]:
    limits = budget.limits
    declared = chunk.uncompressed_size
    if declared > limits.chunk_bytes:
        raise RecordingRefused(f"a chunk at byte {offset} that declares {declared:,} bytes decompressed, over the "
                               f"{_size(limits.chunk_bytes)} cap")
    budget.decompressed += declared
    if budget.decompressed > limits.decompressed_bytes:
        raise RecordingRefused(f"more than {_size(limits.decompressed_bytes)} decompressed (the cap)")
    data = _decompressed(chunk, declared, offset)
    if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
        raise CutShort(f"the chunk at byte {offset} fails its CRC")
    budget.count(_count_records(data, offset, budget))  # before anything in it is parsed
    position, count = 0, 0
    while position < len(data):
        opcode, length = _HEAD.unpack_from(data, position)
        body = data[position + _HEAD.size:position + _HEAD.size + length]
        kind = {3: "Schema", 4: "Channel", 5: "Message"}.get(opcode)  # what a chunk may hold; others skipped
        if kind:
            yield _parse(kind, body, offset)
        position += _HEAD.size + length
        count += 1
        if count % _TIME_EVERY == 0:
            budget.in_time()  # the caller decodes between two records


def _count_records(data: bytes, offset: int, budget: Budget) -> int:
    """How many records the decompressed chunk holds, every header checked against its bounds."""
    position, count, end = 0, 0, len(data)
    while position < end:
        if end - position < _HEAD.size:
            raise RecordingRefused(f"a record cut inside the chunk at byte {offset}")
        opcode, length = _HEAD.unpack_from(data, position)
        if opcode == 0:
            raise RecordingRefused(f"a record with opcode 0 inside the chunk at byte {offset}")
        position += _HEAD.size + length
        if position > end:
            raise RecordingRefused(f"a record that runs past the end of the chunk at byte {offset}")
        count += 1
        if count % _TIME_EVERY == 0:
            if budget.records + count > budget.limits.records:
                budget.count(count)  # refuses: no need to count the rest
            budget.in_time()
    return count


def _decompressed(chunk: Any, declared: int, offset: int) -> bytes:
    """The chunk's records, never more than `declared` + 1 bytes produced whatever the data says."""
    try:
        if chunk.compression == "zstd":
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(chunk.data, read_across_frames=True) as reader:
                data = _read_at_most(reader.read, declared + 1)
        elif chunk.compression == "lz4":
            import lz4.frame

            data = _lz4_at_most(lz4.frame.LZ4FrameDecompressor(), chunk.data, declared + 1)
        elif chunk.compression == "":
            data = chunk.data
        else:
            raise RecordingRefused(f"a chunk at byte {offset} compressed with {chunk.compression!r}, which this "
                                   "reader does not know")
    except RecordingRefused:
        raise
    except Exception as exc:  # the decompressors' own errors: damaged data, as a lost machine leaves it
        raise CutShort(f"the chunk at byte {offset} does not decompress ({_why(exc)})") from None
    if len(data) != declared:
        more = "more than" if len(data) > declared else f"{len(data):,} bytes, not"
        raise RecordingRefused(f"a chunk at byte {offset} that decompresses to {more} the {declared:,} bytes it declares")
    return data


def _read_at_most(read: Any, most: int) -> bytes:
    pieces: List[bytes] = []
    got = 0
    while got < most:
        piece = read(min(most - got, 1 << 20))
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


def _lz4_at_most(decompressor: Any, data: bytes, most: int) -> bytes:
    pieces: List[bytes] = []
    got = 0
    while got < most and not decompressor.eof:
        piece = decompressor.decompress(data, max_length=min(most - got, 1 << 20))
        data = b""
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _size(nbytes: int) -> str:
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):g} GiB"
    return f"{nbytes / (1 << 20):g} MiB" if nbytes >= 1 << 20 else f"{nbytes:,} bytes"
