"""The node's `act` goal against openpi's real policy server (test/openpi/_openpi_server.py): one parameter,
policy_url, names it; the model is a shipped card; nothing of the Sequences platform is in the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ros_harness import Planner, start_arm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "openpi"))
from _openpi_server import OpenpiServer

sys.path.pop(0)


class NoPlatform:
    """The node's environment without any SEQUENCES_ variable: only policy_url says where the policy is."""

    def env(self):
        return {k: v for k, v in os.environ.items() if not k.startswith("SEQUENCES_")}


def test_the_nodes_act_goal_runs_against_a_real_openpi_server(ros, policy_node):
    with OpenpiServer("--latency-ms", "40") as server:
        process, arm, planner = start_arm(ros, policy_node, NoPlatform(), policy_url=server.url, model="pi05_droid")
        result = Planner.result(planner.send("pick up the red cube", max_seconds=2.0)).result
        assert result.outcome.reason == "timeout" and result.outcome.held, result
        assert result.outcome.actions >= 15
        # one command per action, then the hold (they may still be on their way when the result comes)
        assert len(arm.settled_commands(result.outcome.actions + 1)) == result.outcome.actions + 1
