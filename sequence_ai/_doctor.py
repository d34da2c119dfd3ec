"""`sequence-ai doctor`: the key, the gateway, credit, and a real pinned connection to a worker.

Every time shown is network time: clients (and their TLS contexts, 100+ ms to build) are made
before the clock starts. The worker is probed with what every worker serves — `POST /act` — with
an empty body, which a worker refuses before running the policy (422 here; a 0.20.0 mock answers
a canned chunk): never inferred, never billed. Any answer but 401 proves the worker is up, the
certificate pinned and the direct secret accepted.
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any, Callable, Optional, TextIO, Tuple

import httpx

from ._errors import CertPinError, SequencesError
from ._net._http import gateway_call, redact_key, resolve_api_key
from ._version import __version__
from ._warming import WarmWait, pause_within

__all__ = ["doctor"]

BILLING_URL = "https://app.generalsequences.com/billing/"
LATENCY_PROBES = 5
PROBE_BODY: dict = {}  # refused by the worker's validation, before any inference
UNREACHABLE_HINT = ("hint: no gateway answered there. For the local platform run `sequence-ai serve` and export the "
                    "SEQUENCES_BASE_URL and SEQUENCES_API_KEY it prints, or set SEQUENCES_BASE_URL=mock to start one "
                    "for each command (needs the [serve] extra).")


class _Report:
    def __init__(self, out: TextIO):
        self.out = out
        self.problems = 0

    def line(self, label: str, text: str, problem: bool = False) -> None:
        print(f"  {label:<14}{text}", file=self.out, flush=True)
        self.problems += int(problem)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def one_line(text: Any, limit: int = 160) -> str:
    """An error as one short line: a worker's HTML error page is no diagnosis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _timed(call: Callable[[], Any]) -> Tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def doctor(base_url: str, model: str, wait_s: float, out: TextIO) -> int:
    report = _Report(out)
    print(f"sequence-ai {__version__}", file=out)
    print(f"gateway     {base_url}", file=out)
    print(file=out)
    key = resolve_api_key(None, base_url)
    if key:
        report.line("key", f"SEQUENCES_API_KEY  ({redact_key(key)})")
    else:
        report.line("key", "MISSING — set SEQUENCES_API_KEY", problem=True)

    with httpx.Client(timeout=10.0) as gateway:  # built before the clock starts
        try:
            elapsed, health = _timed(lambda: gateway.get(f"{base_url}/v1/health"))
            health.raise_for_status()
            info = health.json() if health.headers.get("content-type", "").startswith("application/json") else {}
        except (httpx.HTTPError, ValueError) as exc:
            report.line("gateway", f"UNREACHABLE — {one_line(exc)}", problem=True)
            print(file=out)
            print(UNREACHABLE_HINT, file=out)
            return 1
        info = info if isinstance(info, dict) else {}
        auth, backend = info.get("auth", "?"), info.get("backend", "?")
        report.line("gateway", f"up ({_ms(elapsed)})  backend={backend} auth={auth}")
        if auth != "keystore":
            report.line("", "note: this gateway is not checking keys (auth is not keystore)")
        key_valid = bool(key) and _account(gateway, base_url, key, report)

    if key and key_valid:
        _direct(base_url, key, model, wait_s, report)

    print(file=out)
    print("ready" if report.problems == 0 else f"{report.problems} problem(s) above", file=out)
    return 0 if report.problems == 0 else 1


def _account(gateway: httpx.Client, base_url: str, key: str, report: _Report) -> bool:
    try:
        response = gateway.get(f"{base_url}/v1/account", headers={"Authorization": f"Bearer {key}"}, timeout=15.0)
    except httpx.HTTPError as exc:
        report.line("key valid", f"inconclusive — {type(exc).__name__}")
        return False
    if response.status_code == 401:
        report.line("key valid", "NO — the gateway rejected this key (401)", problem=True)
        return False
    if response.status_code != 200:
        report.line("key valid", f"inconclusive — probe returned {response.status_code}")
        return False
    report.line("key valid", "yes")
    try:
        body = response.json()
    except ValueError:
        body = None
    _credit(body if isinstance(body, dict) else {}, report)
    return True


def _credit(body: dict, report: _Report) -> None:
    balance_obj = body.get("balance")
    balance = balance_obj.get("balance") if isinstance(balance_obj, dict) else None
    if isinstance(balance, (int, float)) and not isinstance(balance, bool):
        if balance <= 0:
            report.line("credit", f"EXHAUSTED (${balance:.2f}) — top up at {BILLING_URL}", problem=True)
        else:
            report.line("credit", f"${balance:.2f}")
    else:  # e.g. a 0.20.0 mock, whose /v1/account answers the catalogue
        report.line("credit", "not reported — the account answer has no balance")
    limits = body.get("limits")
    if isinstance(limits, dict):
        parts = []
        if "max_gpus_per_user" in limits:
            parts.append(f"max GPUs {limits['max_gpus_per_user']}")
        if "daily_spend_cap_per_user_usd" in limits:
            parts.append(f"daily cap ${limits['daily_spend_cap_per_user_usd']}")
        if parts:
            report.line("limits", ", ".join(parts))


def _connect(base_url: str, key: str, model: str, wait_s: float, report: _Report) -> Any:
    """POST /v1/act/connect, waiting through a cold start with a progress line per attempt."""
    from ._link._admission import parse_grant

    body = {"model": model, "session": uuid.uuid4().hex}

    def attempt(read_timeout_s: float) -> Any:
        return parse_grant(gateway_call("POST", base_url, "/v1/act/connect", api_key=key, json_body=body,
                                        timeout_s=120.0))

    def progress(waited: float, eta: float) -> None:
        report.line("warming", f"{model}: worker loading, {waited:.0f}s waited, retry in {eta:g}s (--wait {wait_s:g})")

    return WarmWait(wait_s, time.sleep, progress, pause=pause_within(20.0)).run(attempt)[0]


class _Worker:
    """Probes of one granted worker, each over a client built before its clock starts."""

    def __init__(self, grant: Any):
        self.grant = grant
        self.headers = {"Authorization": f"Bearer {grant.direct_secret}", "Content-Type": "application/json"}

    def client(self) -> Any:
        from ._net._http11 import pinned_client

        return pinned_client(self.grant.worker_url, self.grant.cert_fingerprint, headers=self.headers, timeout=10.0)

    @staticmethod
    def probe(client: Any) -> Tuple[float, Optional[int]]:
        """(seconds, status) of one POST /act with the empty body."""
        elapsed, response = _timed(lambda: client.post("/act", json=PROBE_BODY))
        return elapsed, response.status_code

    def fresh(self) -> Tuple[float, Optional[int]]:
        with self.client() as client:
            return self.probe(client)


def _direct(base_url: str, key: str, model: str, wait_s: float, report: _Report) -> None:
    try:
        grant = _connect(base_url, key, model, wait_s, report)
    except SequencesError as exc:
        report.line("connect", f"{model}  FAILED — {one_line(exc.message)}", problem=True)
        return
    worker = _Worker(grant)
    try:
        first, status = worker.fresh()
    except CertPinError as exc:
        report.line("connect", f"{model}  ->  CERT PIN MISMATCH — {exc.message}", problem=True)
        return
    except (httpx.HTTPError, SequencesError, OSError) as exc:
        report.line("connect", f"{model}  ->  worker unreachable — {type(exc).__name__}: {one_line(exc)}", problem=True)
        return
    if status == 401:
        report.line("connect", f"{model}  ->  worker up, cert pinned, but it REJECTED the direct secret (401)",
                    problem=True)
        return
    lease = f"lease {grant.ttl_s:g}s" if grant.ttl_s else "no lease returned"
    report.line("connect", f"{model}  ->  worker up, cert pinned, {lease}", problem=not grant.ttl_s)
    try:
        fresh = [first] + [worker.fresh()[0] for _ in range(LATENCY_PROBES - 1)]
        with worker.client() as client:
            worker.probe(client)  # warm-up: pays the handshake once
            reused = [worker.probe(client)[0] for _ in range(LATENCY_PROBES)]
    except (httpx.HTTPError, SequencesError, OSError) as exc:
        report.line("latency", f"not measured — {type(exc).__name__}: {one_line(exc)}", problem=True)
        return
    new_s, reused_s = statistics.median(fresh), statistics.median(reused)
    report.line("latency", f"{'new connection each call':<30}{_ms(new_s):>10}")
    report.line("", f"{'one reused connection':<30}{_ms(reused_s):>10}")
    report.line("", f"{'saved by keeping it open':<30}{_ms(new_s - reused_s):>10}")
