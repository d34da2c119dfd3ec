"""An e-stop publisher in a process of its own, as a pendant or a dashboard would be: a node that
publishes std_msgs/Bool latched (RELIABLE + TRANSIENT_LOCAL) on TOPIC, first FIRST, then each line
read from stdin; it prints `published <value> <ns>` after each, `<ns>` being this process's wall
clock (time.time_ns(), the clock of DDS source stamps) read just before the publish.

    python estop_pendant.py /arm1/estop true

A line (or FIRST) is `true`, `false`, `truncated` (a message cut short: the 4-byte CDR header
and no value), or `none` (publish nothing: a publisher that is there and silent). FIRST may also
be `flood:HZ`: publish `false` HZ times a second until stdin closes (a dashboard in a tight loop);
it prints `flooding` once it has begun and `flooded <count>` at the end.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from sequence_ai_ros.spinning import Spinning

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TRUNCATED = b"\x00\x01\x00\x00"  # CDR little-endian header, then nothing


def flood(publisher, hz: float) -> None:
    """`false` at `hz` on a fixed schedule (a late wake-up publishes the missed ones at once)
    until stdin closes."""
    ended = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), ended.set()), daemon=True).start()
    message, count, period = Bool(data=False), 0, 1.0 / hz
    due = time.monotonic()
    print("flooding", flush=True)
    while not ended.is_set():
        publisher.publish(message)
        count += 1
        due += period
        wait = due - time.monotonic()
        if wait > 0:
            ended.wait(wait)  # the schedule, or at once when stdin closes
    print(f"flooded {count}", flush=True)


def main() -> None:
    topic, first = sys.argv[1], sys.argv[2]
    with Spinning() as spun:
        node = spun.create_node(f"estop_pendant_{first.split(':')[0]}")
        publisher = node.create_publisher(Bool, topic, LATCHED)
        spun.spin([node])
        if first.startswith("flood:"):
            flood(publisher, float(first.split(":")[1]))
            return
        for line in itertools.chain([first], sys.stdin):  # stdin line by line, as it comes
            value = line.strip().lower()
            if value not in ("true", "false", "truncated", "none"):
                continue
            stamp = time.time_ns()
            if value == "truncated":
                publisher.publish(TRUNCATED)  # rclpy publishes bytes as they are: a serialized message
            elif value != "none":
                publisher.publish(Bool(data=value == "true"))
            print(f"published {value} {stamp}", flush=True)


if __name__ == "__main__":
    main()
