"""ROS domain ids for a run and for each of its test workers, clear of the domains other runs on
this machine are using.

    python scripts/ros_domains.py --block 3     # prints a domain d such that d, d+1, d+2 look free

A run (one `scripts/workspace.sh` command) has one domain; a parallel test run gives its worker
number i the domain `worker_domain(run, i)`, so every worker's nodes, daemon and CLI calls talk
only among themselves. Ids stay in 0..101: above 101 Fast DDS's ports for a domain can run into
Linux's ephemeral port range (32768 and up) once a domain holds many participants.

A domain is taken when a process holds one of its ports: RTPS gives domain d the UDP ports
7400 + 250 d ... 7400 + 250 d + 249 (discovery and user traffic of every participant), and the
ros2 daemon of domain d listens on TCP 11511 + d. The kernel's socket tables say which are bound,
so a run started beside another picks a block nobody is on, as well as can be told from here (a
run that has not opened its sockets yet is not seen; the pick is random among the free blocks,
so two runs started at the same moment rarely meet).
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Iterable, Optional, Set

__all__ = ["HIGHEST", "domains_in_use", "free_block", "worker_domain"]

HIGHEST = 101  # the highest domain id used here (see above)
_RTPS_BASE, _RTPS_GAIN, _DAEMON_BASE = 7400, 250, 11511
_TABLES = ("/proc/net/udp", "/proc/net/udp6", "/proc/net/tcp", "/proc/net/tcp6")


def worker_domain(run_domain: int, worker: int) -> int:
    """The domain of test worker number `worker` (0, 1, ...) in a run on `run_domain`: the next
    ids up, wrapping past HIGHEST to 1 (0 is every ROS user's default)."""
    domain = run_domain + worker
    return domain if domain <= HIGHEST else (domain - 1) % HIGHEST + 1


def _bound_ports(tables: Iterable[str] = _TABLES) -> Set[int]:
    ports: Set[int] = set()
    for table in tables:
        try:
            with open(table) as handle:
                next(handle, None)  # the header
                for line in handle:
                    fields = line.split()
                    if len(fields) > 1 and ":" in fields[1]:
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            continue  # no such table (no IPv6, not Linux): nothing known from it
    return ports


def domains_in_use(ports: Optional[Set[int]] = None) -> Set[int]:
    """The domains (0..HIGHEST) of which some port is bound on this machine."""
    ports = _bound_ports() if ports is None else ports
    used = set()
    for port in ports:
        rtps = port - _RTPS_BASE
        if 0 <= rtps < _RTPS_GAIN * (HIGHEST + 1):
            used.add(rtps // _RTPS_GAIN)
        if 0 <= port - _DAEMON_BASE <= HIGHEST:
            used.add(port - _DAEMON_BASE)
    return used


def free_block(size: int, used: Optional[Set[int]] = None, rng: Optional[random.Random] = None) -> int:
    """A domain d in 1..HIGHEST-size+1 with d..d+size-1 all free (0, the default domain of every
    ROS user, never); if no block is free, the one with fewest domains in use."""
    used = domains_in_use() if used is None else used
    size = max(1, min(size, HIGHEST))
    starts = range(1, HIGHEST - size + 2)
    crowding = {start: sum(d in used for d in range(start, start + size)) for start in starts}
    least = min(crowding.values())
    return (rng or random.Random()).choice([start for start, taken in crowding.items() if taken == least])


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--block", type=int, default=1, help="how many consecutive domains the run needs")
    args = parser.parse_args(argv)
    print(free_block(args.block))
    return 0


if __name__ == "__main__":
    sys.exit(main())
