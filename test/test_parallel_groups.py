"""The parallel run keeps a module's tests on one worker where they share a fixture wider than a
test (test/conftest.py): a real `pytest -n 2` of two modules, one whose tests share a platform
started once for the module, one whose tests share nothing. (pytest 9.2 with pytest-xdist 3.8
grouped nothing, silently: each worker started the module's platform, or the ros2 CLI suite's
two-arm launch, of its own.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = "test/platform/test_plugin.py"  # its plugin_platform fixture is module-scoped
ALONE = "test/test_layers.py"  # nothing wider than a test


@pytest.mark.slow
def test_a_module_sharing_a_fixture_runs_as_one_group_on_one_worker():
    pytest_bin = str(Path(sys.executable).with_name("pytest"))
    done = subprocess.run([pytest_bin, "-n", "2", "-v", "-p", "no:cacheprovider", SHARED, ALONE],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTEST_ADDOPTS": "", "COLUMNS": "4000"})  # ids whole
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (.+?) *$", done.stdout, re.MULTILINE)
    shared = [(worker, test) for worker, test in ran if test.startswith(SHARED)]
    alone = [(worker, test) for worker, test in ran if test.startswith(ALONE)]
    assert len(shared) >= 2 and len(alone) >= 2, done.stdout[-3000:]
    assert len({worker for worker, _ in shared}) == 1, shared
    assert all(test.endswith("@test.platform.test_plugin") for _, test in shared), shared
    assert not any("@" in test for _, test in alone), alone
