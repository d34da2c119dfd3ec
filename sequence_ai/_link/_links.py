"""The link a Policy talks through, chosen once, from the URL (`open_link`).

    ws://host:port, wss://…   an openpi policy server (`OpenpiLink`): one websocket, a model card
    anything else             the Sequences platform (`SequencesLink`): gateway, pinned worker, telemetry

Both give the Policy the same five things, and nothing above them asks which one it has:

    worker              the connection the refills send through (`WorkerConnection` or `OpenpiConnection`)
    telemetry           where served/failed reports go (`TelemetrySender`; an openpi server takes none)
    catalogue()         the act catalogue answer the model's row is found in (the gateway's, or the card's)
    ready_answer(model) the /v1/act/ready answer (for openpi: is the server accepting connections)
    close()             every connection, after the refills stopped
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

from .._cards import Card, load_card
from .._net._http import gateway_call, gateway_client, require_api_key, resolve_base_url, telemetry_client
from ._openpi import OpenpiConnection
from ._telemetry import TelemetrySender
from ._worker import WorkerConnection

__all__ = ["OPENPI_KEY_VARIABLE", "OpenpiLink", "SequencesLink", "is_openpi_url", "open_link"]

OPENPI_KEY_VARIABLE = "OPENPI_API_KEY"  # never SEQUENCES_API_KEY: that key goes to the gateway only


def is_openpi_url(base_url: Optional[str]) -> bool:
    return isinstance(base_url, str) and base_url.lower().startswith(("ws://", "wss://"))


class SequencesLink:
    def __init__(self, *, model: str, base_url: str, api_key: str, timeout_s: float, embodiment: Optional[str],
                 expect: Optional[Mapping[str, Any]]):
        self.base_url = base_url
        self._timeout_s = timeout_s
        self.gateway = gateway_client(base_url, api_key, timeout_s)
        self.telemetry = TelemetrySender(telemetry_client(base_url, api_key, min(timeout_s, 10.0)))
        self.worker: Any = WorkerConnection(gateway=self.gateway, base_url=base_url, model=model,
                                            timeout_s=timeout_s, embodiment=embodiment, expect=expect)

    def _get(self, path: str) -> Any:
        return gateway_call("GET", self.base_url, path, api_key=None, timeout_s=self._timeout_s, client=self.gateway)

    def catalogue(self) -> Any:
        return self._get("/v1/models?endpoint=act")

    def ready_answer(self, model: str) -> Any:
        return self._get(f"/v1/act/ready?model={model}")

    def close(self) -> None:
        self.worker.close()
        self.telemetry.close()
        self.gateway.close()


class _NoTelemetry:
    """An openpi server has no report endpoint: reports are dropped here."""

    def submit(self, report: Dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class OpenpiLink:
    def __init__(self, *, model: str, base_url: str, card: Card, api_key: Optional[str], timeout_s: float):
        self.base_url = base_url
        self.card = card
        self._model = model
        self._timeout_s = timeout_s
        self.telemetry: Any = _NoTelemetry()
        self.worker: Any = OpenpiConnection(url=base_url, card=card, model=model, timeout_s=timeout_s,
                                            api_key=api_key)

    def catalogue(self) -> Any:
        return {"object": "list", "data": [dict(self.card.row(self._model).raw)]}

    def ready_answer(self, model: str) -> Any:
        if self.worker.ready(self._timeout_s):
            return {"ready": True, "status": "ready"}
        return {"ready": False, "status": "loading", "eta_s": None}

    def close(self) -> None:
        self.worker.close()


def open_link(model: str, *, api_key: Optional[str], base_url: Optional[str], timeout_s: float,
              embodiment: Optional[str] = None, expect: Optional[Mapping[str, Any]] = None) -> Any:
    """The one place a Policy's link is chosen. Sends nothing: a Sequences key is required here
    (AuthError before any I/O); an openpi server's key, if it wants one, is `api_key=` or $OPENPI_API_KEY."""
    base_url = resolve_base_url(base_url)  # first: "mock" starts the local platform, whose key needs none
    if is_openpi_url(base_url):
        return OpenpiLink(model=model, base_url=base_url, card=load_card(model), timeout_s=timeout_s,
                          api_key=api_key or os.environ.get(OPENPI_KEY_VARIABLE) or None)
    return SequencesLink(model=model, base_url=base_url, api_key=require_api_key(api_key, base_url),
                         timeout_s=timeout_s, embodiment=embodiment, expect=expect)
