"""`sequence-ai` (alias `seqai`): the catalogue, a readiness check, and the local platform.

    sequence-ai models [--endpoint act|chat|perceive|decide]
    sequence-ai doctor [--model pi05-droid] [--wait 600]
    sequence-ai serve [platform options]         (needs sequence-ai[serve])

Exit codes: 0 ok / ready, 1 problems found or a request failed, 2 usage, 130 Ctrl-C.
Unlike the 0.20.0 client, every command (doctor included) honours SEQUENCES_BASE_URL and
--base-url, so a local platform can be checked exactly like the public one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from typing import Any, Callable, List, Optional, TextIO

from ._errors import CertPinError, SequencesError, Unavailable
from ._http import gateway_call, redact_key, resolve_api_key, resolve_base_url
from ._version import __version__

__all__ = ["main"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
BILLING_URL = "https://app.generalsequences.com/billing/"
LATENCY_PROBES = 5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sequence-ai",
        description="Client for the Sequences robot-policy platform.",
        epilog="The API key is read from SEQUENCES_API_KEY only; it is never a flag.",
    )
    parser.add_argument("--version", action="version", version=f"sequence-ai {__version__}")
    parser.add_argument("--base-url", metavar="URL", help="gateway URL (default: $SEQUENCES_BASE_URL, else the public gateway)")
    commands = parser.add_subparsers(dest="command", metavar="{models,doctor,serve}")
    models = commands.add_parser("models", help="the catalogue: what each model reads and returns (no key needed)")
    models.add_argument("--endpoint", choices=["act", "chat", "perceive", "decide"], help="only this endpoint's models")
    doctor = commands.add_parser("doctor", help="check the key, the gateway, credit and a real direct connect")
    doctor.add_argument("--model", default="pi05-droid", help="model to connect to (default pi05-droid)")
    doctor.add_argument("--wait", type=float, default=600.0, metavar="S",
                        help="how long to wait for a cold worker (default 600)")
    commands.add_parser("serve", help="run the local platform on loopback (needs sequence-ai[serve])", add_help=False)
    return parser


# --- models ---------------------------------------------------------------------------------------


def _number(value: Any, decimals: int = 0) -> str:
    return f"{value:.{decimals}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "0"


def _models(base_url: str, endpoint: Optional[str], out: TextIO) -> int:
    from ._catalogue import models

    rows = models(endpoint, base_url=base_url)
    if not rows:
        print("no models", file=out)
        return EXIT_OK
    act = sorted((m for m in rows if m.endpoint == "act"), key=lambda m: m.short_id)
    other = sorted((m for m in rows if m.endpoint != "act"), key=lambda m: m.short_id)
    if act:
        print(f"{'model':<30}{'robot':<24}{'dim':>4}{'hz':>6}  views", file=out)
        for m in act:
            views = ", ".join(m.camera_views) or "—"
            print(f"{m.short_id:<30}{(m.robot or '—'):<24}{_number(m.action_dim):>4}{_number(m.control_hz):>6}  {views}",
                  file=out)
    if other:
        if act:
            print(file=out)
        print(f"{'model':<30}{'endpoint':<12}architecture", file=out)
        for m in other:
            print(f"{m.short_id:<30}{m.endpoint:<12}{m.architecture or '—'}", file=out)
    return EXIT_OK


# --- doctor ---------------------------------------------------------------------------------------


class _Report:
    def __init__(self, out: TextIO):
        self.out = out
        self.problems = 0

    def line(self, label: str, text: str, problem: bool = False) -> None:
        print(f"  {label:<14}{text}", file=self.out, flush=True)
        self.problems += int(problem)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _connect(base_url: str, key: str, model: str, wait_s: float, report: _Report) -> Any:
    """POST /v1/act/connect, waiting through a cold start with a progress line per attempt."""
    from ._admission import parse_grant

    body = {"model": model, "session": uuid.uuid4().hex}
    started = time.monotonic()
    while True:
        try:
            answer = gateway_call("POST", base_url, "/v1/act/connect", api_key=key, json_body=body, timeout_s=120.0)
            return parse_grant(answer)
        except Unavailable as exc:
            waited = time.monotonic() - started
            if not exc.warming or waited >= wait_s:
                raise
            eta = exc.retry_after_s or 20
            report.line("warming", f"{model}: worker loading, {waited:.0f}s waited, retry in {eta:g}s (--wait {wait_s:g})")
            time.sleep(max(1.0, min(float(eta), wait_s - waited)))


def _latency(grant: Any, report: _Report) -> None:
    """Median /ping on the worker: a new pinned connection per call vs one reused connection."""
    from ._http11 import pinned_client

    headers = {"Authorization": f"Bearer {grant.direct_secret}"}

    def fresh_ping() -> float:
        with pinned_client(grant.worker_url, grant.cert_fingerprint, headers=headers, timeout=10.0) as client:
            return _timed(lambda: client.get("/ping").raise_for_status())

    fresh = [fresh_ping() for _ in range(LATENCY_PROBES)]
    with pinned_client(grant.worker_url, grant.cert_fingerprint, headers=headers, timeout=10.0) as client:
        client.get("/ping").raise_for_status()  # warm-up: pays the handshake once
        reused = [_timed(lambda: client.get("/ping").raise_for_status()) for _ in range(LATENCY_PROBES)]
    new_ms, reused_ms = statistics.median(fresh), statistics.median(reused)
    report.line("latency", f"{'new connection each call':<30}{_ms(new_ms):>10}")
    report.line("", f"{'one reused connection':<30}{_ms(reused_ms):>10}")
    report.line("", f"{'saved by keeping it open':<30}{_ms(new_ms - reused_ms):>10}")


def _doctor(base_url: str, model: str, wait_s: float, out: TextIO) -> int:
    import httpx

    report = _Report(out)
    print(f"sequence-ai {__version__}", file=out)
    print(f"gateway     {base_url}", file=out)
    print(file=out)
    key = resolve_api_key()
    if key:
        report.line("key", f"SEQUENCES_API_KEY  ({redact_key(key)})")
    else:
        report.line("key", "MISSING — set SEQUENCES_API_KEY", problem=True)

    try:
        started = time.perf_counter()
        health = httpx.get(f"{base_url}/v1/health", timeout=10.0)
        elapsed = time.perf_counter() - started
        health.raise_for_status()
        info = health.json() if health.headers.get("content-type", "").startswith("application/json") else {}
    except (httpx.HTTPError, ValueError) as exc:
        report.line("gateway", f"UNREACHABLE — {exc}", problem=True)
        return EXIT_PROBLEMS
    auth = info.get("auth", "?") if isinstance(info, dict) else "?"
    backend = info.get("backend", "?") if isinstance(info, dict) else "?"
    report.line("gateway", f"up ({_ms(elapsed)})  backend={backend} auth={auth}")
    if auth != "keystore":
        report.line("", "note: this gateway is not checking keys (auth is not keystore)")

    key_valid = False
    if key:
        try:
            response = httpx.get(f"{base_url}/v1/account", headers={"Authorization": f"Bearer {key}"}, timeout=15.0)
        except httpx.HTTPError as exc:
            report.line("key valid", f"inconclusive — {type(exc).__name__}")
        else:
            if response.status_code == 401:
                report.line("key valid", "NO — the gateway rejected this key (401)", problem=True)
            elif response.status_code == 200:
                key_valid = True
                report.line("key valid", "yes")
                _credit(response, report)
            else:
                report.line("key valid", f"inconclusive — probe returned {response.status_code}")

    if key and key_valid:
        _direct(base_url, key, model, wait_s, report)

    print(file=out)
    print("ready" if report.problems == 0 else f"{report.problems} problem(s) above", file=out)
    return EXIT_OK if report.problems == 0 else EXIT_PROBLEMS


def _credit(response: Any, report: _Report) -> None:
    try:
        body = response.json()
    except ValueError:
        body = None
    balance_obj = body.get("balance") if isinstance(body, dict) else None
    balance = balance_obj.get("balance") if isinstance(balance_obj, dict) else None
    if isinstance(balance, (int, float)) and not isinstance(balance, bool):
        if balance <= 0:
            report.line("credit", f"EXHAUSTED (${balance:.2f}) — top up at {BILLING_URL}", problem=True)
        else:
            report.line("credit", f"${balance:.2f}")
    limits = body.get("limits") if isinstance(body, dict) else None
    if isinstance(limits, dict):
        parts = []
        if "max_gpus_per_user" in limits:
            parts.append(f"max GPUs {limits['max_gpus_per_user']}")
        if "daily_spend_cap_per_user_usd" in limits:
            parts.append(f"daily cap ${limits['daily_spend_cap_per_user_usd']}")
        if parts:
            report.line("limits", ", ".join(parts))


def _direct(base_url: str, key: str, model: str, wait_s: float, report: _Report) -> None:
    import httpx

    try:
        grant = _connect(base_url, key, model, wait_s, report)
    except SequencesError as exc:
        report.line("connect", f"{model}  FAILED — {exc.message}", problem=True)
        return
    from ._http11 import pinned_client

    try:

        headers = {"Authorization": f"Bearer {grant.direct_secret}"}
        with pinned_client(grant.worker_url, grant.cert_fingerprint, headers=headers, timeout=10.0) as client:
            client.get("/ping").raise_for_status()
    except CertPinError as exc:
        report.line("connect", f"{model}  ->  CERT PIN MISMATCH — {exc.message}", problem=True)
        return
    except (httpx.HTTPError, SequencesError) as exc:
        report.line("connect", f"{model}  ->  worker unreachable — {type(exc).__name__}: {exc}", problem=True)
        return
    lease = f"lease {grant.ttl_s:g}s" if grant.ttl_s else "no lease returned"
    report.line("connect", f"{model}  ->  worker up, cert pinned, {lease}", problem=not grant.ttl_s)
    try:
        _latency(grant, report)
    except (httpx.HTTPError, SequencesError) as exc:
        report.line("latency", f"not measured — {type(exc).__name__}: {exc}", problem=True)


# --- serve ----------------------------------------------------------------------------------------


SERVE_DEPENDENCIES = ("fastapi", "uvicorn", "cryptography")


def _serve(argv: List[str], err: TextIO) -> int:
    import importlib

    try:
        for name in SERVE_DEPENDENCIES:  # the platform imports them lazily; fail here, clearly
            importlib.import_module(name)
        from .platform import cli as platform_cli
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        print(f"error: `sequence-ai serve` needs the local platform's dependencies (missing: {missing}); "
              "install them with: pip install 'sequence-ai[serve]'", file=err)
        return EXIT_PROBLEMS
    return int(platform_cli.main(argv) or 0)


def _split_serve(argv: List[str]) -> Optional[List[str]]:
    """Everything after `serve`, if that is the sub-command (its options belong to the platform)."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--base-url":
            index += 2
            continue
        if token.startswith("-"):
            index += 1
            continue
        return argv[index + 1:] if token == "serve" else None
    return None


def main(argv: Optional[List[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    out, err = sys.stdout, sys.stderr
    try:
        serve_args = _split_serve(args_list)
        if serve_args is not None:
            return _serve(serve_args, err)
        parser = _parser()
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exit_:
            return int(exit_.code or 0)
        if args.command is None:
            parser.print_help(err)
            return EXIT_USAGE
        base_url = resolve_base_url(args.base_url)
        if args.command == "models":
            try:
                return _models(base_url, args.endpoint, out)
            except SequencesError as exc:
                print(f"error: {exc.message}", file=err)
                return EXIT_PROBLEMS
        return _doctor(base_url, args.model, args.wait, out)
    except KeyboardInterrupt:
        print("cancelled", file=err)
        return EXIT_CANCELLED


if __name__ == "__main__":
    sys.exit(main())
