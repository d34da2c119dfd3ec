"""The refill rule (`_refill_rule.py`): chosen once from run()'s settings, it owns when requests
start and how long the first action waits. Built here on a real Refills that never connects."""

from __future__ import annotations

from sequence_ai._act._request import ObservationCheck
from sequence_ai._link._worker import WorkerConnection
from sequence_ai._loop._refill import Refills
from sequence_ai._loop._refill_rule import Appending, TakingOver, refill_rule
from sequence_ai._loop._settings import RunSettings
from sequence_ai._waiting import InterruptFlag, Waiter

HZ = 15.0


def rule(**arguments):
    """The rule run(**arguments) would run by, on fresh refills (no latency sample yet)."""
    given = dict(observe=lambda: None, act=lambda row: None, max_actions=100, validate=None, hold=None, on_chunk=None,
                 on_underrun=None, on_status=None, on_warming=None, prefetch=True, lookahead="auto",
                 open_loop_horizon=None, max_seconds=None, until=None, startup_timeout_s=1.0, smooth_seam=0,
                 stitch=None, align_chunks=False, pacer=None, control_hz=None, episode_id=None, instruction=None,
                 options={}, record=None, take_over=None, request_budget=None)
    given.update(arguments)
    worker = WorkerConnection(gateway=None, base_url="https://gw", model="m", timeout_s=1.0)
    refills = Refills(model="m", worker=worker, telemetry=None, check=ObservationCheck("off"), row=lambda: None,
                      cached_row=lambda: None, waiter=Waiter(InterruptFlag()), seed=None)
    return refill_rule(RunSettings.from_arguments(given), refills, lambda: None, None)


def test_the_rule_is_chosen_once_from_the_settings():
    assert isinstance(rule(), TakingOver)  # the default: pipelined, prefetch on, stitch="continue"
    assert isinstance(rule(request_budget=4.0), TakingOver)
    for arguments in ({"take_over": False}, {"lookahead": 2}, {"stitch": "align"}, {"prefetch": False}):
        assert isinstance(rule(**arguments), Appending), arguments


def test_the_first_request_of_a_run_is_the_rules_own():
    # taking over, the cadence starts the first request at once; appending, an empty buffer with
    # nothing on its way is the blocking fill's job
    assert rule().to_start(0, HZ) == 1
    assert rule(take_over=False).to_start(0, HZ) == 0


def test_the_wait_before_the_first_action_is_the_lead_minus_what_is_buffered():
    appending, taking = rule(take_over=False), rule()
    assert appending.first_action_at(100.0, 6, HZ) is None  # no estimate yet: no wait
    assert taking.first_action_at(100.0, 6, HZ) is None
    for r in (appending, taking):
        r.r.latency.record(0.6)
    lead = appending.r.latency.lead_s(HZ)
    assert appending.first_action_at(100.0, 6, HZ) == 100.0 + lead - 6 / HZ
    # taking over, the lead also covers how late the refill may still come: one sample may be its low end
    start_lead = taking.r.latency.start_lead_s(HZ)
    assert start_lead > lead
    assert taking.first_action_at(100.0, 6, HZ) == 100.0 + start_lead - 6 / HZ
    single = rule(lookahead=2)  # an int lookahead never waits before its first action
    single.r.latency.record(0.6)
    assert single.first_action_at(100.0, 6, HZ) is None
