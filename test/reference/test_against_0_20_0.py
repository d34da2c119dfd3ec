"""Behaviour of the public 0.20.0 client next to ours, for the claims docs make about it.

Runs the public `sequence-ai[image]==0.20.0` from a Python of its own: `.bench-venv/`, which
`scripts/workspace.sh test` makes in the background while the suite starts
(scripts/scratch_venv.py, requirements/scratch/bench.txt), or SEQUENCES_REFERENCE_PYTHON set to
any Python that has it. Nothing of that package is kept here, it is only run.

    scripts/workspace.sh test test/reference
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from sequence_ai import cli

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(_ROOT, "scripts"))
import scratch_venv

sys.path.pop(0)

REFERENCE = os.environ.get("SEQUENCES_REFERENCE_PYTHON", "")
pytestmark = pytest.mark.scratch


@pytest.fixture(autouse=True, scope="module")
def _reference_python() -> None:
    """Wait for the scratch venv while it is being made; skip, in one line, where there is none."""
    if not REFERENCE:
        pytest.skip("SEQUENCES_REFERENCE_PYTHON (a Python with sequence-ai==0.20.0) not set: "
                    "run through scripts/workspace.sh test, which makes .bench-venv/")
    if os.path.abspath(REFERENCE) == scratch_venv.python_of("bench"):
        made = scratch_venv.ready("bench")
        if isinstance(made, scratch_venv.ScratchVenvError):
            pytest.skip(f"no sequence-ai 0.20.0 to compare with: {made}")
    elif not os.path.exists(REFERENCE):
        pytest.skip(f"SEQUENCES_REFERENCE_PYTHON={REFERENCE} does not exist")


# One predict, then (optionally) a worker restart of the given shape through the admin API, then
# another predict; prints what happened as one JSON line.
DRIVE = textwrap.dedent("""
    import base64, io, json, os, sys
    import httpx, sequence_ai
    from PIL import Image
    buffer = io.BytesIO()
    Image.new("RGB", (224, 224), (90, 120, 110)).save(buffer, format="JPEG", quality=95)
    frame = base64.b64encode(buffer.getvalue()).decode()
    obs = sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=frame) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]), instruction="x")
    seen = {}
    with sequence_ai.connect(model="pi05-droid") as policy:
        seen["before"] = policy.contract
        policy.predict(obs)
        seen["contract"] = policy.contract
        same_port = sys.argv[1] == "same"
        httpx.post(os.environ["SEQUENCES_BASE_URL"] + "/admin/faults", timeout=30,
                   headers={"X-Admin-Token": os.environ["ADMIN_TOKEN"]},
                   json={"kind": "restart_worker", "same_port": same_port})
        try:
            policy.predict(obs)
            seen["after_restart"] = "ok"
        except Exception as exc:
            seen["after_restart"] = type(exc).__name__
    print(json.dumps(seen))
""")

SERVE_MOCK = "import sys, sequence_ai; print(sequence_ai._resolve_base_url('mock'), flush=True); sys.stdin.read()"


def _reference(args, env=None, **kwargs):
    clean = {k: v for k, v in (env or os.environ).items() if k != "PYTHONPATH"}
    return subprocess.run([REFERENCE, *args], env=clean, cwd="/", capture_output=True, text=True, timeout=120,
                          **kwargs)


@pytest.mark.parametrize("shape, outcome", [("same", "CertPinError"), ("new", "ok")])
def test_reference_after_a_worker_restart(fresh_platform, tmp_path, shape, outcome):
    script = tmp_path / "drive.py"
    script.write_text(DRIVE)
    env = {**os.environ, **fresh_platform.env(), "ADMIN_TOKEN": fresh_platform.admin_token}
    done = _reference([str(script), shape], env=env)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["before"] is None and sorted(seen["contract"]) == ["action", "embodiment", "observation"]
    # Same address, new certificate: 0.20.0's pooled connection reconnects under the old pin.
    # Ours goes back through the gateway in both shapes (test/reliability/test_fault_matrix.py).
    assert seen["after_restart"] == outcome


def test_our_doctor_against_the_references_own_mock(monkeypatch, capsys):
    server = subprocess.Popen([REFERENCE, "-c", SERVE_MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd="/", env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    try:
        base_url = server.stdout.readline().strip()
        monkeypatch.setenv("SEQUENCES_API_KEY", "seq_test_doctorprobe0001")
        assert cli.main(["--base-url", base_url, "doctor"]) == 0
    finally:
        server.stdin.close()
        server.wait(10)
    out = capsys.readouterr().out
    assert "backend=mock" in out and "credit" in out and "new connection each call" in out
    assert out.rstrip().endswith("ready")
