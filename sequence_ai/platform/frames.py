"""Frame dimensions from the image header, without decoding pixels.

The size check on every /act runs on each view, so it reads the JPEG SOF segment or the PNG IHDR
chunk (tens of bytes) instead of decoding the image: that keeps the worker's hot path in
microseconds. Pixels are decoded only when a plug-in policy asks for them; since nothing decodes
them up front, `holds_declared_pixels` is what stops a tiny file from declaring a huge image.
"""

from __future__ import annotations

import struct
from typing import Optional, Tuple

# The most pixels one compressed byte can stand for. Deflate never beats 1032:1 and a PNG pixel
# is at least 1 bit, so a PNG's IDAT bytes hold at most 8 * 1032 pixels each; a Huffman-coded JPEG
# spends at least one bit per MCU (at most 32x32 pixels), 8192 pixels a byte. A header that
# declares more is a lie, and believing it is how a 45-byte request asks for gigabytes.
MAX_PIXELS_PER_BYTE = 8 * 1032

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Start-of-frame markers that carry the dimensions (all SOFn except DHT C4, JPG C8, DAC CC).
_SOF_MARKERS = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def image_size(data: bytes) -> Optional[Tuple[int, int]]:
    """(width, height) of a JPEG or PNG, or None if the bytes are neither (or are cut short)."""
    if data.startswith(_PNG_MAGIC):
        return _png_size(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def payload_bytes(data: bytes) -> int:
    """The compressed bytes that carry the pixels: a PNG's IDAT chunks, all of a JPEG."""
    if not data.startswith(_PNG_MAGIC):
        return len(data)
    total, i = 0, len(_PNG_MAGIC)
    while i + 8 <= len(data):
        (length,) = struct.unpack(">I", data[i : i + 4])
        if data[i + 4 : i + 8] == b"IDAT":
            total += min(length, len(data) - i - 8)
        i += 12 + length
    return total


def holds_declared_pixels(data: bytes, size: Tuple[int, int]) -> bool:
    """Could these bytes hold an image of `size` (from its header)? False means the header lies."""
    return size[0] * size[1] <= payload_bytes(data) * MAX_PIXELS_PER_BYTE


def image_format(data: bytes) -> Optional[str]:
    if data.startswith(_PNG_MAGIC):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    return None


def _png_size(data: bytes) -> Optional[Tuple[int, int]]:
    if len(data) < 24 or data[12:16] != b"IHDR" or not data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82"):
        return None
    w, h = struct.unpack(">II", data[16:24])
    return (w, h) if w > 0 and h > 0 else None


def _jpeg_size(data: bytes) -> Optional[Tuple[int, int]]:
    # A JPEG cut short loses its end-of-image marker; checking it is free and catches truncation.
    if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        return None
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01,) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None
        if marker in _SOF_MARKERS:
            if i + 9 > n:
                return None
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return (w, h) if w > 0 and h > 0 else None
        if marker == 0xDA:  # start of scan before any SOF: not a valid JPEG
            return None
        i += 2 + length
    return None
