"""The mock tier: SEQUENCES_BASE_URL=mock (or base_url="mock", "mock:…") runs a script against a
local platform started for its process — no key, no network — and stops it when the process ends,
however it ends. Each scenario is a real child process, as a user's script would be."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from eventually import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = textwrap.dedent("""
    import json, os, sys
    import sequence_ai
    sys.path.insert(0, {client_tests!r})
    from _loop_robot import observation

    with sequence_ai.connect(model="pi05-droid") as policy:        # no key anywhere
        prediction = policy.predict(observation())
    rows = [m.short_id for m in sequence_ai.models("act", base_url="mock:second-name")]
    account = sequence_ai.account()
    from sequence_ai._net import _mock
    print(json.dumps({{"steps": len(prediction.action_chunk), "rows": rows, "balance": account["balance"],
                      "platform_pid": _mock.local_platform().pid, "base_url": policy._link.base_url,
                      "imported_platform": any(m.startswith("sequence_ai.platform") for m in sys.modules)}}),
          flush=True)
    if "--linger" in sys.argv:
        sys.stdin.read()
""")


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SEQUENCES_API_KEY", "SEQUENCES_BASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _script(tmp_path) -> str:
    path = tmp_path / "my_loop.py"
    path.write_text(SCRIPT.format(client_tests=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return str(path)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # an exited process its new parent has not reaped yet is a zombie: it runs nothing
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (not Linux): kill(pid, 0) is all there is


def _gone(pid: int, within_s: float = 15.0) -> bool:
    return wait_until(lambda: not _running(pid), within_s, poll_s=0.05) is not None


def test_mock_runs_a_script_with_no_key_and_stops_the_platform_at_exit(tmp_path):
    # A live key in the environment is not the platform's: sent to it, connect would get 401.
    env = _env(SEQUENCES_BASE_URL="mock", SEQUENCES_API_KEY="seq_live_notthemockskey0000")
    done = subprocess.run([sys.executable, _script(tmp_path)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["steps"] == 15 and "pi05-droid" in seen["rows"] and seen["balance"]["balance"] > 0
    assert seen["base_url"].startswith("http://127.0.0.1:")  # one platform for every "mock…" spelling
    assert not seen["imported_platform"], "the client ran the platform; it must never import it"
    assert "local platform at " + seen["base_url"] in done.stderr  # says where "mock" went
    assert _gone(seen["platform_pid"]), "the platform outlived the script"


def test_a_killed_script_takes_its_platform_with_it(tmp_path):
    child = subprocess.Popen([sys.executable, _script(tmp_path), "--linger"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(SEQUENCES_BASE_URL="mock"),
                             cwd=tmp_path)
    try:
        seen = json.loads(child.stdout.readline())
        os.kill(child.pid, signal.SIGKILL)  # no atexit, no finally: only the guard's pipe notices
        child.wait(10)
        assert _gone(seen["platform_pid"]), "a SIGKILLed script left its platform running"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _children(pid: int) -> list:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _environ(pid: int) -> dict:
    with open(f"/proc/{pid}/environ", "rb") as environ:
        pairs = [item.split(b"=", 1) for item in environ.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process tree from /proc (Linux)")
@pytest.mark.parametrize("killed", ["the guard", "the script and the guard"])
def test_a_killed_guard_takes_the_platform_and_its_worker_with_it(tmp_path, killed):
    key = "seq_live_theusersrealkey0000"
    child = subprocess.Popen([sys.executable, _script(tmp_path), "--linger"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=_env(SEQUENCES_BASE_URL="mock", SEQUENCES_API_KEY=key), cwd=tmp_path)
    try:
        seen = json.loads(child.stdout.readline())
        platform = seen["platform_pid"]
        [guard] = [pid for pid in _children(child.pid) if platform in _children(pid)]
        workers = _children(platform)
        assert workers, "the platform has no worker process"
        # The user's key is not the platform's business: neither the guard nor the platform has it.
        for pid in (guard, platform, *workers):
            assert "SEQUENCES_API_KEY" not in _environ(pid), f"process {pid} was given the user's key"
        if killed == "the script and the guard":
            os.kill(child.pid, signal.SIGKILL)
        os.kill(guard, signal.SIGKILL)  # no handler, no finally: only the pipe the platform holds says so
        for pid in (platform, *workers):
            assert _gone(pid, 20.0), f"process {pid} outlived {killed} (SIGKILL)"
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


@pytest.mark.parametrize("command", [
    ["-c", "import sequence_ai; sequence_ai.connect('pi05-droid', base_url='mock')"],
    ["-m", "sequence_ai", "models"],
])
def test_without_the_serve_extra_mock_says_what_to_install(tmp_path, command):
    blocked = tmp_path / "sitecustomize.py"  # as if fastapi were not installed
    blocked.write_text("import sys\nsys.modules['fastapi'] = None\n")
    env = _env(SEQUENCES_BASE_URL="mock")
    env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), env["PYTHONPATH"]))
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert done.returncode == 1
    assert "pip install 'fastapi>=0.110' 'uvicorn>=0.29' 'cryptography>=42' 'pillow>=10' 'numpy>=1.23' (the [serve] extra)" in done.stderr, done.stderr
    assert "ServeExtraMissing" in done.stderr or done.stderr.startswith("error: ")
