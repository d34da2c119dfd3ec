"""`sequence-ai doctor --base-url ws://host:port`: what matters in front of an openpi policy server.

    key          $OPENPI_API_KEY (redacted), or none: only a proxy in front of the server asks for one
    card         the model card the contract comes from (a shipped card's name, or a card file)
    server       accepting connections (a server loading its checkpoint refuses them: waited out, --wait)
    healthz      GET /healthz, which openpi's server answers 200
    metadata     the frame the server sends first, checked against the card (action_dim)
    predict      two real round trips with a blank observation of the card's shape: the answer's width
                 checked against the card, the first's and the second's latency, the server's infer_ms

It goes through the same `OpenpiConnection` a Policy uses, so it refuses what a run would refuse. The
predict runs the policy once or twice: a self-hosted server bills nobody.
"""

from __future__ import annotations

import base64
import io
import os
import time
from typing import Any, Optional, TextIO

import httpx

from ._cards import CardError, load_card
from ._doctor import _ms, _Report, _timed, one_line
from ._errors import SequencesError
from ._link._act_request import ActTrace
from ._link._links import OPENPI_KEY_VARIABLE
from ._link._openpi import OpenpiConnection, api_key_header
from ._net._http import redact_key
from ._net._websocket import ServerNotUp
from ._version import __version__
from ._warming import WarmWait, pause_within

__all__ = ["openpi_doctor"]

CONNECT_TIMEOUT_S = 10.0
PREDICT_TIMEOUT_S = 120.0  # a checkpoint's first inference compiles: a minute is not unusual
POLL_S = 2.0
NOT_UP_HINT = ("hint: openpi's server listens only once its checkpoint is loaded; start it (README, \"An openpi "
               "server on another machine\") or give doctor longer (--wait S).")


def _healthz_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{'https' if scheme.lower() == 'wss' else 'http'}://{rest.split('/', 1)[0]}/healthz"


def _blank_observation(card: Any) -> dict:
    """An observation on the wire of the card's shape: black frames at its wire size, zero state."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", card.image_size).save(buffer, format="PNG")
    frame = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"images": [{"view": view, "data": frame, "timestamp_ms": None} for view, _ in card.views],
            "proprioception": {part: [0.0] * width for part, _, width in card.state},
            "instruction": "sequence-ai doctor"}


def openpi_doctor(url: str, model: str, wait_s: float, out: TextIO) -> int:
    report = _Report(out)
    print(f"sequence-ai {__version__}", file=out)
    print(f"openpi      {url}", file=out)
    print(file=out)
    key = os.environ.get(OPENPI_KEY_VARIABLE) or None
    report.line("key", f"{OPENPI_KEY_VARIABLE}  ({redact_key(key)})" if key else
                f"none ({OPENPI_KEY_VARIABLE} unset: only a proxy in front of the server would ask for one)")
    try:
        card = load_card(model)
    except CardError as exc:
        report.line("card", f"REFUSED — {one_line(exc.message, 300)}", problem=True)
        report.line("server", "not checked: without a card there is no contract to check it against")
        card = None
    if card is not None:
        views = ", ".join(view for view, _ in card.views)
        report.line("card", f"{card.name}: {card.action_dim}-wide {card.action_space} at {card.control_hz:g} Hz, "
                            f"{card.action_horizon} rows (plays {card.open_loop_horizon}), views {views}")
        connection = OpenpiConnection(url=url, card=card, model=model, timeout_s=PREDICT_TIMEOUT_S, api_key=key)
        try:
            if _server(connection, url, wait_s, report):
                _healthz(url, key, report)
                _metadata(connection, report)
                _predict(connection, card, report)
        finally:
            connection.close()
    print(file=out)
    print("ready" if report.problems == 0 else f"{report.problems} problem(s) above", file=out)
    return 0 if report.problems == 0 else 1


def _server(connection: OpenpiConnection, url: str, wait_s: float, report: _Report) -> bool:
    """Open the connection (the handshake and the metadata), waiting while nothing listens."""
    def attempt(left_s: float) -> float:
        elapsed, up = _timed(lambda: connection.ready(min(CONNECT_TIMEOUT_S, left_s)))
        if not up:
            raise ServerNotUp(f"nothing accepts connections at {url}", 503, warming=True, retry_after_s=POLL_S)
        return elapsed

    def progress(waited: float, eta: Optional[float]) -> None:
        report.line("warming", f"nothing accepts connections at {url} yet, {waited:.0f}s waited (--wait {wait_s:g})")

    try:
        elapsed = WarmWait(wait_s, time.sleep, progress, pause=pause_within(None, every_s=POLL_S)).run(attempt)[0]
    except ServerNotUp:
        report.line("server", f"NOT UP — nothing accepted connections at {url} within {wait_s:g}s", problem=True)
        print(file=report.out)
        print(NOT_UP_HINT, file=report.out)
        return False
    except SequencesError as exc:
        report.line("server", f"FAILED — {one_line(exc.message, 300)}", problem=True)
        return False
    report.line("server", f"up, websocket open and metadata read in {_ms(elapsed)}")
    return True


def _healthz(url: str, key: Optional[str], report: _Report) -> None:
    """GET /healthz with the websocket's key header (a proxy in front may want it on every path)."""
    address = _healthz_url(url)
    with httpx.Client(timeout=CONNECT_TIMEOUT_S, headers=api_key_header(key)) as client:  # built before the clock
        try:
            elapsed, answer = _timed(lambda: client.get(address))
        except httpx.HTTPError as exc:
            report.line("healthz", f"FAILED — {type(exc).__name__}: {one_line(exc)}", problem=True)
            return
    if answer.status_code == 200:
        report.line("healthz", f"200 ({_ms(elapsed)})")
    else:
        report.line("healthz", f"{answer.status_code} from {address} — openpi's server answers 200", problem=True)


def _metadata(connection: OpenpiConnection, report: _Report) -> None:
    metadata = connection.metadata or {}
    shown = ", ".join(f"{k}={one_line(v, 40)}" for k, v in list(metadata.items())[:6]) or "{} (the server's default)"
    report.line("metadata", shown)
    width = metadata.get("action_dim")
    if isinstance(width, int) and not isinstance(width, bool):  # a contradicting one was refused at connect
        report.line("", f"action_dim {width} = the card's")
    else:
        report.line("", "no action_dim in it: the answer's width is checked against the card instead")


def _predict(connection: OpenpiConnection, card: Any, report: _Report) -> None:
    payload = {"observation": _blank_observation(card)}
    trips = []
    try:
        for number in range(2):
            trace = ActTrace()
            answer = connection.act(payload, rid=f"doctor-{number}", trace=trace)
            trips.append(trace.rtt_s or 0.0)
    except SequencesError as exc:
        report.line("predict", f"FAILED — {one_line(exc.message, 300)}", problem=True)
        return
    chunk = answer["action_chunk"]
    rows, width = len(chunk["steps"]), chunk["action_dim"]
    infer = answer["perf"].get("infer_ms")
    server = f", the server's inference {infer:.1f} ms" if infer is not None else ""
    report.line("predict", f"{rows}×{width} chunk, {width} wide as the card says; round trip {_ms(trips[0])} "
                           f"first, {_ms(trips[1])} then{server}")
    if rows != card.action_horizon:
        report.line("", f"note: {rows} rows where the card says {card.action_horizon}; the run plays "
                        f"{min(rows, card.open_loop_horizon)} of each")
