"""`python -m sequence_ai.platform` / `sequence-ai serve`: start the gateway and the worker on
loopback, print how to reach them, run until Ctrl-C or SIGTERM.

With --json the first stdout line is exactly one JSON object:
{"base_url", "api_key", "admin_token", "worker_url", "pid"}; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import sys
from typing import List, Optional

from pydantic import ValidationError

from . import policies
from .admin import FaultSpec, apply_fault, parse_fault_flag
from .connections import DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S
from .keystore import KeyStore
from .plugin import load_policy
from .state import DEFAULT_LEASE_TTL_S, PlatformState
from .worker_process import WorkerGone, WorkerLink, WorkerSettings, start_worker_process


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sequence-ai serve", description="The local Sequences platform on loopback.")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--gateway-port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--worker-port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--api-key", help="the key to accept (else $SEQUENCES_LOCAL_KEYS, else a new seq_test_ key)")
    p.add_argument("--admin-token", help="token for /admin (default: a new random one)")
    p.add_argument("--json", action="store_true", help="print one JSON line with the coordinates first")
    p.add_argument("--stop-when-stdin-closes", action="store_true",
                   help="stop when standard input reaches its end: the process holding its other end is gone, "
                        "however it went (the client's mock tier starts it so)")
    p.add_argument("--policy", metavar="MOD:FN", help="your own policy instead of the stand-ins")
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, metavar="S",
                   help="a request's head, and then its body, must arrive within S seconds "
                        f"(default {DEFAULT_READ_TIMEOUT_S:g})")
    p.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                   help=f"open connections per server; more are closed at once (default {DEFAULT_MAX_CONNECTIONS})")
    faults = p.add_argument_group("faults at start (the admin API can do the same at runtime)")
    faults.add_argument("--cold-start", type=float, metavar="S", help="answer 503 warming for S seconds")
    faults.add_argument("--cold-eta", type=float, metavar="S", help="the load time announced while warming")
    faults.add_argument("--warming-form", choices=["detail", "code"], default="detail",
                        help="503 body: detail.status=warming_up (default) or code=warming")
    faults.add_argument("--latency-ms", type=float, help="delay every /act by this much")
    faults.add_argument("--jitter", type=float, default=0.0, help="latency jitter as a fraction (0.2 = ±20%%)")
    faults.add_argument("--lease-ttl", type=float, default=DEFAULT_LEASE_TTL_S, metavar="S",
                        help=f"lease ttl_s handed out by connect (default {DEFAULT_LEASE_TTL_S:g})")
    faults.add_argument("--busy-fraction", type=float, metavar="F", help="answer 429 to this fraction of /act")
    faults.add_argument("--fault-seed", type=int, default=0, help="seed for fractional faults")
    faults.add_argument("--fault", action="append", default=[], type=_fault_flag, metavar="KIND[:KEY=VALUE,...]",
                        help="arm any fault the admin API takes, with its parameters, e.g. status_500:count=1 "
                             "or latency:ms=300,route=connect (repeatable; applied in order before the "
                             "coordinates are printed)")
    return p


def _fault_flag(text: str) -> FaultSpec:
    try:
        return parse_fault_flag(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


async def _run(args: argparse.Namespace, state: PlatformState, link: WorkerLink, starting: List[FaultSpec]) -> int:
    from .gateway import build_gateway_app  # imports fastapi; kept out of argument parsing
    from .server import ServeLimits, listen, serve, shut, url_host

    try:
        state.worker = await link.ready()
    except WorkerGone as err:
        print(f"error: {err}", file=sys.stderr)
        await link.close()
        return 1
    state.worker_link = link
    gateway_sock = listen(args.host, args.gateway_port)
    base_url = f"http://{url_host(args.host)}:{gateway_sock.getsockname()[1]}"
    gateway = await serve(build_gateway_app(state), gateway_sock, None, args.log_level,
                          ServeLimits(args.read_timeout, args.max_connections))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the coordinates: whoever reads them may signal at once
        loop.add_signal_handler(sig, stop.set)
    if args.stop_when_stdin_closes:
        _stop_at_end_of_stdin(loop, stop)
    try:
        for spec in starting:
            try:
                await apply_fault(state, spec)  # the admin API's own code: the two never disagree
            except ValueError as err:
                print(f"error: --fault {spec.kind}: {err}", file=sys.stderr)
                return 2
        coords = {"base_url": base_url, "api_key": state.keystore.primary, "admin_token": state.admin_token,
                  "worker_url": state.worker.url if state.worker else None, "pid": os.getpid()}
        if args.json:
            print(json.dumps(coords), flush=True)
        else:
            print(f"Sequences local platform (policy: {state.policy_name})\n"
                  f"  export SEQUENCES_BASE_URL={coords['base_url']}\n"
                  f"  export SEQUENCES_API_KEY={coords['api_key']}\n"
                  f"  worker       {coords['worker_url']}  (sha256 {state.worker.fingerprint if state.worker else '-'})\n"
                  f"  admin token  {coords['admin_token']}  (X-Admin-Token, loopback only)\n"
                  f"  OpenAPI      {coords['base_url']}/openapi.json\n"
                  "Ctrl-C to stop.", flush=True)
        await stop.wait()
        return 0
    finally:
        await shut(*gateway, kill_connections=False)
        await link.close()


def _stop_at_end_of_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set `stop` when stdin reaches its end. Its other end is held by the one process that started
    this one, so even a SIGKILL of that process (which no signal handler sees) stops the platform."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            if os.read(fd, 4096):
                return  # nothing is ever sent; whatever comes is not an end
        except OSError:
            pass
        loop.remove_reader(fd)
        stop.set()

    loop.add_reader(fd, readable)


def _starting_faults(args: argparse.Namespace) -> List[FaultSpec]:
    """The shorthand fault flags as the admin API's specs, then every --fault, in order."""
    specs = []
    if args.cold_start:
        specs.append(FaultSpec(kind="warming", seconds=args.cold_start, eta_s=args.cold_eta, form=args.warming_form))
    if args.latency_ms:
        specs.append(FaultSpec(kind="latency", ms=args.latency_ms, jitter=args.jitter))
    if args.busy_fraction:
        specs.append(FaultSpec(kind="busy", fraction=args.busy_fraction, seed=args.fault_seed))
    return specs + list(args.fault)


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if not _is_loopback(args.host):
        print(f"error: --host must be a loopback address, not {args.host}", file=sys.stderr)
        return 2
    if args.policy:
        try:
            policy, name = load_policy(args.policy), args.policy
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    else:
        policy, name = policies.stand_in, "stand-in"
    try:
        starting = _starting_faults(args)
    except ValidationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    state = PlatformState(KeyStore.from_sources(args.api_key), args.admin_token or secrets.token_urlsafe(24),
                          policy, name, lease_ttl_s=args.lease_ttl)
    # Forked before any event loop or thread exists (worker_process.py says why it is a process).
    link = start_worker_process(WorkerSettings(args.host, args.worker_port, args.log_level, args.policy,
                                               args.read_timeout, args.max_connections))
    try:
        return asyncio.run(_run(args, state, link, starting))
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if link.process.is_alive():  # _run stops it; this is for the ways out that skip that
            link.process.kill()


if __name__ == "__main__":
    sys.exit(main())
