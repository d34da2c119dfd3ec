"""Every fault of the local platform maps to the documented client behaviour (docs/CLIENT-LOOP.md).

Transparent faults: the run completes and nothing is held. Fatal faults: the run ends
raised:<Class>, the exception is re-raised after hold, and hold fires exactly once.
"""

from __future__ import annotations

import math
import threading
import warnings

import pytest
from _loop_robot import Robot, policy_for, run_kwargs
from eventually import wait_until

# Expected, documented warnings of the paths these tests drive on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:model is warming", "ignore:the worker changed mid-episode")

from sequence_ai import AuthError, CertPinError, InvalidRequest, OutOfCredit, SequencesError, Unavailable

SHORT = 20  # three chunks of eight rows


def _complete(platform, robot=None, **policy_kwargs):
    robot = robot or Robot()
    with policy_for(platform, **policy_kwargs) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert out.reason == "completed", out
    assert robot.holds == 0
    return out, robot


def _fails(platform, error_type, robot=None, max_actions=SHORT, **policy_kwargs):
    robot = robot or Robot()
    with policy_for(platform, **policy_kwargs) as policy:
        with pytest.raises(error_type) as info:
            policy.run(**run_kwargs(robot), max_actions=max_actions)
        outcome = policy.last_outcome
    assert outcome.reason == f"raised:{type(info.value).__name__}"
    assert robot.holds == 1
    return info.value, outcome, robot


def _connects(platform):
    return sum(platform.stats().get("gateway", {}).get("POST /v1/act/connect", {}).values())


# -- transparent ---------------------------------------------------------------------------


def test_cold_worker_is_waited_out_before_the_first_action(platform):
    platform.fault("warming", seconds=1.5, eta_s=1)
    calls = []
    out, robot = _complete(platform, on_warming=lambda waited, eta: calls.append((waited, eta)))
    assert calls and calls[0][0] < 0.5 and calls[0][1] >= 1
    assert len(robot.observations) >= 2 + out.chunks - 1  # each warm attempt re-observed


def test_warming_in_code_form_is_waited_out_too(platform):
    assert platform.fault("warming", seconds=1.0, form="code")["form"] == "code"
    calls = []
    _complete(platform, on_warming=lambda waited, eta: calls.append((waited, eta)))
    assert calls, "the run never met the cold start (on_warming was not called)"
    assert platform.stats()["gateway"]["POST /v1/act/connect"].get("503", 0) >= 1, "no 503 warming was answered"


def test_busy_worker_is_retried_within_the_call(platform):
    platform.fault("busy", count=2)
    _complete(platform)
    assert [r["status"] for r in platform.requests()][:3] == [429, 429, 200]


def test_busy_answers_share_one_request_id(platform):
    platform.fault("busy", count=2)
    _complete(platform)
    rids = [r["rid"] for r in platform.requests()[:3]]
    assert len(set(rids)) == 1 and rids[0].startswith("r-") and len(rids[0]) == 10


def test_rotated_secret_reconnects_and_replays_with_an_episode_reset(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(robot.observe())  # connected with the old secret
        platform.fault("rotate_secret")
        with pytest.warns(UserWarning, match="per-episode state"):
            out = policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert out.reason == "completed" and robot.holds == 0
    assert out.episode_resets == 1
    assert 401 in [r["status"] for r in platform.requests()]


def test_short_lease_is_renewed_before_expiry(platform):
    platform.fault("lease_ttl", ttl_s=1.0)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=30)  # 2 s at 15 Hz
        session = policy.session
    assert out.reason == "completed"
    assert _connects(platform) >= 2
    assert len(session) == 32 and int(session, 16) >= 0


def test_restarted_worker_is_reconnected_transparently(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(robot.observe())
        before = platform.worker()
        platform.fault("restart_worker")
        assert platform.worker() != before, "the worker did not restart"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert out.reason == "completed" and robot.holds == 0
    assert _connects(platform) >= 2, "the run went on without connecting to the new worker"


def test_restarted_worker_is_found_even_when_the_gateway_is_briefly_without_it(platform):
    # Mid-redeploy the gateway may have no coordinates yet (503): the pin failure against the
    # new worker is not final until the gateway has been asked again and named the new certificate.
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(robot.observe())
        platform.fault("restart_worker")
        platform.fault("status", route="connect", code=503, count=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert out.reason == "completed" and robot.holds == 0
    assert _connects(platform) >= 2


def test_dropped_connection_is_replayed(platform):
    platform.fault("drop", count=1)
    out, _ = _complete(platform)
    rids = [r["rid"] for r in platform.requests()]
    # The worker's log: the request whose answer was dropped, then the same request again (one
    # request id), then the rest of the run.
    assert rids[0] == rids[1] and len(set(rids)) == len(rids) - 1, rids
    assert len(set(rids)) == out.chunks


def test_worker_down_briefly_is_ridden_out(platform):
    """The worker comes back once the run has asked the gateway for it while it was down (an event,
    not a fixed 0.5 s that a busy machine's slow start could let pass before the run's first request)."""
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(robot.observe())
        connects_before = platform.arrivals("gateway POST /v1/act/connect")
        platform.fault("worker_down")

        def bring_back() -> None:
            # up again either way, so a run that never asked still ends (and fails the check below)
            wait_until(lambda: platform.arrivals("gateway POST /v1/act/connect") > connects_before, timeout_s=60)
            platform.fault("worker_up")

        returning = threading.Thread(target=bring_back, daemon=True)
        returning.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = policy.run(**run_kwargs(robot), max_actions=SHORT)
        returning.join(timeout=60)
    assert out.reason == "completed" and robot.holds == 0
    # The gateway names the worker while it is down; the run meets the refused connection and asks again.
    assert _connects(platform) >= 2, "the run never met the worker down (it never connected again)"


# -- fatal ---------------------------------------------------------------------------------


def test_nan_actions_end_the_run_raised_and_are_never_acted(platform):
    platform.fault("nan_actions", count=1)
    _, _, robot = _fails(platform, SequencesError)
    assert all(math.isfinite(v) for row in robot.actions for v in row)


def test_inf_actions_end_the_run_raised_and_are_never_acted(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=4)  # a good first chunk; 4 rows left buffered
        platform.fault("inf_actions")
        with pytest.raises(SequencesError):
            policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert policy.last_outcome.reason == "raised:SequencesError"
    assert robot.holds == 1
    assert all(math.isfinite(v) for row in robot.actions for v in row)


def test_wrong_action_dim_ends_the_run_before_any_action(platform):
    platform.fault("wrong_action_dim", count=1)
    error, outcome, robot = _fails(platform, SequencesError)
    assert "action_dim" in str(error) and robot.actions == [] and outcome.actions == 0


def test_malformed_json_ends_the_run_raised(platform):
    platform.fault("malformed_json", count=1)
    error, _, _ = _fails(platform, SequencesError)
    assert type(error) is SequencesError and "malformed" in str(error)


def test_server_error_status_ends_the_run_raised(platform):
    platform.fault("status", code=500, count=1)
    error, _, _ = _fails(platform, SequencesError)
    assert error.status == 500


def test_bad_request_status_is_invalid_request_and_not_retried(platform):
    platform.fault("status", code=400, count=1)
    _fails(platform, InvalidRequest)
    assert len(platform.requests()) == 1


def test_out_of_credit_on_connect_is_raised(platform):
    platform.fault("status", code=402, route="connect", count=1)
    _fails(platform, OutOfCredit)


def test_key_rejected_on_connect_is_auth_error(platform):
    platform.fault("status", code=401, route="connect", count=1)
    _fails(platform, AuthError)


def test_cert_pin_mismatch_fails_closed_and_is_never_retried(platform):
    platform.fault("bad_fingerprint", count=1)
    _fails(platform, CertPinError)
    assert _connects(platform) == 1
    assert platform.requests() == []  # not one byte of /act reached the worker


def test_worker_busy_past_the_deadline_is_unavailable_429(platform):
    platform.fault("busy")
    error, _, _ = _fails(platform, Unavailable, timeout_s=1.5, startup_timeout_s=0)
    assert error.status == 429 and not error.warming


def test_worker_gone_for_good_is_unavailable_503_after_bounded_reconnects(platform):
    platform.fault("drop")
    error, _, _ = _fails(platform, Unavailable)
    assert error.status == 503 and "reconnect" in str(error)
    assert len(platform.requests()) == 6  # the first attempt and five replays


def test_warming_met_mid_run_is_raised_not_waited(platform):
    robot = Robot()
    with policy_for(platform, on_warming=lambda waited, eta: None) as policy:
        policy.run(**run_kwargs(robot), max_actions=4)  # served once; leaves the chunk's other rows
        left = policy.buffered
        platform.fault("warming", seconds=30)
        with pytest.raises(Unavailable) as info:
            policy.run(**run_kwargs(robot), max_actions=SHORT)
    assert info.value.warming and 0 < left < SHORT
    # the rows left play, then the refill's warming is raised, not waited out
    assert policy.last_outcome.reason == "raised:Unavailable" and policy.last_outcome.actions == left
    assert robot.holds == 1


def test_warming_longer_than_startup_timeout_gives_up_with_hold(platform):
    platform.fault("warming", seconds=60, eta_s=60)
    error, outcome, _ = _fails(platform, Unavailable, startup_timeout_s=2.0, on_warming=lambda w, e: None)
    assert error.warming and "startup_timeout_s" in str(error) and outcome.actions == 0


def test_warm_wait_cut_by_max_seconds_is_a_timeout(platform):
    platform.fault("warming", seconds=60, eta_s=2)
    robot = Robot()
    with policy_for(platform, on_warming=lambda w, e: None) as policy:
        out = policy.act("pick", robot.observe, robot.act, max_seconds=1.0, hold=robot.hold, validate=robot.validate,
                         progress=False)
    assert out.reason == "timeout" and robot.holds == 1


def test_exception_in_act_is_reraised_after_exactly_one_hold(platform):
    robot = Robot()

    def act(action):
        if len(robot.actions) == 5:
            raise RuntimeError("servo fault")
        robot.act(action)

    with policy_for(platform) as policy, pytest.raises(RuntimeError, match="servo fault"):
        policy.run(**run_kwargs(robot, act=act), max_actions=SHORT)
    assert policy.last_outcome.reason == "raised:RuntimeError" and robot.holds == 1
