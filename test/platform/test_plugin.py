"""--policy package.module:callable: the user's policy runs behind the same contract."""

from __future__ import annotations

import os

import pytest
from platform_helpers import act_body, connect, worker

from sequence_ai.platform.spawn import LocalPlatform

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def plugin_platform():
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, old) if p)
    try:
        with LocalPlatform("--policy", "sample_policies:dispatch") as running:
            yield running
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old


def _act(platform, instruction):
    with worker(connect(platform)) as w:
        return w.post("/act", json=act_body(instruction=instruction, seed=42))


def test_the_plug_in_sees_decoded_pixels_and_fitted_state(plugin_platform):
    r = _act(plugin_platform, "look")
    assert r.status_code == 200, r.text
    first = r.json()["action_chunk"]["steps"][0]["values"]
    assert first[:2] == [0.224, 0.224] and first[3] == 0.224
    assert 40 / 255 - 0.02 < first[2] < 40 / 255 + 0.02  # the test frame's red channel is 40
    assert first[4:7] == [0.7, 0.1, 0.42]
    assert r.json()["perf"]["provider"] == "local plug-in sample_policies:dispatch"


def test_an_object_with_steps_is_accepted(plugin_platform):
    r = _act(plugin_platform, "steps object")
    assert r.status_code == 200 and len(r.json()["action_chunk"]["steps"]) == 3


@pytest.mark.parametrize(("instruction", "words"), [
    ("wrong width", "action_dim is 8"),
    ("nan", "non-finite"),
    ("empty", "non-empty"),
    ("raise", "boom from the plug-in"),
])
def test_a_plug_in_that_breaks_the_contract_is_a_500_with_a_detail(plugin_platform, instruction, words):
    r = _act(plugin_platform, instruction)
    assert r.status_code == 500 and words in r.json()["detail"]
