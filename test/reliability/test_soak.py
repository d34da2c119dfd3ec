"""Soak: one Policy driven for many actions while random faults arrive at a set rate.

Every transparent fault must be ridden out, every fatal one must end its run with the documented
error and exactly one hold (the driver then starts the next run, as an application would); no
invalid action is ever acted; threads, open files and memory stay flat.

Two sizes. The default suite runs a short soak (900 actions at 100 Hz, ~15 s): the same fault mix
at the same rate per action, compressed in time to fit the suite's budget. The long soak (3600
actions at the model's 15 Hz, ~5 minutes) is behind the `soak` marker:

    scripts/workspace.sh test test/reliability/test_soak.py -m soak -s
"""

from __future__ import annotations

import math
import os
import random
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import List

import pytest
from _loop_robot import Robot, policy_for
from eventually import wait_until

from sequence_ai import InvalidRequest, SequencesError

FAULT_EVERY = 40  # actions between two faults
EPISODE = 150  # max_actions of one run
TRANSPARENT = {
    "busy": lambda p: p.fault("busy", count=2),
    "drop": lambda p: p.fault("drop", count=1),
    "rotate_secret": lambda p: p.fault("rotate_secret"),
    "restart_worker": lambda p: p.fault("restart_worker"),
    "latency": lambda p: p.fault("latency", ms=400, count=1),
    "worker_blip": lambda p: (p.fault("worker_down"), threading.Timer(0.3, lambda: p.fault("worker_up")).start()),
    "short_lease": lambda p: p.fault("lease_ttl", ttl_s=1.0),
}
FATAL = {
    "nan_actions": lambda p: p.fault("nan_actions", count=1),
    "malformed_json": lambda p: p.fault("malformed_json", count=1),
    "status_500": lambda p: p.fault("status", code=500, count=1),
    "status_413": lambda p: p.fault("status", code=413, count=1),
    "wrong_action_dim": lambda p: p.fault("wrong_action_dim", count=1),
}
EXPECTED_FATAL = {"SequencesError", InvalidRequest.__name__}


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@dataclass
class SoakReport:
    actions: int = 0
    runs: int = 0
    completed: int = 0
    faults: Counter = field(default_factory=Counter)
    endings: Counter = field(default_factory=Counter)
    holds: int = 0
    underruns: int = 0
    episode_resets: int = 0
    invalid: List[List[float]] = field(default_factory=list)
    resources: List[tuple] = field(default_factory=list)  # (actions, threads, files, rss MiB)

    def line(self) -> str:
        fatal = sum(v for k, v in self.faults.items() if k in FATAL)
        return (f"soak: {self.actions} actions in {self.runs} runs; faults {sum(self.faults.values())} "
                f"({fatal} fatal); completed runs {self.completed}; endings {dict(self.endings)}; "
                f"holds {self.holds}; underruns {self.underruns}; episode resets {self.episode_resets}; "
                f"invalid actions {len(self.invalid)}; threads/files/RSS first {self.resources[0][1:]} "
                f"last {self.resources[-1][1:]}")


def soak(platform, total_actions: int, hz: float, seed: int = 7) -> SoakReport:
    rng = random.Random(seed)
    report = SoakReport()
    kinds = [*TRANSPARENT, *FATAL]
    weights = [2] * len(TRANSPARENT) + [1] * len(FATAL)  # two of three faults are survivable
    robot = Robot()

    def act(action: List[float]) -> None:
        if len(action) != 8 or not all(math.isfinite(v) for v in action):
            report.invalid.append(list(action))
        report.actions += 1
        if report.actions % FAULT_EVERY == 0:
            kind = rng.choices(kinds, weights)[0]
            report.faults[kind] += 1
            (TRANSPARENT.get(kind) or FATAL[kind])(platform)
        if report.actions % 150 == 0:
            report.resources.append((report.actions, threading.active_count(), _open_files(), _rss_mib()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the episode-remap warning of every rotation and restart
        with policy_for(platform, control_hz=hz, startup_timeout_s=30.0) as policy:
            while report.actions < total_actions:
                report.runs += 1
                try:
                    out = policy.run(observe=robot.observe, act=act, validate=robot.validate, hold=robot.hold,
                                     on_underrun=robot.on_underrun, progress=False,
                                     max_actions=min(EPISODE, total_actions - report.actions))
                    report.completed += out.reason == "completed"
                    report.episode_resets += out.episode_resets
                except SequencesError as error:
                    report.endings[type(error).__name__] += 1
                    report.episode_resets += policy.last_outcome.episode_resets
    report.holds, report.underruns = robot.holds, len(robot.underruns)
    # Abandoned fetch threads and telemetry flushes wind down (a leaked one never does).
    wait_until(lambda: not report.resources or threading.active_count() <= report.resources[0][1] + 2, 10.0)
    report.resources.append((report.actions, threading.active_count(), _open_files(), _rss_mib()))
    return report


def _check(report: SoakReport, total_actions: int) -> None:
    assert report.actions >= total_actions
    assert report.invalid == [], f"{len(report.invalid)} invalid actions were acted"
    fatal_endings = sum(report.endings.values())
    assert set(report.endings) <= EXPECTED_FATAL, f"a survivable fault was not survived: {report.endings}"
    assert fatal_endings <= sum(v for k, v in report.faults.items() if k in FATAL)
    assert report.holds == fatal_endings, "every fatal ending holds exactly once, a completed run never"
    assert report.completed >= 1 and sum(v for k, v in report.faults.items() if k in TRANSPARENT) >= 3
    # Flat: compared with the first sample (after warm-up: imports, TLS contexts, first buffers).
    _, threads0, files0, rss0 = report.resources[0]
    _, threads1, files1, rss1 = report.resources[-1]
    assert threads1 <= threads0 + 2, f"threads grew {threads0} -> {threads1}"
    assert files1 <= files0 + 8, f"open files grew {files0} -> {files1}"
    assert rss1 - rss0 < 40, f"RSS grew {rss0:.0f} -> {rss1:.0f} MiB"


def test_short_soak_rides_out_random_faults_with_no_invalid_action_and_flat_resources(platform, capsys):
    report = soak(platform, total_actions=900, hz=100.0)
    with capsys.disabled():
        print("\n" + report.line())
    _check(report, 900)


@pytest.mark.soak
def test_long_soak_at_the_model_rate(platform, capsys):
    report = soak(platform, total_actions=3600, hz=15.0, seed=11)
    with capsys.disabled():
        print("\n" + report.line())
    _check(report, 3600)
