"""An e-stop publisher in a process of its own, as a pendant or a dashboard would be: a node that
publishes std_msgs/Bool latched (RELIABLE + TRANSIENT_LOCAL) on TOPIC, first VALUE, then each
`true` / `false` line read from stdin; it prints `published <value>` after each.

    python estop_pendant.py /arm1/estop true
"""

from __future__ import annotations

import itertools
import sys

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from sequence_ai_ros.spinning import Spinning

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def main() -> None:
    topic, first = sys.argv[1], sys.argv[2]
    with Spinning() as spun:
        node = spun.create_node(f"estop_pendant_{first}")
        publisher = node.create_publisher(Bool, topic, LATCHED)
        spun.spin([node])
        for line in itertools.chain([first], sys.stdin):  # stdin line by line, as it comes
            value = line.strip().lower()
            if value in ("true", "false"):
                publisher.publish(Bool(data=value == "true"))
                print(f"published {value}", flush=True)


if __name__ == "__main__":
    main()
