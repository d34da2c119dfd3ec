"""The model catalogue (GET /v1/models): what each model reads, returns and how fast.

`models()` is public and needs no key. One-shot calls (chat, decide, perceive) and the
observation helpers resolve a name through `lookup()`, which caches the catalogue once per
(base URL, key) for the life of the process — the catalogue changes on deploys, not per call.
"""

from __future__ import annotations

import threading
from typing import Dict, List, Optional, Tuple

from .._errors import InvalidArgument, InvalidArgumentType, InvalidRequest, SequencesError
from .._net._http import gateway_call, resolve_api_key, resolve_base_url
from .._wire import Model

__all__ = ["ENDPOINTS", "clear_cache", "find_model", "lookup", "models", "resolve_model"]

ENDPOINTS = ("act", "chat", "perceive", "decide")

_cache: Dict[Tuple[str, Optional[str]], List[Model]] = {}
_cache_lock = threading.Lock()


def _parse_catalogue(body: object) -> List[Model]:
    if not isinstance(body, dict):
        raise SequencesError("malformed /v1/models answer: not a JSON object")
    data = body.get("data") or []
    if not isinstance(data, list):
        raise SequencesError("malformed /v1/models answer: 'data' is not a list")
    return [Model.from_wire(row) for row in data]


def models(
    endpoint: Optional[str] = None,
    *,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    timeout_s: Optional[float] = 30.0,
) -> List[Model]:
    """Every catalogue row, optionally only those of one endpoint (act, chat, perceive, decide).

    A list, not a dict: key it yourself, e.g. ``{m.short_id: m for m in models("act")}``.
    The catalogue is public: no key is needed, but the key (`api_key=`, else
    $SEQUENCES_API_KEY) goes along whenever there is one, as in the reference client (a gateway
    may show a tenant rows of its own)."""
    if endpoint is not None and endpoint not in ENDPOINTS:
        raise InvalidArgument(f"endpoint must be one of {', '.join(ENDPOINTS)} (got {endpoint!r})")
    path = "/v1/models" + (f"?endpoint={endpoint}" if endpoint else "")
    base = resolve_base_url(base_url)
    body = gateway_call("GET", base, path, api_key=resolve_api_key(api_key, base), timeout_s=timeout_s)
    return _parse_catalogue(body)


def find_model(rows: List[Model], name: str) -> Optional[Model]:
    """The row whose full id is `name`, or whose short id is `name`'s last path segment."""
    if not isinstance(name, str) or not name:
        return None
    short = name.rstrip("/").rsplit("/", 1)[-1]
    for row in rows:
        if row.id == name:
            return row
    for row in rows:
        if row.short_id == short:
            return row
    return None


def lookup(
    name: str,
    *,
    endpoint: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    timeout_s: Optional[float] = 30.0,
) -> Model:
    """Resolve a short or full model name through the per-process catalogue cache.

    InvalidRequest (nothing billed) when the name is not in the catalogue or serves another
    endpoint than `endpoint`."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentType(f"model must be a non-empty model name or a Model (got {name!r})")
    base = resolve_base_url(base_url)
    cache_key = (base, resolve_api_key(api_key, base))
    with _cache_lock:
        rows = _cache.get(cache_key)
    if rows is None:
        rows = models(base_url=cache_key[0], api_key=cache_key[1], timeout_s=timeout_s)
        with _cache_lock:
            _cache[cache_key] = rows
    row = find_model(rows, name)
    if row is None:
        known = ", ".join(sorted(r.short_id for r in rows if not endpoint or r.endpoint == endpoint))
        raise InvalidRequest(f"model {name!r} is not in the catalogue (known: {known or 'none'})")
    if endpoint and row.endpoint != endpoint:
        raise InvalidRequest(
            f"model {row.short_id!r} serves endpoint {row.endpoint or 'unknown'!r}, not {endpoint!r}"
        )
    return row


def resolve_model(model: object, *, endpoint: Optional[str] = None, **kwargs: object) -> Model:
    """A `Model` as given, or a name looked up in the cached catalogue."""
    if isinstance(model, Model):
        if endpoint and model.endpoint and model.endpoint != endpoint:
            raise InvalidRequest(
                f"model {model.short_id!r} serves endpoint {model.endpoint!r}, not {endpoint!r}"
            )
        return model
    return lookup(model, endpoint=endpoint, **kwargs)  # type: ignore[arg-type]


def clear_cache() -> None:
    """Forget every cached catalogue (tests, or after a deploy)."""
    with _cache_lock:
        _cache.clear()
