"""Hostile MCAP files, built record by record: what a recording shared from elsewhere may be."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable, List

from mcap.data_stream import RecordBuilder
from mcap.records import Channel, Chunk, DataEnd, Footer, Header, Message, Schema
from mcap.writer import MCAP0_MAGIC

from sequence_ai.recording import messages as m
from sequence_ai.recording.cdr import encoder_for
from sequence_ai.recording.schemas import ros_name, schema_text

COMMAND = "sequence_ai_record/Command"


def command_bytes(values=(0.0,) * 8) -> bytes:
    """One /policy/command message's CDR, as the recorder writes it."""
    [(_, _, message, _)] = m.command(1_000_000_000, values, "r-1", 0, 1)
    return encoder_for(COMMAND)(message)


def records(*items) -> bytes:
    builder = RecordBuilder()
    for item in items:
        item.write(builder)
    return builder.end()


def command_channel(channel_id: int = 1) -> List:
    return [Schema(id=1, name=ros_name(COMMAND), encoding="ros2msg", data=schema_text(COMMAND).encode()),
            Channel(id=channel_id, topic=m.TOPICS["command"], message_encoding="cdr", schema_id=1, metadata={})]


def message(data: bytes, channel_id: int = 1, t: int = 1_000_000_000) -> Message:
    return Message(channel_id=channel_id, sequence=0, log_time=t, publish_time=t, data=data)


def chunk(inner: bytes, compression: str, compressed: bytes, declared: int = -1) -> Chunk:
    """A chunk record of `compressed` data, declaring `declared` bytes (default: the truth)."""
    return Chunk(compression=compression, data=compressed, message_start_time=0, message_end_time=0,
                 uncompressed_crc=zlib.crc32(inner) if inner else 0,
                 uncompressed_size=len(inner) if declared < 0 else declared)


def mcap_file(path: Path, body: Iterable, *, finished: bool = True) -> Path:
    data = MCAP0_MAGIC + records(Header(profile="ros2", library="crafted"), *body)
    if finished:
        data += records(DataEnd(data_section_crc=0), Footer(summary_start=0, summary_offset_start=0,
                                                           summary_crc=0)) + MCAP0_MAGIC
    path.write_bytes(data)
    return path


def zeros_compressed(compression: str, nbytes: int) -> bytes:
    """`nbytes` of zeros compressed without ever holding them (a decompression bomb's payload)."""
    block = bytes(1 << 20)
    if compression == "zstd":
        import zstandard

        compressor = zstandard.ZstdCompressor(level=3).compressobj()
        out = [compressor.compress(block) for _ in range(nbytes >> 20)]
        return b"".join(out) + compressor.flush()
    import lz4.frame

    compressor = lz4.frame.LZ4FrameCompressor()
    out = [compressor.begin()] + [compressor.compress(block) for _ in range(nbytes >> 20)]
    return b"".join(out) + compressor.flush()


def black_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of `width`×`height` black pixels, compressed a row at a time: a 9000×9000
    one is ~240 KB and never held decoded here (what a decoder would need: width × height × 3)."""
    import struct

    def part(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    compressor = zlib.compressobj(9)
    rows = bytes((1 + 3 * width) * 64)  # 64 rows: filter byte 0, then each row's pixels
    idat = b"".join(compressor.compress(rows) for _ in range(height // 64))
    idat += compressor.compress(bytes((1 + 3 * width) * (height % 64))) + compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + part(b"IDAT", idat) + part(b"IEND", b""))
