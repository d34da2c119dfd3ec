"""PrefetchRule decides from values alone how many requests start now (docs/PROTOCOL.md §7.7)."""

from __future__ import annotations

from types import SimpleNamespace

from sequence_ai._loop._prefetch import MAX_IN_FLIGHT, PrefetchRule


def rule(lookahead="auto", prefetch=True, max_actions=1000) -> PrefetchRule:
    return PrefetchRule(SimpleNamespace(prefetch=prefetch, max_actions=max_actions, lookahead=lookahead,
                                        pipelined=lookahead == "auto"))


def test_pipelined_starts_one_request_per_window_the_lead_leaves_uncovered():
    # 8-row windows, 20 rows of lead: 4 buffered + 2 in flight (16 rows) leave room for one more
    assert rule().start_now(actions=10, buffered=4, in_flight=2, per_chunk=8, lead_rows=20) == 1
    # the lead of a slow link with nothing in flight: as many as cover it, never more than the cap
    assert rule().start_now(actions=10, buffered=1, in_flight=0, per_chunk=8, lead_rows=100) == MAX_IN_FLIGHT
    assert rule().start_now(actions=10, buffered=8, in_flight=0, per_chunk=8, lead_rows=7.5) == 0


def test_nothing_starts_without_an_estimate_past_the_last_action_or_on_an_empty_queue():
    assert rule().start_now(actions=0, buffered=8, in_flight=0, per_chunk=8, lead_rows=None) == 0
    assert rule(max_actions=12).start_now(actions=4, buffered=8, in_flight=0, per_chunk=8, lead_rows=20) == 0
    assert rule().start_now(actions=4, buffered=0, in_flight=0, per_chunk=8, lead_rows=20) == 0
    assert rule(prefetch=False).start_now(actions=4, buffered=2, in_flight=0, per_chunk=8, lead_rows=20) == 0


def test_lookahead_one_waits_for_the_lead_and_skips_the_ticks_before_it():
    single = rule(lookahead=1)
    assert single.start_now(actions=1, buffered=7, in_flight=0, per_chunk=8, lead_rows=3.5) == 0
    assert not single.due(2) and single.due(3)  # 7 - 3.5 rows to play: the top-up skips to one tick early
    assert single.start_now(actions=4, buffered=4, in_flight=0, per_chunk=8, lead_rows=3.5) == 0
    assert single.start_now(actions=5, buffered=3, in_flight=0, per_chunk=8, lead_rows=3.5) == 1
    assert not single.due(6)  # one request in flight: not until it is installed
    single.installed()
    assert single.due(6)
