"""Which account keys the gateway accepts.

Keys come from `--api-key`, from `SEQUENCES_LOCAL_KEYS` (comma-separated), or one `seq_test_…` key
generated at start. Comparison is constant-time so a probe cannot learn a key byte by byte.
"""

from __future__ import annotations

import hmac
import os
import secrets
from typing import Iterable, List, Optional

ENV_KEYS = "SEQUENCES_LOCAL_KEYS"


def generate_key() -> str:
    return "seq_test_" + secrets.token_hex(16)


class KeyStore:
    def __init__(self, keys: Iterable[str]):
        self._keys: List[str] = [k for k in keys if k]
        if not self._keys:
            raise ValueError("a keystore needs at least one key")

    @classmethod
    def from_sources(cls, api_key: Optional[str] = None) -> KeyStore:
        keys = [api_key] if api_key else []
        keys += [k.strip() for k in os.environ.get(ENV_KEYS, "").split(",") if k.strip()]
        return cls(keys or [generate_key()])

    @property
    def primary(self) -> str:
        """The key printed for SEQUENCES_API_KEY."""
        return self._keys[0]

    def accepts(self, authorization: Optional[str]) -> bool:
        """Is this `Authorization` header value `Bearer <a known key>`?"""
        if not authorization or not authorization.startswith("Bearer "):
            return False
        offered = authorization[len("Bearer "):].strip().encode()
        # No early exit: every key is compared so timing does not say which one was close.
        found = False
        for key in self._keys:
            found |= hmac.compare_digest(offered, key.encode())
        return found
