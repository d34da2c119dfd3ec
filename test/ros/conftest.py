"""Fixtures of the ROS suites (helpers in ros_harness.py)."""

from __future__ import annotations

from typing import Iterator

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")

from ros_harness import PolicyNodeFactory, RosHarness


@pytest.fixture
def ros() -> Iterator[RosHarness]:
    harness = RosHarness()
    yield harness
    harness.close()


@pytest.fixture
def policy_node(tmp_path) -> Iterator[PolicyNodeFactory]:
    factory = PolicyNodeFactory(tmp_path)
    yield factory
    factory.stop_all()


