"""Our secrets never come back out of an upstream's words.

An error page that echoes the request — a proxy's, a debugging gateway's, a hostile worker's —
carries the Authorization header it was sent. Every transport knows the secret it sends, so it
cuts that secret out of everything it hands up (bodies, header values, its own error messages)
before any of it can become an exception's text, a `RunOutcome.message` or a log line. The raw
form is cut, and the forms an echo commonly takes: JSON-escaped, HTML-escaped, URL-quoted.
httpx and httpcore log upstream text themselves (a reason phrase at INFO, status lines and headers
in DEBUG traces), so their loggers get a filter that cuts the secrets of every live transport.
"""

from __future__ import annotations

import html
import json
import logging
import threading
import weakref
from typing import Iterable, Mapping, Optional, Tuple
from urllib.parse import quote

__all__ = ["REDACTED", "Redactor", "bearer_secret", "redact_library_logs"]

REDACTED = "[redacted]"
_SHORTEST = 4  # shorter "secrets" would cut ordinary words out of every message


def bearer_secret(headers: Optional[Mapping[str, str]]) -> Optional[str]:
    """The token of an `Authorization: Bearer …` header, if there is one."""
    for name, value in (headers or {}).items():
        if name.lower() == "authorization" and value.startswith("Bearer "):
            return value[len("Bearer "):] or None
    return None


class Redactor:
    """Cuts a fixed set of secrets (and their echoed forms) out of text and bytes."""

    __slots__ = ("__weakref__", "_bytes", "_texts")

    def __init__(self, secrets: Iterable[Optional[str]]):
        forms = set()
        for secret in secrets:
            if secret and len(secret) >= _SHORTEST:
                forms.update((secret, json.dumps(secret)[1:-1], html.escape(secret), quote(secret, safe="")))
        # longest first, so a form that contains another is cut whole
        self._texts: Tuple[str, ...] = tuple(sorted(forms, key=len, reverse=True))
        self._bytes: Tuple[bytes, ...] = tuple(form.encode("utf-8") for form in self._texts)

    def __bool__(self) -> bool:
        return bool(self._texts)

    def text(self, value: str) -> str:
        for form in self._texts:
            if form in value:
                value = value.replace(form, REDACTED)
        return value

    def data(self, value: bytes) -> bytes:
        for form in self._bytes:
            if form in value:
                value = value.replace(form, REDACTED.encode())
        return value


# Records are created (and filtered) only when the logger is enabled for their level: no cost
# unless the user turned httpx's or httpcore's logging on.
_LIBRARY_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy",
                    "httpcore.socks")


class _LogRedaction(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._installed = False

    def add(self, redactor: Redactor) -> None:
        with self._lock:
            if not self._installed:
                for name in _LIBRARY_LOGGERS:
                    logging.getLogger(name).addFilter(self)
                self._installed = True
            self._redactors.add(redactor)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            redactors = list(self._redactors)
        if redactors:
            text = cut = record.getMessage()
            for redactor in redactors:
                cut = redactor.text(cut)
            if cut != text:
                record.msg, record.args = cut, None
        return True


_log_redaction = _LogRedaction()


def redact_library_logs(redactor: Redactor) -> None:
    """Cut `redactor`'s secrets from httpx's and httpcore's log records while it is alive."""
    if redactor:
        _log_redaction.add(redactor)
