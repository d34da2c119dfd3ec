"""Scratch venvs: a Python of its own for each requirements file in requirements/scratch/, for
packages that must never share the workspace's venv (the public sequence-ai 0.20.0 has the same
import name as this checkout's client; lerobot pins its own torch).

    python scripts/scratch_venv.py NAME          # make or update .NAME-venv/ from requirements/scratch/NAME.txt
    python scripts/scratch_venv.py --all         # every one in requirements/scratch/ (scripts/workspace.sh test does
                                                 # this in the background while the suite starts)

A requirements file may name the Python its venv needs on a line of its own, `# python: 3.12`
(lerobot 0.6 needs 3.12); the newest of that series under ~/.pyenv/versions, else `python3.12` on
PATH, makes it, and a machine without one gets a one-line reason. Without that line the venv is
made with the Python running this script (the workspace's 3.11). A line `# pip-constraint: cython<3`
constrains what pip installs, the build environments of source-only packages included (PyYAML 5.4.1,
built on Python 3.10, needs a Cython before 3).

`ensure(NAME)` (the benches) makes or updates one and returns its Python. `ready(NAME)` (a test)
waits while another process makes it and returns its Python, or a one-line reason why there is
none, without trying again an install that already failed for the same requirements: that is
for the next `scripts/workspace.sh test` or `make bench` (say, back on a network).
A lock per venv (in .ws/) makes a second caller wait for the first instead of racing it; a stamp
(the hash of the Python and the requirement lines, not the comments: an edited comment does not
reinstall several GB) says the venv is whole and current. pip's output goes to the venv's
install.log, whose last line says how long the install took and how much it holds.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple, Union

__all__ = ["ScratchVenvError", "ensure", "made", "names", "python_of", "ready"]

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


def _series(name: str) -> str:
    """The Python series the requirements ask for ("3.12"), or "" for the one running this script."""
    with open(_requirements(name)) as handle:
        for line in handle:
            if line.startswith("# python:"):
                return line.split(":", 1)[1].strip()
    return ""


def _constraints(name: str) -> List[str]:
    """The `# pip-constraint:` lines' requirements, in order."""
    with open(_requirements(name)) as handle:
        return [line.split(":", 1)[1].strip() for line in handle if line.startswith("# pip-constraint:")]


def _interpreter(series: str) -> str:
    """The Python to make the venv with: the newest of `series` under ~/.pyenv/versions, else on PATH."""
    if not series:
        return sys.executable
    found = glob.glob(os.path.expanduser(f"~/.pyenv/versions/{series}.*/bin/python{series}"))
    found.sort(key=lambda path: [int(n) for n in path.split("/versions/")[1].split("/")[0].split(".") if n.isdigit()])
    if found:
        return found[-1]
    on_path = shutil.which(f"python{series}")
    if on_path:
        return on_path
    raise ScratchVenvError(f"no Python {series} on this machine (looked under ~/.pyenv/versions and on PATH)")


def _plain_env() -> dict:
    """Nothing of the workspace's Python environment: the scratch venv is a Python of its own."""
    drop = ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "_ROS_WHEELS_BOOTSTRAP_COMPLETE")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _stamp_wanted(name: str) -> str:
    with open(_requirements(name)) as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]
    series = _series(name)
    constraints = [f"constraint {c}" for c in _constraints(name)]
    return hashlib.sha256("\n".join([series or sys.version, *constraints, *lines]).encode()).hexdigest()


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
        log_path = os.path.join(folder, "install.log")
        try:
            python = _interpreter(_series(name))
            started = time.monotonic()
            if os.path.exists(folder):
                shutil.rmtree(folder)
            made = subprocess.run([python, "-m", "venv", folder], env=_plain_env(), capture_output=True, text=True)
            if made.returncode != 0:
                raise ScratchVenvError(f"{python} -m venv {folder} failed: {_last_line(made.stderr or made.stdout)}")
            env = _plain_env()
            if _constraints(name):  # through the environment, so pip's build environments follow them too
                env["PIP_CONSTRAINT"] = os.path.join(folder, "constraints.txt")
                with open(env["PIP_CONSTRAINT"], "w") as handle:
                    handle.write("".join(f"{c}\n" for c in _constraints(name)))
            with open(log_path, "w") as log_file:
                done = subprocess.run([python_of(name), "-m", "pip", "install", "--disable-pip-version-check",
                                       "-r", _requirements(name)], env=env, cwd=tempfile.gettempdir(),
                                      stdout=log_file, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                raise ScratchVenvError(f"pip could not install {os.path.relpath(_requirements(name), ROOT)} into "
                                       f"{folder}: {_last_line(_read(log_path))} (the whole log: {log_path})")
            size = subprocess.run(["du", "-sh", folder], capture_output=True, text=True).stdout.split("\t")[0]
            with open(log_path, "a") as log_file:
                log_file.write(f"installed in {time.monotonic() - started:.0f} s, {size or '?'}\n")
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


def made(name: str) -> Optional[str]:
    """The Python of .NAME-venv/ if it is whole and current now, else None (nothing is made or waited for)."""
    return python_of(name) if _state(name)[0] else None


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


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
