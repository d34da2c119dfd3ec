"""Secrets and trust, over the real platform: the API key and the direct secret never leave
their headers; a pin that does not match fails closed; image data is never fetched; an
oversized body never leaves the machine."""

from __future__ import annotations

import logging
import time
import traceback
import warnings

import httpx
import pytest
from _canned_server import CannedServer
from _loop_robot import Robot, observation, policy_for, run_kwargs

from sequence_ai import (
    CertPinError,
    ImageFrame,
    InvalidRequest,
    Observation,
    Proprioception,
    SequencesError,
    cli,
    connect,
)
from sequence_ai._net._limits import ACT_BODY_LIMIT_BYTES, encode_within_limit

HZ = 60.0  # these tests pin what is sent, not the pace: a fast loop keeps them short


def _direct_secret(platform) -> str:
    answer = httpx.post(f"{platform.base_url}/v1/act/connect", json={"model": "pi05-droid", "session": "probe"},
                        headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=10.0)
    return answer.raise_for_status().json()["direct_secret"]


def _text_of(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__)) + repr(vars(error))


def test_key_and_direct_secret_never_appear_in_errors_tracebacks_warnings_or_logs(platform, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    secrets_seen = {_direct_secret(platform)}
    texts = []
    provocations = [
        ("status", {"code": 401, "route": "connect", "count": 1}),
        ("bad_fingerprint", {"count": 1}),
        ("status", {"code": 400, "count": 1}),
        ("status", {"code": 500, "count": 1}),
        ("malformed_json", {"count": 1}),
        ("nan_actions", {"count": 1}),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kind, params in provocations:
            platform.fault(kind, **params)
            robot = Robot()
            with policy_for(platform, control_hz=HZ) as policy:
                with pytest.raises(SequencesError) as info:
                    policy.run(**run_kwargs(robot), max_actions=10)
                texts += [_text_of(info.value), repr(policy), repr(policy.last_outcome)]
            platform.clear_faults()
        with policy_for(platform, control_hz=HZ) as policy:  # rotation: a 401 from the worker, a reconnect
            policy.run(**run_kwargs(Robot()), max_actions=10)
            platform.fault("rotate_secret")
            policy.run(**run_kwargs(Robot()), max_actions=10)
            texts.append(repr(policy))
        nowhere = connect("pi05-droid", api_key=platform.api_key, base_url="http://127.0.0.1:9", control_hz=HZ)
        with nowhere, pytest.raises(SequencesError) as unreachable:
            nowhere.run(**run_kwargs(Robot()), max_actions=10)
        texts.append(_text_of(unreachable.value))
    secrets_seen.add(_direct_secret(platform))  # the rotated one
    texts += [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    texts += [repr(r.args) for r in caplog.records]
    assert len(texts) > 20 and caplog.records, "nothing was logged: the check would be vacuous"
    for secret in (platform.api_key, *secrets_seen):
        leaks = [t for t in texts if secret in t]
        assert not leaks, f"a secret leaked into: {leaks[0][:300]}"
    bearer = [t for t in texts if "Bearer " in t]  # a credential; the 401 challenge header is a bare "Bearer"
    assert not bearer, bearer[0][:600]


def test_doctor_redacts_the_key_and_never_prints_the_direct_secret(platform, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("SEQUENCES_BASE_URL", platform.base_url)
    monkeypatch.setenv("SEQUENCES_API_KEY", platform.api_key)
    assert cli.main(["doctor"]) == 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err + "".join(r.getMessage() for r in caplog.records)
    secret = _direct_secret(platform)
    assert platform.api_key not in printed and secret not in printed and "Bearer" not in printed
    assert platform.api_key[:9] + "…" + platform.api_key[-4:] in printed


def test_pin_mismatch_after_a_worker_restart_fails_closed_and_the_next_run_asks_the_gateway_again(platform):
    robot = Robot()
    with policy_for(platform, control_hz=HZ) as policy:
        policy.run(**run_kwargs(robot), max_actions=8)  # a pin that verified
        platform.fault("bad_fingerprint", count=1)  # the gateway's next answer carries a wrong pin
        restarted = time.time()
        platform.fault("restart_worker")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(CertPinError):
                policy.run(**run_kwargs(robot), max_actions=16)
        assert robot.holds == 1 and policy.last_outcome.reason == "raised:CertPinError"
        assert [r for r in platform.requests() if r["time"] >= restarted] == [], "a byte reached the new worker"
        # Not stuck on the refused pin: the next run is admitted afresh and verifies the right one.
        out = policy.run(**run_kwargs(robot), max_actions=8)
    assert out.reason == "completed"


def _frames_of(data: str) -> Observation:
    return Observation(images=[ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
                       proprioception=Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
                       instruction="pick up the cup")


def test_image_data_that_is_a_url_is_never_fetched_and_the_worker_answers_400(platform):
    with CannedServer() as bait:
        with policy_for(platform, validate="off") as policy, pytest.raises(InvalidRequest) as info:
            policy.predict(_frames_of(f"{bait.url}/x.jpg"))
        # A request of our own after the answer (the bait records each before answering it): the bait
        # accepts connections in the order they came, so one opened while the frame was judged is seen.
        assert httpx.get(f"{bait.url}/probe", timeout=10.0).status_code == 200
        assert bait.seen == [("GET", "/probe")], f"the URL was fetched: {bait.seen}"
    assert info.value.status == 400 and "exterior_1" in info.value.message
    assert [r["status"] for r in platform.requests()] == [400]


def test_body_over_the_worker_limit_is_refused_before_upload_naming_size_and_limit(platform):
    oversized = _frames_of("A" * (ACT_BODY_LIMIT_BYTES // 2 + 1024))
    robot = Robot()
    with policy_for(platform, validate="off") as policy:
        with pytest.raises(InvalidRequest) as info:
            policy.predict(oversized)
        with pytest.raises(InvalidRequest):
            policy.run(**run_kwargs(robot, observe=lambda: oversized), max_actions=8)
    message = info.value.message
    assert "4 MiB" in message and str(ACT_BODY_LIMIT_BYTES) in message and info.value.status is None
    size = int(message.split("(")[1].split(" bytes")[0])
    assert size > ACT_BODY_LIMIT_BYTES
    assert robot.holds == 1 and robot.actions == [] and policy.last_outcome.reason == "raised:InvalidRequest"
    assert platform.stats() == {} or not any(platform.stats().values()), "something was sent"


def test_body_just_under_the_limit_is_sent_and_judged_by_the_worker(platform):
    overhead = len(encode_within_limit({"model": "pi05-droid", "observation": _frames_of("").to_wire()}))
    just_under = _frames_of("A" * ((ACT_BODY_LIMIT_BYTES - overhead - 256) // 2))
    with policy_for(platform, validate="off") as policy, pytest.raises(InvalidRequest) as info:
        policy.predict(just_under)
    assert info.value.status == 400, "the worker, not the client, refused it (and not as too large)"


def test_observation_with_non_finite_joints_is_refused_before_upload(platform):
    frames = observation()
    broken = Observation(images=frames.images, instruction=frames.instruction,
                         proprioception=Proprioception(joint_positions=[float("nan")] * 7, gripper=[0.0]))
    with policy_for(platform, validate="off") as policy, pytest.raises(InvalidRequest, match="JSON"):
        policy.predict(broken)
    assert platform.stats() == {} or not any(platform.stats().values()), "something was sent"
