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

from . import policies
from .admin import FaultSpec, apply_fault, parse_fault_flag
from .keystore import KeyStore
from .plugin import load_policy
from .state import DEFAULT_LEASE_TTL_S, PlatformState


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sequence-ai serve", description="The local Sequences platform on loopback.")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--gateway-port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--worker-port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--api-key", help="the key to accept (else $SEQUENCES_LOCAL_KEYS, else a new seq_test_ key)")
    p.add_argument("--admin-token", help="token for /admin (default: a new random one)")
    p.add_argument("--json", action="store_true", help="print one JSON line with the coordinates first")
    p.add_argument("--policy", metavar="MOD:FN", help="your own policy instead of the stand-ins")
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
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


async def _run(args: argparse.Namespace, state: PlatformState) -> int:
    from .server import LocalServers  # imports uvicorn; kept out of argument parsing

    servers = LocalServers(state, args.host, args.gateway_port, args.worker_port, args.log_level)
    await servers.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the coordinates: whoever reads them may signal at once
        loop.add_signal_handler(sig, stop.set)
    for spec in args.fault:
        try:
            await apply_fault(state, spec)  # the admin API's own code: the two never disagree
        except ValueError as err:
            print(f"error: --fault {spec.kind}: {err}", file=sys.stderr)
            await servers.stop()
            return 2
    coords = {"base_url": servers.base_url, "api_key": state.keystore.primary, "admin_token": state.admin_token,
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
    await servers.stop()
    return 0


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
    state = PlatformState(KeyStore.from_sources(args.api_key), args.admin_token or secrets.token_urlsafe(24),
                          policy, name, lease_ttl_s=args.lease_ttl)
    if args.cold_start:
        state.start_cold(args.cold_start, args.cold_eta, args.warming_form)
    if args.latency_ms:
        state.faults.arm("latency", ms=args.latency_ms, jitter=args.jitter)
    if args.busy_fraction:
        state.faults.arm("busy", fraction=args.busy_fraction, seed=args.fault_seed)
    try:
        return asyncio.run(_run(args, state))
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
