"""Fixtures shared by every suite: the local Sequences platform in a subprocess.

    local_platform   session-scoped: one platform for the whole run (of each xdist worker)
    platform         the session platform after clear_faults(), so a test's faults never leak
    fresh_platform   a platform of its own, for tests that restart, kill or stop things

Run in parallel (pytest-xdist: `scripts/workspace.sh test` starts three workers; `-n N` alone
means `--dist loadgroup` here), each worker has a ROS domain of its own (the run's
ROS_DOMAIN_ID plus its number: scripts/ros_domains.py), a temp dir of its own (TMPDIR, inside
pytest's basetemp) and its own local platform. The tests of a module that shares a fixture wider
than one test (a node, a launched system) stay on one worker: an `xdist_group` named after the
module is set here, for any such module. A test marked `alone` runs while no other test does.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Iterator

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # --import-mode=importlib leaves sys.path alone; the package may not be installed
    # Appended, not prepended: in the ROS workspace the installed sequence_ai_ros (which holds the
    # generated interfaces) must win over the source directory of the same name.
    sys.path.append(_ROOT)

from sequence_ai.platform.spawn import LocalPlatform

# Hooks that must run where the summary is printed (xdist's controller collects nothing, so the
# conftest files of the folders below are never loaded there).
pytest_plugins = ("fault_matrix_table",)

sys.path.insert(0, os.path.join(_ROOT, "scripts"))
from ros_domains import worker_domain

sys.path.pop(0)

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... under xdist, else empty
if _WORKER:
    # Before anything starts a ROS context or a node process: they read the domain then.
    os.environ["ROS_DOMAIN_ID"] = str(worker_domain(int(os.environ.get("ROS_DOMAIN_ID", "0")), int(_WORKER[2:])))


@pytest.fixture(scope="session", autouse=True)
def worker_temp_dir(tmp_path_factory) -> Iterator[str]:
    """TMPDIR of this worker (or run): inside pytest's basetemp, so nothing a test or a process it
    starts writes to a temp dir meets another worker's, and pytest cleans it up with the rest."""
    path = str(tmp_path_factory.mktemp("tmpdir", numbered=False))
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = path
    tempfile.tempdir = None  # tempfile caches the directory it found first
    yield path
    if saved is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved
    tempfile.tempdir = None


@pytest.fixture(scope="session")
def local_platform() -> Iterator[LocalPlatform]:
    with LocalPlatform() as running:
        yield running


@pytest.fixture
def platform(local_platform: LocalPlatform) -> Iterator[LocalPlatform]:
    if not local_platform.running:  # a test killed it by mistake: bring it back for the next ones
        local_platform.restart()
    local_platform.reset()
    yield local_platform
    if local_platform.running:
        local_platform.clear_faults()


@pytest.fixture
def fresh_platform() -> Iterator[LocalPlatform]:
    with LocalPlatform() as running:
        yield running


# -- parallel runs --------------------------------------------------------------------------------

_SHARED_SCOPES = ("class", "module", "package")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config) -> None:
    """`-n N` without `--dist`: loadgroup, so the groups below hold. (Not in pytest.ini's addopts:
    a run without xdist installed, as test_python_versions.py makes, would refuse the option.) A
    worker parses the command line again, without this: it is told by pytest_configure_node."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False  # the order of pytest_collection_modifyitems below
    if getattr(config, "workerinput", {}).get("sequences_loadgroup"):
        config.option.loadgroup = True  # read by xdist's worker when it names each test's group


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["sequences_loadgroup"] = node.config.option.dist == "loadgroup"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items) -> None:
    """Keep a module's tests on one worker when they share a fixture wider than a test (a node or
    a launched system started once for the module): without it, each worker that ran one of them
    would start its own."""
    for item in items:
        definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if item.get_closest_marker("xdist_group") is None and any(
                d.scope in _SHARED_SCOPES for defs in definitions.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
    # The order xdist hands the tests out in (each group as one unit, where its first test stands;
    # its own size-first reordering is turned off above): the modules with long tests first, so
    # that none of them starts last and keeps one worker busy after the others are done; then the
    # ones that wait for a scratch venv (marked `scratch`), made in the background from the start
    # of the run, by now ready; then the rest. Stable: each module's tests in their own order,
    # which some rely on.
    slow = {item.module for item in items if item.get_closest_marker("slow") is not None}
    scratch = {item.module for item in items if item.get_closest_marker("scratch") is not None}
    items.sort(key=lambda item: 1 if item.module in scratch else 0 if item.module in slow else 2)


@pytest.fixture(autouse=True)
def _alone_or_together(request, tmp_path_factory) -> Iterator[None]:
    """A test marked `alone` runs while no other test of the run does, on any worker; the others
    run side by side. (A shared lock for each test, an exclusive one for an `alone` test, behind a
    turnstile so a waiting `alone` test is not starved by the others taking turns.)"""
    if not _WORKER:
        yield
        return
    import fcntl

    folder = tmp_path_factory.getbasetemp().parent  # the run's basetemp, above each worker's
    alone = request.node.get_closest_marker("alone") is not None
    with open(folder / "alone.turnstile", "a") as turnstile, open(folder / "alone.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
