"""The client on what a robot's ROS 2 distribution installs through rosdep, and on the newest
releases: each set is a scratch venv pinned in requirements/scratch/dist-*.txt (Humble: Python
3.10, httpx 0.22.0 and its httpcore 0.14, numpy 1.21.5, Pillow 9.0.1, PyYAML 5.4.1; Jazzy: Python
3.12, httpx 0.26.0, numpy 1.26.4, Pillow 10.2.0; the newest: Python 3.13 and today's releases),
made in the background by `scripts/workspace.sh test` (scripts/scratch_venv.py).

In each, a named subset of the client's own tests runs, on a copy of the client with encode()'s
resampler compiled for the set's Python as colcon compiles it on a robot: connect, run, reconnect,
TLS pinning, the gateway through a proxy, httpcore's API, observation and encode. The local
platform they talk to runs in this venv (SEQUENCES_PLATFORM_PYTHON): its [serve] extra is no part
of a robot's set. The node's modules and the launch files are compiled by the set's Python too
(Humble's is 3.10). A machine without the set's Python skips, saying so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scratch import scratch_env, scratch_python

ROOT = Path(__file__).resolve().parents[1]
SETS = ("dist-humble", "dist-jazzy", "dist-newest")
# The subset, by what it covers; each id is run as it stands in its file.
SUBSET = {
    "connect": ["test/client/test_connect.py::test_connect_sends_nothing_until_the_first_request",
                "test/client/test_faults.py::test_key_rejected_on_connect_is_auth_error"],
    "run": ["test/client/loop/test_run_basic.py::test_run_completes_max_actions_without_hold"],
    "reconnect": ["test/client/test_faults.py::test_restarted_worker_is_reconnected_transparently",
                  "test/client/test_faults.py::test_dropped_connection_is_replayed"],
    "TLS pinning": ["test/client/net/test_tls.py",
                    "test/client/test_faults.py::test_cert_pin_mismatch_fails_closed_and_is_never_retried"],
    "proxy": ["test/client/net/test_gateway_proxy.py"],
    "httpcore's API": ["test/client/net/test_httpcore_api.py"],
    "observation": ["test/client/vision/test_observation.py"],
    "encode": ["test/client/vision/test_encode.py", "test/client/vision/test_resample.py"],
}
# What each set must really have imported: the pins the set is about (its requirements file says the rest).
PINNED = ("httpx", "httpcore", "numpy", "pillow", "pyyaml")
REPORT = """
import json, sys, httpx, httpcore, numpy, PIL, yaml, sequence_ai
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "httpx": httpx.__version__,
                  "httpcore": httpcore.__version__, "numpy": numpy.__version__, "pillow": PIL.__version__,
                  "pyyaml": yaml.__version__, "client": sequence_ai.__file__}))
"""
COMPILE = """
import sys
from pathlib import Path
for path in sys.argv[1:]:
    compile(Path(path).read_text(), path, "exec")
"""

pytestmark = pytest.mark.scratch


def _wanted(name: str) -> dict:
    text = (ROOT / "requirements" / "scratch" / f"{name}.txt").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.M))
    wanted = {key: pins[key] for key in PINNED if key in pins}
    wanted["python"] = re.search(r"^# python: (\S+)", text, flags=re.M).group(1)
    return wanted


def _client_built_for(python: str, folder: Path) -> Path:
    """A copy of the client with encode()'s resampler compiled for `python`, as colcon compiles it
    on a robot (CMakeLists.txt: only Python's headers)."""
    shutil.copytree(ROOT / "sequence_ai", folder / "sequence_ai", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    where = subprocess.run([python, "-c", "import json, sysconfig; print(json.dumps([sysconfig.get_paths()['include'], "
                            "sysconfig.get_config_var('EXT_SUFFIX')]))"], capture_output=True, text=True, check=True)
    include, suffix = json.loads(where.stdout)
    vision = folder / "sequence_ai" / "_vision"
    built = subprocess.run([shutil.which("cc") or "cc", "-O3", "-Wall", "-shared", "-fPIC", f"-I{include}",
                            str(vision / "_resample.c"), "-o", str(vision / f"_resample{suffix}")],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, f"the resampler does not compile for {python}:\n{built.stderr[-2000:]}"
    return folder


@pytest.mark.parametrize("name", SETS)
def test_the_client_subset_passes_on_the_distribution_set(name, tmp_path):
    python = scratch_python(name)
    client = _client_built_for(python, tmp_path)
    # the tree's modules compiled by three Pythons would leave their bytecode beside them
    env = {**scratch_env(), "PYTHONPATH": str(client), "SEQUENCES_PLATFORM_PYTHON": sys.executable,
           "PYTHONDONTWRITEBYTECODE": "1"}
    report = subprocess.run([python, "-c", REPORT], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert report.returncode == 0, report.stderr
    seen = json.loads(report.stdout)
    assert seen.pop("client") == str(client / "sequence_ai" / "__init__.py")
    wanted = _wanted(name)
    assert {key: seen[key] for key in wanted} == wanted

    sources = [str(p) for folder in ("sequence_ai", "sequence_ai_ros", "launch") for p in (ROOT / folder).rglob("*.py")]
    compiled = subprocess.run([python, "-c", COMPILE, *sources], capture_output=True, text=True, env=env, timeout=120)
    assert compiled.returncode == 0, f"Python {wanted['python']} cannot compile the package:\n{compiled.stderr[-2000:]}"

    tests = [test for ids in SUBSET.values() for test in ids]
    # The venv's pytest script, not `python -m pytest`, which would put this tree before the copy.
    done = subprocess.run([str(Path(python).parent / "pytest"), "-q", "-p", "no:cacheprovider", *tests],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, f"{name} ({seen}):\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    assert re.fullmatch(r"\d+ passed in .*", summary), f"{name}: something was skipped or not run: {summary}"
