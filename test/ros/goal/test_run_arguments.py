"""`Policy.run()`'s arguments from the node's config (sequence_ai_ros/goal/run_arguments.py), built
once at startup: no node, no spinning."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import sequence_ai
from sequence_ai_ros.goal.run_arguments import RunArguments
from sequence_ai_ros.parameters import PARAMETERS, NodeConfig

pytestmark = pytest.mark.ros

DEFAULTS = NodeConfig(**{name: p.config_value(name, p.default) for name, p in PARAMETERS.items()})


def arguments(**changes) -> dict:
    return RunArguments.from_config(dataclasses.replace(DEFAULTS, **changes)).as_kwargs()


def test_the_defaults_pipeline_continue_and_let_the_newest_chunk_take_over_on_the_clients_budget():
    assert arguments() == {"prefetch": True, "lookahead": "auto", "stitch": "continue", "take_over": None,
                           "request_budget": None, "smooth_seam": 0, "startup_timeout_s": 1800.0}


@pytest.mark.parametrize("changes, expected", [
    ({"request_budget": 4.0}, {"take_over": None, "request_budget": 4.0}),
    ({"take_over": False}, {"take_over": False, "request_budget": None}),
    ({"take_over": False, "lookahead": 2, "stitch": "align", "smooth_seam": 3},
     {"take_over": False, "lookahead": 2, "stitch": "align", "smooth_seam": 3}),
    ({"prefetch": False, "take_over": False, "startup_timeout_s": 60.0},
     {"prefetch": False, "take_over": False, "startup_timeout_s": 60.0}),
    # a dry run's arm does not move: nothing to continue from, nothing to take over, no budget
    ({"dry_run": True, "request_budget": 4.0}, {"stitch": "none", "take_over": False, "request_budget": None}),
])
def test_each_setting_reaches_run_as_the_client_spells_it(changes, expected):
    given = arguments(**changes)
    assert {name: given[name] for name in expected} == expected
    assert {n: v for n, v in given.items() if n not in expected} == \
           {n: v for n, v in arguments().items() if n not in expected}, "only what the config changed"


def test_every_argument_is_one_policy_run_takes_and_the_value_cannot_change():
    run = inspect.signature(sequence_ai.Policy.run).parameters
    assert set(arguments()) <= set(run), set(arguments()) - set(run)
    value = RunArguments.from_config(DEFAULTS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.stitch = "none"
