"""connect(): local key check, lazy admission, one pinned connection, secrets kept apart."""

from __future__ import annotations

import traceback

import pytest
from _loop_robot import MODEL, Robot, observation, policy_for, run_kwargs

import sequence_ai
from sequence_ai import AuthError, InvalidRequest, Unavailable


def _gateway(platform):
    return platform.stats().get("gateway", {})


def test_connect_without_a_key_raises_auth_error_before_any_io(monkeypatch):
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    with pytest.raises(AuthError, match="SEQUENCES_API_KEY"):
        sequence_ai.connect(MODEL, base_url="https://127.0.0.1:9")


def test_connect_sends_nothing_until_the_first_request(platform):
    with policy_for(platform) as policy:
        assert "POST /v1/act/connect" not in _gateway(platform)
        policy.predict(observation())
    gateway = _gateway(platform)
    assert sum(gateway["POST /v1/act/connect"].values()) == 1
    assert sum(gateway["GET /v1/models"].values()) == 1


def test_connect_reads_key_and_gateway_from_the_environment(platform, monkeypatch):
    monkeypatch.setenv("SEQUENCES_API_KEY", platform.api_key)
    monkeypatch.setenv("SEQUENCES_BASE_URL", platform.base_url + "/")
    with sequence_ai.connect(MODEL) as policy:
        assert policy.predict(observation()).action_chunk.action_dim == 8


def test_explicit_key_and_gateway_win_over_the_environment(platform, monkeypatch):
    monkeypatch.setenv("SEQUENCES_API_KEY", "seq_test_not_a_key_anywhere")
    monkeypatch.setenv("SEQUENCES_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    with sequence_ai.connect(MODEL, api_key=platform.api_key, base_url=platform.base_url) as policy:
        assert policy.predict(observation()).action_chunk.action_dim == 8


def test_the_public_gateway_is_the_default(monkeypatch):
    from sequence_ai._net._http import DEFAULT_BASE_URL, resolve_base_url

    monkeypatch.delenv("SEQUENCES_BASE_URL", raising=False)
    assert resolve_base_url() == DEFAULT_BASE_URL and DEFAULT_BASE_URL.startswith("https://")
    monkeypatch.setenv("SEQUENCES_BASE_URL", "http://127.0.0.1:8080/")
    assert resolve_base_url() == "http://127.0.0.1:8080"
    assert resolve_base_url("https://example.invalid") == "https://example.invalid"


def test_one_admission_and_one_connection_serve_a_whole_run(platform):
    robot = Robot()
    reports = []
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=40)
        policy._link.telemetry.close()  # flush
    reports = platform.reports()
    assert sum(_gateway(platform)["POST /v1/act/connect"].values()) == 1
    first = [r["client"]["first_after_connect"] for r in reports]
    assert first.count(True) == 1 and len(first) >= 4  # one per window until the rows buffered end the run


def test_request_ids_are_fresh_per_act_and_well_formed(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=24)
    rids = [r["rid"] for r in platform.requests()]
    assert len(rids) == len(set(rids)) >= 3
    assert all(len(rid) == 10 and rid.startswith("r-") and int(rid[2:], 16) >= 0 for rid in rids)


def test_telemetry_reports_served_chunks_without_secrets(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=16)
    reports = platform.reports()
    assert reports and {r["outcome"] for r in reports} == {"served"}
    assert platform.api_key not in repr(reports)


def test_expect_mismatch_refuses_the_worker_before_any_act(platform):
    with policy_for(platform, expect={"action_space": "joint_absolute"}) as policy, \
            pytest.raises(InvalidRequest, match="action_space"):
        policy.predict(observation())
    assert platform.requests() == []


def test_expect_match_is_accepted(platform):
    expect = {"action_space": "joint_delta", "action_dim": 8}
    with policy_for(platform, expect=expect) as policy:
        prediction = policy.predict(observation())
        declared = policy.contract["action"]
    # The worker declared an action contract, it is the one expected, and the request it was
    # checked for went through to that worker.
    assert {key: declared.get(key) for key in expect} == expect, declared
    assert [(r["rid"], r["status"]) for r in platform.requests()] == [(prediction.id, 200)]


def test_unreachable_worker_error_carries_no_secret_and_no_cause(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(observation())
        platform.fault("drop")
        with pytest.raises(Unavailable) as info:
            policy.run(**run_kwargs(robot), max_actions=16)
    text = "".join(traceback.format_exception(type(info.value), info.value, info.value.__traceback__))
    assert platform.api_key not in text and "Bearer" not in text
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_policy_repr_does_not_leak_the_key(platform):
    with policy_for(platform) as policy:
        policy.predict(observation())
        assert platform.api_key not in repr(policy) and platform.api_key not in repr(vars(policy))
