"""Scratch venvs: a Python of its own for each requirements file in requirements/scratch/, for
packages that must never share the workspace's venv (the public sequence-ai 0.20.0 has the same
import name as this checkout's client; lerobot pins its own torch).

    python scripts/scratch_venv.py NAME          # make or update .NAME-venv/ from requirements/scratch/NAME.txt
    python scripts/scratch_venv.py --all         # every one in requirements/scratch/ (scripts/workspace.sh test does
                                                 # this in the background while the suite starts)

`ensure(NAME)` (the benches) makes or updates one and returns its Python. `ready(NAME)` (a test)
waits while another process makes it and returns its Python, or a one-line reason why there is
none, without trying again an install that already failed for the same requirements: that is
for the next `scripts/workspace.sh test` or `make bench` (say, back on a network).
A lock per venv (in .ws/) makes a second caller wait for the first instead of racing it; a stamp
(the requirements file's hash) says the venv is whole and current.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import venv
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple, Union

__all__ = ["ScratchVenvError", "ensure", "names", "python_of", "ready"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = os.path.join(ROOT, "requirements", "scratch")


class ScratchVenvError(RuntimeError):
    """A scratch venv could not be made; the message says why in one line."""


def names() -> List[str]:
    return sorted(os.path.basename(p)[: -len(".txt")] for p in glob.glob(os.path.join(REQUIREMENTS, "*.txt")))


def folder_of(name: str) -> str:
    return os.path.join(ROOT, f".{name}-venv")


def python_of(name: str) -> str:
    return os.path.join(folder_of(name), "bin", "python")


def _requirements(name: str) -> str:
    path = os.path.join(REQUIREMENTS, f"{name}.txt")
    if not os.path.exists(path):
        raise ScratchVenvError(f"no scratch venv named {name!r}: {path} does not exist")
    return path


def _stamp_wanted(name: str) -> str:
    with open(_requirements(name), "rb") as handle:
        text = handle.read()
    return hashlib.sha256(text + sys.version.encode()).hexdigest()


@contextmanager
def _locked(name: str, timeout_s: Optional[float]) -> Iterator[None]:
    os.makedirs(os.path.join(ROOT, ".ws"), exist_ok=True)
    with open(os.path.join(ROOT, ".ws", f"scratch-{name}.lock"), "w") as lock:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ScratchVenvError(f".{name}-venv is still being made after {timeout_s:g}s") from None
                time.sleep(0.5)
        yield


def _state(name: str) -> Tuple[bool, str]:
    """(whole and current, the failure recorded for these requirements or "")."""
    want, folder = _stamp_wanted(name), folder_of(name)
    if os.path.exists(python_of(name)) and _read(os.path.join(folder, ".requirements.sha256")) == want:
        return True, ""
    failed = _read(os.path.join(folder, ".failed")).split("\n", 1)
    return False, failed[1] if len(failed) == 2 and failed[0] == want else ""


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def ensure(name: str, log=sys.stderr) -> str:
    """The Python of .NAME-venv/, made or brought up to date first; ScratchVenvError if it cannot be."""
    with _locked(name, timeout_s=None):
        whole, _ = _state(name)
        if whole:
            return python_of(name)
        folder, want = folder_of(name), _stamp_wanted(name)
        print(f"[scratch] making {folder} from {os.path.relpath(_requirements(name), ROOT)} ...", file=log, flush=True)
        try:
            if not os.path.exists(python_of(name)):
                venv.EnvBuilder(with_pip=True, clear=True).create(folder)
            # Never this checkout's packages: the scratch venv is a Python of its own.
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            done = subprocess.run([python_of(name), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   "-r", _requirements(name)], env=env, cwd=tempfile.gettempdir(),
                                  capture_output=True, text=True)
            if done.returncode != 0:
                lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
                raise ScratchVenvError(f"pip could not install {os.path.relpath(_requirements(name), ROOT)} into "
                                       f"{folder}: {lines[-1] if lines else 'exit ' + str(done.returncode)}")
        except (OSError, ScratchVenvError) as exc:
            message = str(exc) if isinstance(exc, ScratchVenvError) else f"could not make {folder}: {exc}"
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, ".failed"), "w") as handle:
                handle.write(f"{want}\n{message}\n")
            raise ScratchVenvError(message) from None
        with open(os.path.join(folder, ".requirements.sha256"), "w") as handle:
            handle.write(want + "\n")
        if os.path.exists(os.path.join(folder, ".failed")):
            os.remove(os.path.join(folder, ".failed"))
        print(f"[scratch] {folder} ready", file=log, flush=True)
        return python_of(name)


def ready(name: str, timeout_s: float = 900.0) -> Union[str, ScratchVenvError]:
    """The Python of .NAME-venv/ once whoever is making it has finished (waits up to timeout_s),
    or a ScratchVenvError saying why there is none. Makes it only if nobody has tried yet for
    these requirements; an install that failed is not tried again here."""
    try:
        with _locked(name, timeout_s):
            whole, failure = _state(name)
        if whole:
            return python_of(name)
        if failure:
            return ScratchVenvError(failure)
        return ensure(name)
    except ScratchVenvError as exc:
        return exc


def main(argv: Optional[list] = None) -> int:
    # Ended by the run that started it (scripts/workspace.sh test): subprocess.run kills pip on the
    # way out, so no install goes on without the lock.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="*", help=f"which (from requirements/scratch/): {', '.join(names())}")
    parser.add_argument("--all", action="store_true", help="every scratch venv")
    args = parser.parse_args(argv)
    failed = 0
    for name in names() if args.all else args.name:
        try:
            print(ensure(name))
        except ScratchVenvError as exc:
            print(f"[scratch] {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
