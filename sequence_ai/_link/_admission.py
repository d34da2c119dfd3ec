"""Admission: `POST /v1/act/connect` and what its answer means (docs/PROTOCOL.md §4.5, §6.3).

The answer's coordinates (worker URL, certificate pin, direct secret) and lease become a `Grant`;
nothing of the answer is ever echoed into an error message, because it carries the secret.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional
from urllib.parse import urlsplit

from .._errors import InvalidRequest, SequencesError

__all__ = ["Grant", "check_expect", "parse_grant", "renew_after_s"]


def renew_after_s(ttl_s: Optional[float]) -> Optional[float]:
    """Seconds after the answer at which the lease is renewed; None = never (§6.3)."""
    if not ttl_s or ttl_s <= 0:
        return None
    lead = min(30.0, max(1.0, 0.2 * ttl_s))
    return max(0.0, ttl_s - lead)


@dataclass(frozen=True)
class Grant:
    """A connect answer, checked: where the worker is, its certificate pin, the direct secret, the
    lease (ttl, epoch) and the contract the worker declares. Its repr never shows the secret."""

    worker_url: str
    cert_fingerprint: str
    direct_secret: str
    ttl_s: Optional[float]
    epoch: Any
    action: Optional[Dict[str, Any]]
    observation: Optional[Dict[str, Any]]
    embodiment: Optional[str]

    def __repr__(self) -> str:  # never show the secret
        return f"Grant(worker_url={self.worker_url!r}, epoch={self.epoch!r}, ttl_s={self.ttl_s!r})"


_TOKEN = re.compile(r"[!-~]+")  # visible ASCII: what fits a Bearer header, no line breaks


def _worker_url_ok(url: str) -> bool:
    """scheme://host[:port] that parses (whether it is https is the pin's business)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return bool(parts.scheme and parts.hostname) and (port is None or 0 < port < 65536)


def parse_grant(body: Any) -> Grant:
    if not isinstance(body, dict):
        raise SequencesError("malformed /v1/act/connect response")
    url, pin, secret = body.get("worker_url"), body.get("cert_fingerprint"), body.get("direct_secret")
    if not (isinstance(url, str) and url and isinstance(secret, str) and secret and pin is not None):
        raise SequencesError("malformed /v1/act/connect response")
    if not _worker_url_ok(url):
        raise SequencesError("malformed /v1/act/connect response: worker_url is not a URL")
    if not _TOKEN.fullmatch(secret):  # never quoted: it is the secret
        raise SequencesError("malformed /v1/act/connect response: direct_secret is not a bearer token")
    lease = body.get("lease") if isinstance(body.get("lease"), dict) else {}
    ttl = lease.get("ttl_s")
    ttl_s = float(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else None
    if ttl_s is not None and math.isnan(ttl_s):  # NaN would renew before every act
        ttl_s = None
    embodiment = body.get("embodiment")
    return Grant(
        worker_url=url.rstrip("/"),
        cert_fingerprint=pin,
        direct_secret=secret,
        ttl_s=ttl_s,
        epoch=lease.get("epoch"),
        action=body.get("action") if isinstance(body.get("action"), dict) else None,
        observation=body.get("observation") if isinstance(body.get("observation"), dict) else None,
        embodiment=embodiment if isinstance(embodiment, str) and embodiment else None,
    )


def check_expect(expect: Optional[Mapping[str, Any]], declared: Optional[Mapping[str, Any]]) -> None:
    """Refuse a worker whose declared action contract differs from what the caller expects."""
    if not expect:
        return
    if not declared:
        raise InvalidRequest("expect= was given but the worker declares no action contract", 400)
    wrong = []
    for key, expected in expect.items():
        want = expected.value if isinstance(expected, enum.Enum) else expected
        if str(declared.get(key)) != str(want):
            wrong.append(f"{key}: expected {want!r}, worker declares {declared.get(key)!r}")
    if wrong:
        raise InvalidRequest("worker action contract does not match expect=: " + "; ".join(wrong), 400)
