"""`python -m sequence_ai.platform`: what it prints, what it refuses, how it stops."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys

import httpx
import psutil
import pytest
from platform_helpers import act_body, connect, worker

from sequence_ai.platform.spawn import LocalPlatform

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONPATH": ROOT}


def _start(*args):
    return subprocess.Popen([sys.executable, "-m", "sequence_ai.platform", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=ENV, cwd=ROOT, text=True)


def test_json_line_first_then_a_clean_stop_on_sigterm():
    proc = _start("--json", "--api-key", "seq_test_given")
    coords = json.loads(proc.stdout.readline())
    assert set(coords) == {"base_url", "api_key", "admin_token", "worker_url", "pid"}
    assert coords["api_key"] == "seq_test_given" and coords["pid"] == proc.pid
    assert coords["base_url"].startswith("http://127.0.0.1:") and coords["worker_url"].startswith("https://127.0.0.1:")
    r = httpx.get(coords["base_url"] + "/v1/account", headers={"Authorization": "Bearer seq_test_given"})
    assert r.status_code == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0


def test_human_output_says_what_to_export_and_ctrl_c_stops_it():
    proc = _start()
    lines = [proc.stdout.readline() for _ in range(3)]
    assert "export SEQUENCES_BASE_URL=http://127.0.0.1:" in lines[1]
    assert "export SEQUENCES_API_KEY=seq_test_" in lines[2]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0


def test_keys_from_the_environment_are_all_accepted():
    env = {**ENV, "SEQUENCES_LOCAL_KEYS": "seq_test_one, seq_test_two"}
    proc = subprocess.Popen([sys.executable, "-m", "sequence_ai.platform", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=ROOT, text=True)
    try:
        coords = json.loads(proc.stdout.readline())
        for key in ("seq_test_one", "seq_test_two"):
            assert httpx.get(coords["base_url"] + "/v1/account", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_non_loopback_host_or_a_bad_policy_is_refused():
    for args, words in ((["--host", "0.0.0.0"], "loopback"), (["--policy", "nowhere"], "package.module:callable"),
                        (["--policy", "no_such_module_xyz:fn"], "cannot import")):
        proc = _start(*args)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 2 and words in err


def test_fault_flags_at_start():
    with LocalPlatform("--cold-start", "30", "--warming-form", "code", "--lease-ttl", "3") as p:
        r = httpx.post(p.base_url + "/v1/act/connect", json={"model": "pi05-droid"},
                       headers={"Authorization": f"Bearer {p.api_key}"})
        assert r.status_code == 503 and r.json()["code"] == "warming"
        p.clear_faults("warming")
        assert connect(p)["lease"]["ttl_s"] == 3.0


def _console_script() -> list:
    """`sequence-ai` as installed next to this interpreter, else its entry point (pyproject.toml:
    sequence-ai = sequence_ai.cli:main) run the same way the generated script runs it."""
    script = os.path.join(os.path.dirname(sys.executable), "sequence-ai")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "sequence_ai.cli"]


def test_sequence_ai_serve_answers_and_stops_cleanly_on_ctrl_c():
    proc = subprocess.Popen([*_console_script(), "serve", "--gateway-port", "0", "--worker-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=ROOT, text=True)
    try:
        printed = dict(line.strip().removeprefix("export ").split("=", 1)
                       for line in (proc.stdout.readline() for _ in range(3)) if "export " in line)
        base_url, key = printed["SEQUENCES_BASE_URL"], printed["SEQUENCES_API_KEY"]
        assert httpx.get(base_url + "/v1/health", timeout=5).json()["ok"] is True
        assert httpx.get(base_url + "/v1/account", headers={"Authorization": f"Bearer {key}"}, timeout=5).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_fault_flag_arms_any_admin_fault_at_start():
    with LocalPlatform("--fault", "status_500:count=1", "--fault", "lease_ttl:ttl_s=7") as p:
        answer = connect(p)
        assert answer["lease"]["ttl_s"] == 7.0
        with worker(answer) as w:
            statuses = [w.post("/act", json=act_body()).status_code for _ in range(3)]
        assert statuses == [500, 200, 200]
        assert p.admin("GET", "faults").json()["faults"] == []


@pytest.mark.parametrize(("flag", "words"), [("nope", "'nope'"), ("latency:ms", "not key=value"),
                                             ("busy:colour=red", "colour"), ("warming:count=1", "happens at once")])
def test_a_fault_flag_the_admin_api_would_refuse_stops_the_start(flag, words):
    proc = _start("--fault", flag)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2 and words in err, err


def test_the_client_package_never_imports_the_platform():
    # Import every client module that imports today (the client is being written concurrently).
    code = ("import importlib, pkgutil, sys, sequence_ai\n"
            "for m in pkgutil.iter_modules(sequence_ai.__path__):\n"
            "    if m.name != 'platform':\n"
            "        try: importlib.import_module('sequence_ai.' + m.name)\n"
            "        except Exception: pass\n"
            "bad = [m for m in sys.modules if m.startswith(('sequence_ai.platform', 'fastapi', 'uvicorn'))]\n"
            "print(bad); sys.exit(1 if bad else 0)")
    run = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_cli_main_is_importable_for_the_serve_subcommand():
    from sequence_ai.platform.cli import main

    assert main(["--host", "192.0.2.1"]) == 2


def _command_lines_holding(secret: str) -> list:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if secret in line:
            found.append((proc.info["pid"], line))
    return found


def test_the_key_is_on_no_command_line_at_start_or_after_a_restart():
    # Any user can read any process's command line (`ps`); only the owner its environment.
    key = "seq_test_" + secrets.token_hex(16)
    with LocalPlatform(api_key=key) as p:
        for moment in ("start", "restart"):
            if moment == "restart":
                p.restart()
            assert p.api_key == key
            assert httpx.get(p.base_url + "/v1/account", headers={"Authorization": f"Bearer {key}"}).status_code == 200
            assert _command_lines_holding(key) == [], f"the key is on a command line after {moment}"
            assert _command_lines_holding(p.admin_token) == [], f"the admin token is on a command line after {moment}"
