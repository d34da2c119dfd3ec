"""What code written for the 0.20.0 client relies on: `policy.contract` as a dict, the modules and
names it imports, and local refusals that are both SequencesError and the builtin they were.

The names are the ones `dir(sequence_ai)` of 0.20.0 shows (checked in a scratch venv, see
docs/OBSERVATIONS.md "Porting from 0.20.0"); only its internals are left out.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
from _loop_robot import observation, policy_for

import sequence_ai
from sequence_ai import (
    InvalidArgument,
    InvalidArgumentType,
    InvalidIndex,
    InvalidRequest,
    ObservationMismatch,
    SequencesError,
    models,
)

# 0.20.0's __all__ plus the modules its users import (errors, types, perceive, act).
REFERENCE_NAMES = [
    "connect", "models", "account", "chat", "decide", "detect", "embed", "depth", "observation", "encode",
    "DEFAULT_JPEG_QUALITY", "Policy", "Observation", "ImageFrame", "Proprioception", "ActionChunk", "Prediction",
    "RunOutcome", "Model", "ChatResult", "DecideResult", "DetectResult", "EmbedResult", "DepthResult",
    "SequencesError", "AuthError", "OutOfCredit", "InvalidRequest", "Unavailable", "CertPinError", "ChunkExhausted",
    "DEFAULT_BASE_URL", "errors", "types", "perceive", "act",
]
REFERENCE_TYPES = ["ActionChunk", "ChatResult", "DecideResult", "DepthResult", "DetectResult", "EmbedResult",
                   "ImageFrame", "Model", "Observation", "Prediction", "Proprioception", "RunOutcome"]
REFERENCE_ERRORS = ["AuthError", "CertPinError", "ChunkExhausted", "InvalidRequest", "OutOfCredit",
                    "SequencesError", "Unavailable"]


def test_contract_is_the_connect_answers_three_declarations(platform):
    with policy_for(platform) as policy:
        assert policy.contract is None  # nothing admitted yet
        policy.predict(observation())
        contract = policy.contract
    assert sorted(contract) == ["action", "embodiment", "observation"]
    assert contract["action"]["action_space"] == "joint_delta" and contract["action"]["action_dim"] == 8
    assert contract["observation"]["proprio"] == {"joint_positions": 7, "gripper": 1}
    assert sorted(contract["observation"]["cameras"]) == ["exterior_1", "wrist_left"]
    assert contract["embodiment"] is None


def test_every_name_a_ported_script_imports_exists():
    missing = [name for name in REFERENCE_NAMES if not hasattr(sequence_ai, name)]
    assert not missing, f"sequence_ai lacks {missing}"
    assert set(REFERENCE_NAMES) - {"errors", "types", "perceive", "act"} <= set(dir(sequence_ai))
    types = importlib.import_module("sequence_ai.types")
    errors = importlib.import_module("sequence_ai.errors")
    assert [n for n in REFERENCE_TYPES if not hasattr(types, n)] == []
    assert [n for n in REFERENCE_ERRORS if getattr(errors, n) is not getattr(sequence_ai, n)] == []
    act, perceive = importlib.import_module("sequence_ai.act"), importlib.import_module("sequence_ai.perceive")
    assert act.Policy is sequence_ai.Policy and act.observation is sequence_ai.observation  # the 0.20.0 spellings
    assert [perceive.detect, perceive.embed, perceive.depth] == [sequence_ai.detect, sequence_ai.embed, sequence_ai.depth]
    assert sequence_ai.DEFAULT_BASE_URL.startswith("https://") and sequence_ai.DEFAULT_JPEG_QUALITY == 95
    assert issubclass(sequence_ai.DetectResult, sequence_ai.Perception)


def test_importing_the_client_starts_nothing_heavy():
    import subprocess

    probe = subprocess.run(
        [sys.executable, "-c", "import sequence_ai, sys; print(sorted(m for m in sys.modules "
         "if m.startswith('sequence_ai.platform') or m in ('httpx', 'PIL', 'numpy')))"],
        capture_output=True, text=True, check=True, cwd=os.path.dirname(sequence_ai.__path__[0]),
    )
    assert probe.stdout.strip() == "[]"


@pytest.fixture
def pi05(platform):
    return {m.short_id: m for m in models("act", base_url=platform.base_url)}["pi05-droid"]


@pytest.mark.parametrize("refusal, builtin, cls", [
    (lambda row: sequence_ai.observation(row, images={"exterior_1": "x"}, joints=[0.0] * 7, gripper=[0.0],
                                         instruction="x"), ValueError, ObservationMismatch),
    (lambda row: sequence_ai.observation(row, images={"exterior_1": "x", "wrist_left": "x"}, joints=[0.0] * 8,
                                         instruction="x"), ValueError, ObservationMismatch),
    (lambda row: sequence_ai.observation(row, images=["x"], instruction="x"), TypeError, InvalidArgumentType),
    (lambda row: sequence_ai.observation(row, images={}, instruction=7), TypeError, InvalidArgumentType),
    (lambda row: sequence_ai.encode(object(), row), TypeError, InvalidArgumentType),
    (lambda row: sequence_ai.encode(__import__("numpy").zeros((9, 16, 3), "uint8"), row, quality=0),
     ValueError, InvalidArgument),
    (lambda row: sequence_ai.encode(__import__("numpy").zeros((90, 90, 3), "uint8"), row),
     ValueError, ObservationMismatch),  # square frame for a 16:9 model: crop, never pad
    (lambda row: sequence_ai.prepare([[0.0] * 8], row, 3), IndexError, InvalidIndex),
    (lambda row: sequence_ai.prepare([[0.0] * 8], row, "0"), TypeError, InvalidArgumentType),
    (lambda row: sequence_ai.to_joint_positions([[0.0] * 8], [0.0] * 6, row), ValueError, InvalidArgument),
    (lambda row: sequence_ai.models("nonsense"), ValueError, InvalidArgument),
    (lambda row: sequence_ai.connect("pi05-droid", api_key="k", base_url="http://127.0.0.1:9", validate="loose"),
     ValueError, InvalidArgument),
])
def test_local_refusals_are_sequences_errors_and_the_builtin(pi05, refusal, builtin, cls):
    with pytest.raises(builtin) as raised:
        refusal(pi05)
    assert type(raised.value) is cls
    assert isinstance(raised.value, SequencesError) and isinstance(raised.value, InvalidRequest)
    assert raised.value.status is None and str(raised.value)  # nothing was sent; the message says what


def test_strict_send_time_check_is_an_observation_mismatch(platform):
    bad = observation(views=("exterior_1",))  # wrist_left missing
    with policy_for(platform, validate="strict") as policy, pytest.raises(ValueError, match="wrist_left") as raised:
        policy.predict(bad)
    assert isinstance(raised.value, ObservationMismatch) and isinstance(raised.value, InvalidRequest)
    assert platform.requests() == []  # refused before anything reached the worker


def test_bad_run_and_act_arguments_are_sequences_errors_that_stay_value_and_type_errors(platform):
    from _loop_robot import Robot, policy_for, run_kwargs

    from sequence_ai import SequencesError

    robot = Robot()
    with policy_for(platform) as policy:
        for bad, kind in (({"max_actions": 0}, ValueError), ({"max_actions": 5, "lookahead": 0}, ValueError),
                          ({"max_actions": 5, "stitch": "sideways"}, ValueError),
                          ({"max_actions": 5, "instruction": 3}, TypeError)):
            with pytest.raises(SequencesError) as info:
                policy.run(**run_kwargs(robot), **bad)
            assert isinstance(info.value, kind), (bad, type(info.value))
        with pytest.raises(SequencesError) as info:
            policy.act("pick", robot.observe, robot.act, max_seconds=0)
        assert isinstance(info.value, ValueError)
        with pytest.raises(SequencesError) as info:
            policy.set_instruction(3)
        assert isinstance(info.value, TypeError)
