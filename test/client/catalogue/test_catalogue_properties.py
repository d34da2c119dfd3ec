"""Arbitrary JSON never escapes as anything but a parsed object or a SequencesError."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sequence_ai import Model, SequencesError
from sequence_ai._catalogue._models import _parse_catalogue
from sequence_ai._net._http import error_from_response
from sequence_ai._oneshot._calls import parse_decide

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)
ROW_FIELDS = ["id", "endpoint", "architecture", "robot", "action_dim", "state_dim", "state_layout", "action_horizon",
              "control_hz", "open_loop_horizon", "sustains_seconds", "camera_views", "context_frames",
              "training_frame_size", "input_aspect_ratio", "input_resize", "client_resize", "action_space",
              "action_semantics", "pass_raw"]
rows = st.dictionaries(st.sampled_from(ROW_FIELDS) | st.text(max_size=8), json_values, max_size=12)


@settings(max_examples=300, deadline=None)
@given(rows | json_values)
@example({"id": "x", "action_dim": float("inf")})
@example({"id": "x", "camera_views": "exterior_1"})
@example({"id": "x", "robot": ["not", "a", "name"]})
def test_model_from_wire_parses_or_raises_sequences_error(row):
    try:
        model = Model.from_wire(row)
    except SequencesError:
        return
    assert isinstance(model.id, str) and model.raw == row


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"data": st.lists(rows, max_size=3)}) | json_values)
def test_catalogue_answer_parses_or_raises_sequences_error(body):
    try:
        parsed = _parse_catalogue(body)
    except SequencesError:
        return
    assert all(isinstance(m, Model) for m in parsed)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=300, max_value=599), json_values | st.text(max_size=40),
       st.dictionaries(st.sampled_from(["retry-after", "x-other"]), st.text(max_size=12), max_size=2))
def test_error_parsing_always_yields_a_sequences_error(status, body, headers):
    text = body if isinstance(body, str) else json.dumps(body)
    error = error_from_response(status, text, headers)
    assert isinstance(error, SequencesError) and isinstance(error.message, str)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"answers": st.dictionaries(st.text(max_size=8), json_values, max_size=4)},
                             optional={"usage": json_values, "id": json_values, "warnings": json_values})
       | json_values)
def test_decide_parsing_parses_or_raises_sequences_error(body):
    try:
        result = parse_decide(body)
    except SequencesError:
        return
    assert list(result.answers) == list(body["answers"])
