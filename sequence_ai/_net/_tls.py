"""Certificate pinning for the worker (docs/PROTOCOL.md §6.2).

The worker is a bare `https://IP:PORT` with a self-signed certificate, so CA and hostname
verification are off; instead the SHA-256 of the peer certificate's DER bytes is compared with the
pin right after the handshake of every pooled connection. A mismatch closes the socket and raises
CertPinError. There is no fallback to CA trust, and no byte of a request is written on a
connection whose certificate has not been checked. The pinned client itself is
`_http11.PinnedClient` (made by `_http11.pinned_client`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from .._errors import CertPinError

__all__ = ["certificate_fingerprint", "normalise_fingerprint"]

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

