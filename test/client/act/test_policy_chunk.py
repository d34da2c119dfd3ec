"""Chunk parsing: every malformed worker answer becomes a SequencesError, never anything else."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sequence_ai import SequencesError
from sequence_ai._act._chunk import parse_prediction

GOOD = {
    "action_chunk": {
        "steps": [{"index": 0, "values": [0.1, 0.2]}, {"index": 1, "values": [0.3, 0.4]}, [0.5, 0.6]],
        "robot": "droid_franka", "action_space": "joint_delta", "action_dim": 2,
        "control_frequency_hz": 15.0, "covers_seconds": 0.2, "open_loop_horizon": 2, "sustains_seconds": 0.133,
        "something_new": 1,
    },
    "usage": {"frames_used": 2}, "perf": {"handler_ms": 3.0}, "warnings": ["padded"], "rid": "r-00000001",
}


def _parse(body):
    return parse_prediction(body, rid="r-deadbeef", model="pi05-droid")


def test_well_formed_answer_parses_with_both_step_forms_and_keeps_unknown_fields():
    prediction = _parse(GOOD)
    chunk = prediction.action_chunk
    assert chunk.steps == [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
    assert chunk.executable_rows() == [[0.1, 0.2], [0.3, 0.4]]
    assert chunk.extra == {"something_new": 1}
    assert prediction.id == "r-00000001" and prediction.model == "pi05-droid"
    assert prediction.warnings == ["padded"] and prediction.perf == {"handler_ms": 3.0}


def test_chunk_text_form_names_steps_dims_space_robot_rate_and_replan():
    assert str(_parse(GOOD).action_chunk) == (
        "ActionChunk(3 steps x 2 dims, joint_delta, droid_franka, 15 Hz, covers 0.2s, replan after 2)")


def _spoiled(path, value):
    body = copy.deepcopy(GOOD)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


@pytest.mark.parametrize("path,value", [
    (("action_chunk",), KeyError),
    (("action_chunk",), [1, 2]),
    (("action_chunk", "steps"), KeyError),
    (("action_chunk", "steps"), []),
    (("action_chunk", "steps"), "0.1,0.2"),
    (("action_chunk", "robot"), KeyError),
    (("action_chunk", "action_space"), 7),
    (("action_chunk", "action_dim"), "two"),
    (("action_chunk", "action_dim"), 3),
    (("action_chunk", "control_frequency_hz"), KeyError),
    (("action_chunk", "control_frequency_hz"), 0),
    (("action_chunk", "covers_seconds"), None),
    (("action_chunk", "open_loop_horizon"), 1.5),
    (("action_chunk", "steps", 0, "values"), ["a", 0.2]),
    (("action_chunk", "steps", 0, "values"), [True, 0.2]),
    (("action_chunk", "steps", 0), {"index": 0}),
    (("action_chunk", "steps", 2), [0.5]),
])
def test_malformed_answer_is_a_sequences_error(path, value):
    with pytest.raises(SequencesError, match="malformed"):
        _parse(_spoiled(path, value))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_action_values_reject_the_whole_chunk(bad):
    with pytest.raises(SequencesError, match="not finite"):
        _parse(_spoiled(("action_chunk", "steps", 1, "values"), [0.1, bad]))


@pytest.mark.parametrize("steps", [[[0.1, 1e308]], [{"values": [-1e308, 0.2]}], [[1, -10**308]]])
def test_values_whose_differences_would_overflow_reject_the_whole_chunk(steps):
    with pytest.raises(SequencesError, match="out of range"):
        _parse(_spoiled(("action_chunk", "steps"), steps * 3))


def test_large_finite_values_are_the_callers_to_judge():
    # No magnitude rule beyond the client's own arithmetic: the catalogue's clip is a step of the
    # model's loop (prepare() clips), so rows beyond it are legitimate and validate= judges them.
    rows = _parse(_spoiled(("action_chunk", "steps"), [[1e307, -3.5]] * 3)).action_chunk.steps
    assert rows[0] == [1e307, -3.5]


@pytest.mark.parametrize("body", [None, "text", 3, [], {"action_chunk": None}])
def test_an_answer_that_is_not_an_object_is_a_sequences_error(body):
    with pytest.raises(SequencesError):
        _parse(body)


_json = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(chunk=st.dictionaries(
    st.sampled_from(["steps", "robot", "action_space", "action_dim", "control_frequency_hz", "covers_seconds",
                     "open_loop_horizon", "sustains_seconds"]), _json))
def test_any_json_chunk_either_parses_or_raises_sequences_error(chunk):
    try:
        prediction = _parse({"action_chunk": chunk})
    except SequencesError:
        return
    assert all(math.isfinite(v) for row in prediction.action_chunk.steps for v in row)
