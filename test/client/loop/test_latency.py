"""RefillLatency: the EMA that times prefetch."""

from __future__ import annotations

import math

from sequence_ai._loop._latency import RefillLatency


def test_refill_latency_has_no_estimate_before_the_first_sample():
    estimator = RefillLatency()
    assert estimator.estimate_s is None and estimator.lead_s(15.0) is None


def test_refill_latency_takes_the_first_sample_as_is():
    estimator = RefillLatency()
    estimator.record(0.3)
    assert estimator.estimate_s == 0.3


def test_refill_latency_moves_three_tenths_toward_each_new_sample():
    estimator = RefillLatency()
    estimator.record(0.2)
    estimator.record(0.4)
    assert math.isclose(estimator.estimate_s, 0.7 * 0.2 + 0.3 * 0.4)


def test_refill_latency_ignores_negative_and_nan_samples():
    estimator = RefillLatency()
    estimator.record(0.1)
    estimator.record(float("nan"))
    estimator.record(-1.0)
    assert estimator.estimate_s == 0.1 and estimator.samples == 1


def test_lead_is_one_and_a_quarter_estimates_plus_one_period():
    estimator = RefillLatency()
    estimator.record(0.4)
    assert math.isclose(estimator.lead_s(10.0), 0.6)


def test_steady_latency_adds_no_deviation_to_the_lead():
    estimator = RefillLatency()
    for _ in range(10):
        estimator.record(0.3)
    assert estimator.deviation_s == 0.0 and math.isclose(estimator.lead_s(15.0), 1.25 * 0.3 + 1 / 15)


def test_jittery_latency_asks_for_more_lead_than_a_steady_one_of_the_same_mean():
    steady, jittery = RefillLatency(), RefillLatency()
    for i in range(20):
        steady.record(0.3)
        jittery.record(0.15 if i % 2 else 0.45)
    assert jittery.deviation_s > 0.05
    assert jittery.lead_s(15.0) > steady.lead_s(15.0) + 0.1


def test_a_seed_is_the_estimate_until_the_first_sample_replaces_it():
    estimator = RefillLatency()
    estimator.seed(0.7)  # predict()'s service time
    assert estimator.estimate_s == 0.7 and estimator.samples == 0 and estimator.lead_s(15.0) is not None
    estimator.seed(0.9)  # a later predict() before any sample: the newer guess
    estimator.record(0.6)
    assert estimator.estimate_s == 0.6 and estimator.deviation_s == 0.0  # replaced, not averaged
    estimator.seed(5.0)
    estimator.seed(float("nan"))
    assert estimator.estimate_s == 0.6  # a run's own samples are never moved by a seed
