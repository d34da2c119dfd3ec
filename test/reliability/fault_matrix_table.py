"""The fault matrix's summary: test_fault_matrix.py's tests are parametrized by `fault` and
`level`; every cell's result is counted and printed as a faults × levels table of pass counts
after the run.

A plugin loaded by test/conftest.py (not a hook of this folder's conftest), so that under
pytest-xdist the controller, which prints the summary but collects nothing, counts too: each
report carries its cell (user_properties travel with it from the worker).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Tuple

import pytest

LEVEL_ORDER = ("run", "act", "next_action", "ros")
_CELL = "fault_matrix_cell"
_cells: Dict[Tuple[str, str], Dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "fault" in params and "level" in params and item.module.__name__.endswith("test_fault_matrix"):
        outcome.get_result().user_properties.append((_CELL, (params["fault"], params["level"])))


def pytest_runtest_logreport(report) -> None:
    where = dict(report.user_properties).get(_CELL)
    if where is None:
        return
    cell = _cells[tuple(where)]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        cell["skipped" if report.skipped else "passed" if report.passed else "failed"] += 1
    elif report.when == "teardown" and report.failed:
        cell["failed"] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _cells or hasattr(config, "workerinput"):  # an xdist worker: its controller prints
        return
    faults = list(dict.fromkeys(fault for fault, _ in _cells))
    levels = [level for level in LEVEL_ORDER if any(level == lv for _, lv in _cells)]
    width = max(len(f) for f in faults) + 2
    terminalreporter.section("fault matrix: passed/run per cell (s = skipped, F = a failure)")
    terminalreporter.write_line("fault".ljust(width) + "".join(level.rjust(13) for level in levels))
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for fault in faults:
        row = fault.ljust(width)
        for level in levels:
            cell = _cells.get((fault, level))
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
