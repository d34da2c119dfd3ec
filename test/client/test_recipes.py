"""sequence_ai.recipes: one worked loop per verified model, checked against the live catalogue."""

from __future__ import annotations

import dataclasses

import pytest
from _frames import natural_frame

import sequence_ai
from sequence_ai import Model, models, recipes


@pytest.fixture
def catalogue(platform):
    return {m.short_id: m for m in models("act", base_url=platform.base_url)}


def test_for_model_knows_only_the_verified_models(catalogue):
    assert recipes.for_model(catalogue["pi05-droid"]) is recipes.pi05_droid
    assert recipes.for_model("accounts/sequences/models/cosmos3-edge-policy-droid") is recipes.cosmos3_edge_policy_droid
    assert recipes.for_model(catalogue["groot-n1-7-3b-droid"]) is None
    assert recipes.for_model("jev") is None
    assert sequence_ai.recipes is recipes


def test_every_recipe_holds_against_the_live_catalogue(platform):
    for recipe in (recipes.pi05_droid, recipes.cosmos3_edge_policy_droid):
        assert recipe.check(base_url=platform.base_url) == []


def test_check_names_the_assumption_the_catalogue_broke(catalogue):
    row = catalogue["pi05-droid"]
    changed_raw = {**row.raw, "action_semantics": {**row.raw["action_semantics"], "clip": None}}
    changed = dataclasses.replace(row, action_semantics=changed_raw["action_semantics"], raw=changed_raw)
    differences = recipes.pi05_droid.check([changed])
    assert differences == ["pi05-droid.action_semantics.clip: recipe assumes [-1.0, 1.0], catalogue says None"]
    assert recipes.pi05_droid.check([]) == ["pi05-droid is not in the catalogue"]


class Arm:
    def __init__(self, views):
        self.views = views
        self.commands = []

    def cameras(self):
        return {view: natural_frame(320, 180, seed=i) for i, view in enumerate(self.views)}

    def joint_positions(self):
        return [0.0] * 7

    def gripper_position(self):
        return 0.0

    def step(self, action):
        self.commands.append(action)

    move_to_joint_positions = step


@pytest.mark.parametrize("short_id", ["pi05-droid", "cosmos3-edge-policy-droid"])
def test_worked_loop_plays_prepared_rows_for_the_open_loop_horizon(platform, catalogue, short_id):
    model: Model = catalogue[short_id]
    recipe = recipes.for_model(model)
    arm = Arm(model.camera_views)
    with sequence_ai.connect(short_id, base_url=platform.base_url, api_key=platform.api_key) as policy:
        steps = recipe.run(policy, arm, model, "pick up the cup", chunks=2)
    assert steps == len(arm.commands) == 2 * model.open_loop_horizon
    assert all(command[7] in (0.0, 1.0) for command in arm.commands)  # gripper binarised
    clip = model.action_semantics["clip"]
    if clip:
        assert all(clip[0] <= v <= clip[1] for command in arm.commands for v in command)
