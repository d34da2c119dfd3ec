"""account(), chat() and catalogue look-ups against the local platform."""

from __future__ import annotations

import pytest

from sequence_ai import AuthError, ChatResult, InvalidRequest, SequencesError, account, chat, models
from sequence_ai._catalogue._models import clear_cache, lookup


def test_models_needs_no_key(platform, monkeypatch):
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    rows = {m.short_id: m for m in models(base_url=platform.base_url)}
    pi05 = rows["pi05-droid"]
    assert pi05.state_dim == 8 and pi05.state_layout == {"joint_positions": 7, "gripper": 1}
    assert pi05.camera_views == ("exterior_1", "wrist_left")
    assert pi05.client_resize == {"size": [224, 224], "filter": "bilinear"}
    assert pi05.action_semantics["to_joint_positions"] == "offset_q_ref"
    assert pi05.pass_raw is True and pi05.control_hz == 15.0 and pi05.action_horizon == 15
    assert pi05.raw["open_loop_horizon"] == 8
    assert {"jev", "claude-opus-4-8", "grounding-dino-base"} <= set(rows)


def test_models_filters_by_endpoint(platform):
    assert {m.endpoint for m in models("perceive", base_url=platform.base_url)} == {"perceive"}
    with pytest.raises(ValueError, match="endpoint"):
        models("nonsense", base_url=platform.base_url)


def test_unknown_catalogue_fields_are_kept_in_raw(platform):
    row = {m.short_id: m for m in models(base_url=platform.base_url)}["pi05-droid"]
    assert row.raw["pricing"] == {"per_action_chunk_usd": 0.0}
    assert row.raw["provider"] == "local stand-in"


def test_lookup_resolves_short_and_full_ids_and_refuses_unknown(platform):
    clear_cache()
    assert lookup("pi05-droid", base_url=platform.base_url).id == "accounts/sequences/models/pi05-droid"
    assert lookup("accounts/sequences/models/jev", base_url=platform.base_url).endpoint == "decide"
    with pytest.raises(InvalidRequest, match="not in the catalogue"):
        lookup("no-such-model", base_url=platform.base_url)
    with pytest.raises(InvalidRequest, match="decide"):
        lookup("jev", endpoint="chat", base_url=platform.base_url)


def test_account_shape(platform):
    acct = account(base_url=platform.base_url, api_key=platform.api_key)
    assert isinstance(acct["balance"]["balance"], (int, float))
    assert "usage" in acct


def test_account_with_a_bad_key_is_an_auth_error(platform):
    with pytest.raises(AuthError):
        account(base_url=platform.base_url, api_key="seq_test_not_a_real_key_0000")


def test_account_without_a_key_fails_before_any_request(monkeypatch):
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    with pytest.raises(AuthError, match="SEQUENCES_API_KEY"):
        account(base_url="http://127.0.0.1:9")


def test_chat_returns_the_assistant_message(platform):
    answer = chat("claude-opus-4-8", "what next?", base_url=platform.base_url, api_key=platform.api_key)
    assert isinstance(answer, ChatResult)  # as 0.20.0: attributes, the answer itself in .raw
    assert answer.message["role"] == "assistant"
    assert "what next?" in answer.message["content"]
    assert answer.finish_reason == "stop" and answer.usage and answer.raw["message"] == answer.message


def test_chat_refuses_locally_what_the_gateway_would_refuse(platform):
    kwargs = {"base_url": platform.base_url, "api_key": platform.api_key}
    with pytest.raises(InvalidRequest, match="empty"):
        chat("claude-opus-4-8", [], **kwargs)
    with pytest.raises(InvalidRequest, match="256"):
        chat("claude-opus-4-8", [{"role": "user", "content": "x"}] * 257, **kwargs)
    with pytest.raises(InvalidRequest, match="chat"):
        chat("jev", "hello", **kwargs)


def test_unreachable_gateway_is_unavailable_not_httpx():
    with pytest.raises(SequencesError) as failed:
        models(base_url="http://127.0.0.1:9")
    assert type(failed.value).__name__ == "Unavailable"
