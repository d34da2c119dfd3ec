"""The reliability suites: fault matrix (summary table printed at the end of the session), soak,
wire fuzzing, ROS inputs, secrets.

Tests of the fault matrix are parametrized by `fault` and `level`; every cell's result is
collected here and printed as a faults × levels table of pass counts after the run.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Tuple

import pytest

try:  # the ROS suites' fixtures `ros` and `policy_node` (test_ros_estop.py); absent without rclpy
    from ros_harness import policy_node, ros  # noqa: F401
except ImportError:
    pass

LEVEL_ORDER = ("run", "act", "next_action", "ros")
_cells = pytest.StashKey[Dict[Tuple[str, str], Dict[str, int]]]()


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "soak: the long soak (minutes); `make test` skips it, run it with -m soak")
    config.stash[_cells] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "fault" not in params or "level" not in params:
        return
    cell = item.config.stash[_cells][(params["fault"], params["level"])]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        cell["skipped" if report.skipped else "passed" if report.passed else "failed"] += 1
    elif report.when == "teardown" and report.failed:
        cell["failed"] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    cells = config.stash.get(_cells, None)
    if not cells:
        return
    faults = list(dict.fromkeys(fault for fault, _ in cells))
    levels = [level for level in LEVEL_ORDER if any(level == lv for _, lv in cells)]
    width = max(len(f) for f in faults) + 2
    terminalreporter.section("fault matrix: passed/run per cell (s = skipped, F = a failure)")
    terminalreporter.write_line("fault".ljust(width) + "".join(level.rjust(13) for level in levels))
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for fault in faults:
        row = fault.ljust(width)
        for level in levels:
            cell = cells.get((fault, level))
            if cell is None:
                text = "-"
            else:
                for key in totals:
                    totals[key] += cell[key]
                ran = cell["passed"] + cell["failed"]
                text = f"{cell['passed']}/{ran}" if ran else "s"
                text += " F" if cell["failed"] else ""
            row += text.rjust(13)
        terminalreporter.write_line(row)
    terminalreporter.write_line(
        f"{totals['passed']} cells passed, {totals['failed']} failed, {totals['skipped']} skipped")


def pytest_collection_modifyitems(config, items) -> None:
    if "soak" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the long soak runs only when asked: -m soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)
