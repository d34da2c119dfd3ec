"""Fixtures of the ROS suites (helpers in ros_harness.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")

from ros_harness import policy_node, ros  # noqa: F401 - the suites' fixtures, defined beside their helpers


