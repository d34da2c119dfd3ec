"""The reliability suites: fault matrix (its summary table: fault_matrix_table.py), soak, wire
fuzzing, ROS inputs, secrets."""

from __future__ import annotations

import pytest

try:  # the ROS suites' fixtures `ros` and `policy_node` (test_ros_estop.py); absent without rclpy
    from ros_harness import policy_node, ros  # noqa: F401
except ImportError:
    pass


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "soak: the long soak (minutes); `make test` skips it, run it with -m soak")


def pytest_collection_modifyitems(config, items) -> None:
    if "soak" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the long soak runs only when asked: -m soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)
