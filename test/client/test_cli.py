"""`sequence-ai` against the local platform: output shapes, the redacted key, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sequence_ai import __version__, cli
from sequence_ai.platform.spawn import LocalPlatform

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def env_of(monkeypatch):
    def apply(platform, key=None):
        monkeypatch.setenv("SEQUENCES_BASE_URL", platform.base_url)
        monkeypatch.setenv("SEQUENCES_API_KEY", key if key is not None else platform.api_key)
    return apply


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sequence-ai {__version__}"


def test_no_subcommand_and_bad_options_are_usage_errors(capsys):
    assert cli.main([]) == 2
    assert "usage: sequence-ai" in capsys.readouterr().err
    assert cli.main(["models", "--endpoint", "nonsense"]) == 2
    assert cli.main(["frobnicate"]) == 2


def test_models_table_needs_no_key(platform, monkeypatch, capsys):
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    assert cli.main(["--base-url", platform.base_url, "models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{'model':<30}{'robot':<24}{'dim':>4}{'hz':>6}  views"
    assert lines[1].startswith("cosmos3-edge-policy-droid")  # act rows sorted by short id
    pi05 = next(line for line in lines if line.startswith("pi05-droid"))
    assert pi05 == f"{'pi05-droid':<30}{'droid_franka':<24}{'8':>4}{'15':>6}  exterior_1, wrist_left"
    assert "" in lines  # non-act rows follow a blank line
    assert any(line.split() == ["jev", "decide", "scorer"] for line in lines)


def test_models_of_one_endpoint(platform, capsys):
    assert cli.main(["--base-url", platform.base_url, "models", "--endpoint", "perceive"]) == 0
    out = capsys.readouterr().out
    assert "grounding-dino-base" in out and "pi05-droid" not in out


def test_models_unreachable_is_an_error_on_stderr(capsys):
    assert cli.main(["--base-url", "http://127.0.0.1:9", "models"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: could not reach http://127.0.0.1:9")


def test_doctor_ready_with_the_key_redacted(platform, env_of, capsys):
    env_of(platform)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    key = platform.api_key
    assert key not in out
    assert f"SEQUENCES_API_KEY  ({key[:9]}…{key[-4:]})" in out
    assert f"gateway     {platform.base_url}" in out  # SEQUENCES_BASE_URL honoured
    assert "key valid     yes" in out
    assert "worker up, cert pinned, lease" in out
    for label in ("new connection each call", "one reused connection", "saved by keeping it open"):
        assert label in out and " ms" in out.split(label)[1].splitlines()[0]
    assert out.rstrip().endswith("ready")


def test_doctor_rejected_key_is_a_problem(platform, env_of, capsys):
    env_of(platform, key="seq_test_wrongwrongwrong9z9z")
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "NO — the gateway rejected this key" in out and "wrongwrongwrong" not in out
    assert out.rstrip().endswith("1 problem(s) above")


def test_doctor_missing_key_and_unreachable_gateway(monkeypatch, capsys):
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    monkeypatch.setenv("SEQUENCES_BASE_URL", "http://127.0.0.1:9")
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "MISSING — set SEQUENCES_API_KEY" in out and "UNREACHABLE" in out


def test_doctor_shows_warming_as_progress(env_of, capsys):
    with LocalPlatform("--cold-start", "2", "--cold-eta", "2") as cold:
        env_of(cold)
        assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "worker loading" in out and "retry in" in out
    assert out.rstrip().endswith("ready")


def test_doctor_gives_up_warming_after_wait(env_of, capsys):
    with LocalPlatform("--cold-start", "30") as cold:
        env_of(cold)
        assert cli.main(["doctor", "--wait", "1"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_ctrl_c_is_exit_130(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_doctor", interrupted)
    assert cli.main(["doctor"]) == 130
    assert capsys.readouterr().err.strip() == "cancelled"


def test_serve_without_its_extra_names_the_install(tmp_path):
    blocker = "import sys; sys.modules['fastapi'] = None; from sequence_ai.cli import main; sys.exit(main(['serve']))"
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 1
    assert "pip install 'fastapi>=0.110' 'uvicorn>=0.29' 'cryptography>=42' 'pillow>=10' 'numpy>=1.23' (the [serve] extra)" in done.stderr, done.stderr


def test_console_script_entry_point_runs(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sequence_ai.cli", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.stdout.strip() == f"sequence-ai {__version__}"


def test_doctor_reports_a_certificate_that_does_not_match_the_pin(platform, env_of, capsys):
    env_of(platform)
    platform.fault("bad_fingerprint", route="connect", count=1)
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "CERT PIN MISMATCH" in out and "latency" not in out


def test_doctor_does_not_need_the_worker_to_serve_ping(platform, env_of, capsys):
    env_of(platform)
    platform.fault("status", code=501, route="ping")  # a worker need not serve GET /ping (0.20.0 never calls it)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "worker up, cert pinned, lease" in out and "new connection each call" in out
    assert out.rstrip().endswith("ready")
    assert "GET /ping" not in platform.stats()["worker"]  # measured with POST /act, which every worker serves


def test_doctor_shows_network_time_not_the_time_to_build_clients(platform, env_of, capsys, monkeypatch):
    import httpx

    from sequence_ai._net import _http11

    slow_s = 0.4  # building a client (its TLS context) is slow on a loaded robot; it is not the network
    for cls in (httpx.Client, _http11.PinnedClient):
        real_init = cls.__init__

        def slow_init(self, *args, _real=real_init, **kwargs):
            time.sleep(slow_s)
            _real(self, *args, **kwargs)
        monkeypatch.setattr(cls, "__init__", slow_init)
    env_of(platform)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    shown = {label: float(out.split(label)[1].split(" ms")[0].split("(")[-1].split()[-1])
             for label in ("gateway       up (", "new connection each call")}
    assert all(ms < slow_s * 1000 for ms in shown.values()), shown


def test_doctor_prints_a_credit_line_when_the_account_has_no_balance():
    import io

    from sequence_ai._doctor import _credit, _Report

    out = io.StringIO()
    report = _Report(out)
    _credit({"object": "list", "data": []}, report)  # what a 0.20.0 mock's /v1/account answers
    assert out.getvalue().split()[:2] == ["credit", "not"] and report.problems == 0


def test_doctor_on_the_mock_tier_needs_no_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SEQUENCES_API_KEY"}
    env.update(SEQUENCES_BASE_URL="mock", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "sequence_ai", "doctor"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "key valid     yes" in done.stdout and done.stdout.rstrip().endswith("ready")


def test_unreachable_gateway_hints_at_the_base_url(capsys):
    assert cli.main(["--base-url", "http://127.0.0.1:9", "models"]) == 1
    err = capsys.readouterr().err
    assert "SEQUENCES_BASE_URL" in err and "sequence-ai serve" in err and "SEQUENCES_BASE_URL=mock" in err
    assert cli.main(["--base-url", "http://127.0.0.1:9", "doctor"]) == 1
    assert "SEQUENCES_BASE_URL=mock" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["models"], ["doctor"]])
def test_output_into_a_closed_pipe_is_no_traceback(platform, command):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (`| head`) has gone before the first line
    env = {**os.environ, "PYTHONPATH": ROOT, "SEQUENCES_BASE_URL": platform.base_url,
           "SEQUENCES_API_KEY": platform.api_key}
    try:
        done = subprocess.run([sys.executable, "-m", "sequence_ai", *command], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141
