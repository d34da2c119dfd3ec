"""`sequence-ai` (alias `seqai`): the catalogue, a readiness check, and the local platform.

    sequence-ai models [--endpoint act|chat|perceive|decide]
    sequence-ai doctor [--model pi05-droid] [--wait 600]
    (--base-url ws://host:port or wss://: an openpi server; `models` lists the shipped model cards and
     `doctor` checks the server against one: _doctor_openpi.py)
    sequence-ai serve [platform options]         (needs the [serve] extra)
    sequence-ai replay RECORDING... [--plot PATH]   (needs the [record] extra; --plot: [replay])
    sequence-ai export --format lerobot RECORDING... OUT_DIR   (needs the [lerobot] extra)

Exit codes: 0 ok / ready, 1 problems found or a request failed, 2 usage (replay and export: also
a file refused, recording/replay.py and recording/export.py), 130 Ctrl-C, 141 the reader of the
output went away (`| head`), as for a Unix filter.
Unlike the 0.20.0 client, every command (doctor included) honours SEQUENCES_BASE_URL and
--base-url, so a local platform can be checked exactly like the public one; `mock` starts one
for the command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, TextIO

from ._doctor import UNREACHABLE_HINT
from ._doctor import doctor as _doctor
from ._errors import SequencesError, Unavailable
from ._net._http import resolve_base_url
from ._net._mock import SERVE_INSTALL, missing_serve_dependencies
from ._version import __version__

__all__ = ["main"]

WAIT_S, OPENPI_WAIT_S = 600.0, 30.0  # a refused openpi URL is as often a server not started as one loading
EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_CANCELLED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sequence-ai",
        description="Client for the Sequences robot-policy platform.",
        epilog="The API key is read from SEQUENCES_API_KEY only; it is never a flag.",
    )
    parser.add_argument("--version", action="version", version=f"sequence-ai {__version__}")
    parser.add_argument("--base-url", metavar="URL", help="gateway URL (default: $SEQUENCES_BASE_URL, else the public gateway; "
                        "mock: a local platform for this command; ws://host:port or wss://: an openpi server)")
    commands = parser.add_subparsers(dest="command", metavar="{models,doctor,serve,replay,export}")
    models = commands.add_parser("models", help="the catalogue: what each model reads and returns (no key needed)")
    models.add_argument("--endpoint", choices=["act", "chat", "perceive", "decide"], help="only this endpoint's models")
    doctor = commands.add_parser("doctor", help="check the key, the gateway, credit and a real direct connect")
    doctor.add_argument("--model", default="pi05-droid", help="model to connect to (default pi05-droid)")
    doctor.add_argument("--wait", type=float, default=None, metavar="S",
                        help=f"how long to wait for a cold worker (default {WAIT_S:g}), or for an openpi server to "
                             f"accept connections (default {OPENPI_WAIT_S:g})")
    commands.add_parser("serve", help="run the local platform on loopback (needs the [serve] extra)", add_help=False)
    from .recording.replay import add_arguments as replay_arguments  # argparse only: no MCAP import

    replay_arguments(commands.add_parser("replay", help="the summary of recorded runs (MCAP files, or folders of "
                                                        "them); --plot draws a timeline"))
    from .recording.export import add_arguments as export_arguments  # argparse only: no lerobot import

    export_arguments(commands.add_parser("export", help="recorded runs as a training set (a LeRobot dataset)"))
    return parser


# --- models ---------------------------------------------------------------------------------------


def _number(value: Any, decimals: int = 0) -> str:
    return f"{value:.{decimals}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "0"


def _card_rows(base_url: str, endpoint: Optional[str], err: TextIO) -> List[Any]:
    """An openpi server publishes no catalogue: the model cards shipped with the package stand for it."""
    from ._cards import load_card, shipped_cards

    print(f"{base_url} is an openpi server, which lists no models: these are the shipped model cards "
          "(--model also takes a card file)", file=err)
    return [load_card(name).row(name) for name in shipped_cards()] if endpoint in (None, "act") else []


def _models(base_url: str, endpoint: Optional[str], out: TextIO, err: TextIO) -> int:
    from ._catalogue._models import models
    from ._link._links import is_openpi_url

    rows = _card_rows(base_url, endpoint, err) if is_openpi_url(base_url) else models(endpoint, base_url=base_url)
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


# --- serve ----------------------------------------------------------------------------------------


def _serve(argv: List[str], err: TextIO) -> int:
    missing = missing_serve_dependencies()  # the platform imports them lazily; fail here, clearly
    if missing:
        print(f"error: `sequence-ai serve` needs the local platform's dependencies (missing: {', '.join(missing)}); "
              f"install them with: {SERVE_INSTALL}", file=err)
        return EXIT_PROBLEMS
    from .platform import cli as platform_cli

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
    try:
        code = _run(args_list, sys.stdout, sys.stderr)
        sys.stdout.flush()  # here, not at exit: a reader that is gone must raise where it is caught
        return code
    except KeyboardInterrupt:
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


def _run(args_list: List[str], out: TextIO, err: TextIO) -> int:
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
    if args.command == "replay":
        from .recording.replay import replay

        return replay(args.files, args.plot, out, err)
    if args.command == "export":
        from .recording.export import export

        return export(args, out, err)
    try:
        base_url = resolve_base_url(args.base_url)  # "mock" starts the local platform here
        if args.command == "models":
            return _models(base_url, args.endpoint, out, err)
    except SequencesError as exc:
        print(f"error: {exc.message}", file=err)
        if isinstance(exc, Unavailable) and exc.status is None and exc.message.startswith("could not reach"):
            print(UNREACHABLE_HINT, file=err)
        return EXIT_PROBLEMS
    from ._link._links import is_openpi_url

    if is_openpi_url(base_url):
        from ._doctor_openpi import openpi_doctor

        return openpi_doctor(base_url, args.model, OPENPI_WAIT_S if args.wait is None else args.wait, out)
    return _doctor(base_url, args.model, WAIT_S if args.wait is None else args.wait, out)


def _quiet_stdout() -> None:
    """The reader of stdout (`head`) is gone: no traceback, and none at exit when Python flushes."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by something without a descriptor
        pass


if __name__ == "__main__":
    sys.exit(main())
