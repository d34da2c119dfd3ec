"""decide(): answer shapes by question type, keys preserved, and a 503 is an outage."""

from __future__ import annotations

import pytest
from _scripted_gateway import ScriptedGateway

from sequence_ai import DecideResult, InvalidRequest, Unavailable, decide

QUESTIONS = {
    "zeta_is_urgent": {"type": "noul", "instructions": "Does this convey urgency?",
                       "criteria": {"true": "Time-sensitive", "false": "Not urgent"}},
    "alpha_department": {"type": "choice", "instructions": "Which team handles this?",
                         "criteria": {"billing": "Payments", "technical": "Bugs", "sales": "Pricing"}},
    "mid_severity": {"type": "score", "instructions": "How bad is it?",
                     "criteria": ["minor", "major", "critical"]},
}


def test_answers_have_the_shape_of_their_question_type_under_the_callers_keys(platform):
    result = decide("jev", "Help! My payouts have been failing for 3 days.", QUESTIONS,
                    base_url=platform.base_url, api_key=platform.api_key)
    assert isinstance(result, DecideResult)
    assert list(result.answers) == list(QUESTIONS)  # keys and their order preserved
    noul = result.answers["zeta_is_urgent"]
    assert noul["type"] == "noul" and 0.0 <= noul["noul"] <= 1.0
    choice = result.answers["alpha_department"]
    assert choice["choice"] in {"billing", "technical", "sales"}
    assert set(choice["probabilities"]) == {"billing", "technical", "sales"}
    assert sum(choice["probabilities"].values()) == pytest.approx(1.0, abs=1e-4)
    assert choice["confidence"] == max(choice["probabilities"].values())
    score = result.answers["mid_severity"]
    assert {"score", "legend", "probabilities", "confidence"} <= set(score)
    assert result.model == "accounts/sequences/models/jev"
    assert result.raw["answers"] == result.answers


def test_decide_refuses_locally_before_sending(platform):
    kwargs = {"base_url": platform.base_url, "api_key": platform.api_key}
    with pytest.raises(InvalidRequest, match="empty"):
        decide("jev", "x", {}, **kwargs)
    with pytest.raises(InvalidRequest, match="type"):
        decide("jev", "x", {"q": {"type": "yes-or-no"}}, **kwargs)
    with pytest.raises(InvalidRequest, match="decide"):
        decide("claude-opus-4-8", "x", QUESTIONS, **kwargs)
    with pytest.raises(TypeError):
        decide("jev", "x", ["not", "a", "mapping"], **kwargs)


def test_a_503_from_decide_is_an_outage_not_warming():
    with ScriptedGateway() as gateway:
        warming_body = {"detail": {"status": "warming_up", "retry_after_s": 30, "message": "provider down"}}
        gateway.script["/v1/decide"] = [(503, {"Retry-After": "30"}, warming_body)]
        with pytest.raises(Unavailable) as failed:
            decide("jev", "x", QUESTIONS, base_url=gateway.base_url, api_key="seq_test_key_for_stub_0000")
        assert failed.value.status == 503
        assert failed.value.warming is False
        assert len(gateway.seen) == 1  # no warm-wait, no retry
