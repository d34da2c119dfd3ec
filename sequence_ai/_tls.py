"""Certificate pinning for the worker (WIRE.md §6.2).

The worker is a bare `https://IP:PORT` with a self-signed certificate, so CA and hostname
verification are off; instead the SHA-256 of the peer certificate's DER bytes is compared with the
pin right after the handshake of every pooled connection. A mismatch closes the socket and raises
CertPinError. There is no fallback to CA trust, and no byte of a request is written on a
connection whose certificate has not been checked.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import ssl
from typing import Any, Iterable, Optional

import httpcore
import httpx

from ._errors import CertPinError

__all__ = ["certificate_fingerprint", "normalise_fingerprint", "pinned_client"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def normalise_fingerprint(fp: Any) -> str:
    """`AA:BB:…` or `aabb…` → 64 lower-case hex characters; CertPinError otherwise."""
    if not isinstance(fp, str):
        raise CertPinError("no cert fingerprint to pin")
    value = fp.strip().replace(":", "").replace(" ", "").lower()
    if not _HEX64.match(value):
        raise CertPinError("cert fingerprint is not a valid sha256 hex digest")
    return value


def certificate_fingerprint(der: bytes) -> str:
    """The pin of a DER certificate: lower-case hex SHA-256."""
    return hashlib.sha256(der).hexdigest()


def _unverified_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class _PinnedStream(httpcore.NetworkStream):
    """A socket stream that refuses to carry bytes until TLS is up and the pin matched."""

    def __init__(self, inner: httpcore.NetworkStream, pin: str):
        self._inner = inner
        self._pin = pin
        self._checked = False

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: Optional[str] = None,
                  timeout: Optional[float] = None) -> httpcore.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, timeout)
        ssl_object = tls.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(True) if ssl_object is not None else None
        if not der or not hmac.compare_digest(certificate_fingerprint(der), self._pin):
            tls.close()
            raise CertPinError("worker certificate does not match the pinned fingerprint")
        self._inner = tls
        self._checked = True
        return self

    def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        if not self._checked:  # plain http:// or a skipped handshake: fail closed
            self._inner.close()
            raise CertPinError("refusing to send to the worker without a pinned TLS connection")
        self._inner.write(buffer, timeout)

    def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def close(self) -> None:
        self._inner.close()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinningBackend(httpcore.NetworkBackend):
    def __init__(self, pin: str):
        self._pin = pin
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                    local_address: Optional[str] = None,
                    socket_options: Optional[Iterable[Any]] = None) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _PinnedStream(stream, self._pin)

    def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                            socket_options: Optional[Iterable[Any]] = None) -> httpcore.NetworkStream:
        raise CertPinError("the worker is only reachable over pinned TLS")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _PinnedTransport(httpx.HTTPTransport):
    def __init__(self, pin: str, limits: httpx.Limits):
        context = _unverified_context()
        super().__init__(verify=context, trust_env=False, limits=limits)
        # httpx builds its pool without a backend hook; swap in one whose streams check the pin.
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PinningBackend(pin),
        )


WORKER_LIMITS = httpx.Limits(max_connections=4, max_keepalive_connections=4, keepalive_expiry=300.0)


def pinned_client(base_url: str, fingerprint: str, *, headers: dict, timeout: Any,
                  limits: Optional[httpx.Limits] = None) -> httpx.Client:
    """An httpx client whose every connection is TLS pinned to `fingerprint` (checked first,
    before any socket is opened). Never follows proxies from the environment."""
    pin = normalise_fingerprint(fingerprint)
    if not str(base_url).lower().startswith("https://"):
        raise CertPinError("the worker URL is not https://; refusing to connect unpinned")
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        timeout=timeout,
        transport=_PinnedTransport(pin, limits or WORKER_LIMITS),
        trust_env=False,
    )
