"""The QoS profiles of the node's topics."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

__all__ = ["COMMANDS", "LATCHED", "LATEST"]

# ~/run_outcome, ~/warming, ~/instruction, ~/goal_refused, and the e-stop input: a late joiner
# gets the latest value.
LATCHED = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
# Joint commands: every one arrives.
COMMANDS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
# Camera and joint-state inputs: best effort, only the newest sample queued. The node reads the
# latest of each, and a deeper queue of raw frames holds transport buffers (shared memory) the
# camera driver needs for its next frames.
LATEST = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE)
