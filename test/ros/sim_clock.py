"""A simulator's clock in a process of its own, as Gazebo's would be: rosgraph_msgs/Clock on
/clock at 100 Hz, simulated time starting at 1000 s and running at half the wall clock's speed,
until a deadline. WALL_START and UNTIL are this machine's monotonic seconds.

    python sim_clock.py WALL_START UNTIL

(Published from a thread of the test process, the clock stalled for ~1 s at times while the
harness created its ROS entities, and the node's clock with it.)
"""

from __future__ import annotations

import sys
import threading
import time

from builtin_interfaces.msg import Time
from rclpy.clock import Clock as ROSClock
from rclpy.clock import ClockType
from rosgraph_msgs.msg import Clock

from sequence_ai_ros.spinning import Spinning

SIM_START_S = 1000.0
SPEED = 0.5  # simulated seconds per wall second
PERIOD_S = 0.01


def sim_time_s(wall_start: float, now: float) -> float:
    return SIM_START_S + SPEED * (now - wall_start)


def main() -> None:
    wall_start, until = float(sys.argv[1]), float(sys.argv[2])
    with Spinning() as spun:
        node = spun.create_node("test_sim_clock")
        publisher = node.create_publisher(Clock, "/clock", 10)
        ended = threading.Event()

        def tick() -> None:
            now = time.monotonic()
            if now >= until:
                ended.set()
                return
            sim_t = sim_time_s(wall_start, now)
            publisher.publish(Clock(clock=Time(sec=int(sim_t), nanosec=int((sim_t % 1) * 1e9))))

        # a timer on the wall clock: this node's own time is not simulated
        node.create_timer(PERIOD_S, tick, clock=ROSClock(clock_type=ClockType.STEADY_TIME))
        spun.spin([node])
        ended.wait(max(0.0, until - time.monotonic()) + 5.0)

if __name__ == "__main__":
    main()
