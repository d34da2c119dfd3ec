"""One HTTP/1.1 answer off a socket: framing, the caps, and the request's deadline.

What it reads is what the two servers speak: answers framed by `Content-Length`, by
`Transfer-Encoding: chunked` or by the server closing; interim `1xx` answers are skipped. Every
read takes the time left of the whole request as its timeout, so an answer trickled a few bytes at
a time ends at the deadline like one that never comes; every size is capped (`_limits.py`) before
it is buffered. Failures are the seam's transport errors (`_transport.py`).
"""

from __future__ import annotations

import re
import select
import socket
import ssl
import time
from typing import Optional, Tuple

from ._limits import HEADER_BLOCK_LIMIT_BYTES, INTERIM_ANSWERS_LIMIT, LINE_LIMIT_BYTES
from ._transport import Answer, AnswerTooLarge, ConnectionLost, Headers, TransportTimeout

__all__ = ["Connection", "read_answer", "time_left"]

_HEX = re.compile(r"[0-9A-Fa-f]+")
_STATUS = re.compile(r"[1-5][0-9][0-9]")
_LENGTH = re.compile(r"[0-9]{1,18}")
_RECV = 64 * 1024  # under malloc's mmap threshold: no map and unmap syscalls per read


def time_left(deadline: Optional[float], peer: str) -> Optional[float]:
    """Seconds until `deadline` (None: no deadline); TransportTimeout once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TransportTimeout(f"{peer} did not answer in time")
    return left


class Connection:
    """One socket (TLS or plain), the bytes read past the last answer, who is at the other end
    (for messages: "the worker", "the gateway") and the deadline of the request in progress."""

    __slots__ = ("deadline", "peer", "pending", "received", "shut", "sock")

    def __init__(self, sock: socket.socket, peer: str):
        self.sock = sock
        self.peer = peer
        self.pending = b""
        self.received = 0  # bytes read for the request in progress
        self.deadline: Optional[float] = None  # time.monotonic() by which the request must be done
        self.shut = False  # shut down by the client's close() while a request was using it

    def time_left(self) -> Optional[float]:
        return time_left(self.deadline, self.peer)

    def reusable(self) -> bool:
        """An idle kept-alive socket is fit for the next request unless the server closed it (or
        sent something unasked): then it reads as ready."""
        if self.pending or (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def shutdown(self) -> None:
        """Wake a thread blocked reading this socket (close() alone does not), then close."""
        self.shut = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _recv(connection: Connection) -> bytes:
    left = connection.time_left()
    try:
        if left is not None:
            connection.sock.settimeout(left)
        data = connection.sock.recv(_RECV)
    except socket.timeout:
        raise TransportTimeout(f"{connection.peer} did not answer in time") from None
    except (OSError, ssl.SSLError, ValueError) as exc:  # ValueError: a socket closed by close()
        raise ConnectionLost(f"reading from {connection.peer} failed: {exc}") from None
    connection.received += len(data)
    return data


def _more(connection: Connection, buffer: bytearray, where: str) -> None:
    data = _recv(connection)
    if not data:
        raise ConnectionLost(f"{connection.peer} disconnected {where}")
    buffer += data


def read_answer(connection: Connection, method: str, limit: int) -> Tuple[Answer, bool]:
    """One answer off the connection (interim 1xx answers skipped), and whether it stays open.
    `limit`: the largest body accepted."""
    buffer = bytearray(connection.pending)
    connection.pending = b""
    interim = 0
    while True:
        end = buffer.find(b"\r\n\r\n", 0, HEADER_BLOCK_LIMIT_BYTES + 4)
        while end < 0:
            if len(buffer) > HEADER_BLOCK_LIMIT_BYTES:
                raise AnswerTooLarge(f"{connection.peer}'s answer headers are too large")
            _more(connection, buffer, "without sending an answer")
            end = buffer.find(b"\r\n\r\n", 0, HEADER_BLOCK_LIMIT_BYTES + 4)
        status, version, headers = _parse_head(bytes(buffer[:end]), connection.peer)
        del buffer[:end + 4]
        if not (100 <= status < 200 and status != 101):
            break
        interim += 1
        if interim > INTERIM_ANSWERS_LIMIT:
            raise AnswerTooLarge(f"{connection.peer} sent {interim} interim answers and no answer")
    closing = version == "HTTP/1.0" or "close" in headers.get("connection", "").lower()
    to_close = False
    if method == "HEAD" or status in (204, 304):
        body = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body = _read_chunked(connection, buffer, limit)
    elif "content-length" in headers:
        text = headers["content-length"]
        if not _LENGTH.fullmatch(text):
            raise ConnectionLost(f"{connection.peer} sent a malformed Content-Length")
        length = int(text)
        if length > limit:
            raise AnswerTooLarge(f"{connection.peer}'s answer is {length} bytes, above the {limit}-byte cap")
        while len(buffer) < length:
            _more(connection, buffer, "in the middle of an answer")
        body = bytes(buffer[:length])
        del buffer[:length]
    else:  # neither: the body runs until the server closes
        while True:
            data = _recv(connection)
            if not data:
                break
            buffer += data
            if len(buffer) > limit:
                raise AnswerTooLarge(f"{connection.peer}'s answer is above the {limit}-byte cap")
        body, to_close = bytes(buffer), True
        buffer = bytearray()
    connection.pending = bytes(buffer)
    return Answer(status, headers, body), not (closing or to_close)


def _parse_head(head: bytes, peer: str) -> Tuple[int, str, Headers]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not _STATUS.fullmatch(parts[1]):
        raise ConnectionLost(f"{peer}'s answer has no valid status line")
    headers = Headers()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ConnectionLost(f"{peer} sent a malformed header line")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{dict.__getitem__(headers, key)}, {value}" if dict.__contains__(headers, key) else value
    return int(parts[1]), parts[0], headers


def _take_line(connection: Connection, buffer: bytearray, where: str, limit: int) -> bytes:
    """The next CRLF-terminated line off `buffer` (reading more as needed), without the CRLF;
    AnswerTooLarge past `limit` bytes."""
    end = buffer.find(b"\r\n", 0, limit + 2)
    while end < 0:
        if len(buffer) > limit:
            raise AnswerTooLarge(f"{connection.peer} sent a line longer than {limit} bytes {where}")
        _more(connection, buffer, where)
        end = buffer.find(b"\r\n", 0, limit + 2)
    line = bytes(buffer[:end])
    del buffer[:end + 2]
    return line


def _read_chunked(connection: Connection, buffer: bytearray, limit: int) -> bytes:
    body = bytearray()
    where = "in the middle of a chunked answer"
    while True:
        size_text = _take_line(connection, buffer, where, LINE_LIMIT_BYTES)
        size_text = size_text.split(b";", 1)[0].strip().decode("latin-1")
        if not _HEX.fullmatch(size_text) or len(size_text) > 16:
            raise ConnectionLost(f"{connection.peer} sent a malformed chunk size")
        size = int(size_text, 16)
        if size == 0:
            trailers = HEADER_BLOCK_LIMIT_BYTES  # the trailer block shares the header block's cap
            while True:
                line = _take_line(connection, buffer, "in a chunked answer's trailer", trailers)
                if not line:
                    return bytes(body)
                trailers -= len(line) + 2
                if trailers <= 0:
                    raise AnswerTooLarge(f"{connection.peer}'s chunked answer has too many trailers")
        if len(body) + size > limit:
            raise AnswerTooLarge(f"{connection.peer}'s answer is above the {limit}-byte cap")
        while len(buffer) < size + 2:
            _more(connection, buffer, where)
        body += buffer[:size]
        del buffer[:size + 2]
