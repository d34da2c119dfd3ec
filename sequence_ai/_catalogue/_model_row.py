"""The catalogue row of one Policy's model: fetched once, on the act catalogue (docs/PROTOCOL.md §7.2).

`spec()` (the public `Policy.spec()`) fetches it or raises; `lookup()` is the send-time check's
view: the row, or None once a lookup failed (checking is then off), fetched on a background
thread so that an interrupt is honoured while the gateway is slow; `cached()` never fetches.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from .._errors import InvalidRequest, SequencesError
from .._link._fetch import Fetch
from .._waiting import Interrupted, Waiter
from .._wire import Model

__all__ = ["ModelRow"]


class ModelRow:
    def __init__(self, model: str, fetch_catalogue: Callable[[], Any], waiter: Waiter):
        self.model = model
        self._fetch_catalogue = fetch_catalogue  # -> the /v1/models?endpoint=act answer
        self._waiter = waiter
        self._lock = threading.Lock()
        self._row: Optional[Model] = None
        self._failed = False

    def _fetch(self) -> Model:
        from ._models import find_model

        answer = self._fetch_catalogue()
        data = answer.get("data") if isinstance(answer, dict) else None
        rows = [Model.from_wire(row) for row in (data or []) if isinstance(row, dict) and row.get("id")]
        row = find_model(rows, self.model)
        if row is None:
            raise InvalidRequest(f"model {self.model!r} is not in the act catalogue")
        return row

    def spec(self) -> Model:
        with self._lock:
            if self._row is None:
                self._row = self._fetch()
                self._failed = False
            return self._row

    def lookup(self) -> Optional[Model]:
        with self._lock:
            if self._row is None and not self._failed:
                fetch: Fetch = Fetch(lambda cancelled: self._fetch(), name="sequence-ai-catalogue",
                                     on_done=self._waiter.notify)
                try:
                    self._waiter.until(fetch.done)
                except Interrupted:
                    fetch.abandon()
                    raise
                try:
                    self._row = fetch.result()
                except SequencesError:
                    self._failed = True
            return self._row

    def cached(self) -> Optional[Model]:
        return self._row

    def layout(self) -> Optional[dict]:
        row = self._row
        return row.state_layout if row is not None else None
