"""The calls that stand apart from the control loop: account, chat, decide — one request, one
answer (docs/PROTOCOL.md §4.3, §4.7, §4.8). Perception (detect / embed / depth) is `_perception.py`.

chat and decide are answered by an external provider: no warm-wait, a 503 is an outage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .._catalogue._models import resolve_model
from .._errors import InvalidArgumentType, InvalidRequest, SequencesError, Unavailable
from .._net._http import gateway_call, require_api_key, resolve_base_url
from .._wire import Model

__all__ = ["ChatResult", "DecideResult", "account", "chat", "decide", "envelope", "parse_chat", "parse_decide"]

QUESTION_TYPES = ("noul", "choice", "score")
MAX_CHAT_MESSAGES = 256


def _row(model: Union[Model, str], endpoint: str, base_url: str, api_key: str) -> Model:
    return resolve_model(model, endpoint=endpoint, base_url=base_url, api_key=api_key)


def _provider_call(base: str, path: str, key: str, body: Dict[str, Any], timeout_s: Optional[float]) -> Any:
    """A call answered by an external provider: nothing warms there, so a 503 is an outage
    and never reports warming=True, whatever the body says."""
    try:
        return gateway_call("POST", base, path, api_key=key, json_body=body, timeout_s=timeout_s)
    except Unavailable as exc:
        if not exc.warming:
            raise
        raise Unavailable(
            f"{path.rsplit('/', 1)[-1]} provider unavailable: {exc.message}",
            exc.status,
            exc.body,
            retry_after_s=exc.retry_after_s,
        ) from None


def account(*, base_url: Optional[str] = None, api_key: Optional[str] = None, timeout_s: Optional[float] = 15.0) -> Dict[str, Any]:
    """The key's account, untouched: `balance` (prepaid money left), `usage`, `limits`."""
    base = resolve_base_url(base_url)
    body = gateway_call("GET", base, "/v1/account", api_key=require_api_key(api_key, base), timeout_s=timeout_s)
    if not isinstance(body, dict):
        raise SequencesError("malformed /v1/account answer: not a JSON object")
    return body


def envelope(answer: Dict[str, Any]) -> Dict[str, Any]:
    """What every one-shot answer carries besides its payload: id, model, usage, perf, warnings,
    and the answer itself as `raw` (fields of a malformed type are left empty)."""
    usage, perf, warnings = answer.get("usage"), answer.get("perf"), answer.get("warnings")
    return {
        "id": str(answer.get("id") or ""),
        "model": str(answer.get("model") or ""),
        "usage": usage if isinstance(usage, dict) else {},
        "perf": perf if isinstance(perf, dict) else {},
        "warnings": warnings if isinstance(warnings, list) else [],
        "raw": answer,
    }


@dataclass(frozen=True)
class ChatResult:
    """One assistant turn: `message` ({"role": "assistant", "content": ...}), `finish_reason`
    ("stop", "length", "tool_calls" ...), and the answer's `usage`, `perf`, `warnings`."""

    id: str
    model: str
    message: Dict[str, Any]
    finish_reason: str
    usage: Dict[str, Any] = field(default_factory=dict)
    perf: Dict[str, Any] = field(default_factory=dict)
    warnings: List[Any] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def parse_chat(body: Any) -> ChatResult:
    if not isinstance(body, dict):
        raise SequencesError("malformed /v1/chat answer: not a JSON object")
    message = body.get("message")
    if not isinstance(message, dict):
        raise SequencesError("malformed /v1/chat answer: 'message' is not an object")
    return ChatResult(message=message, finish_reason=str(body.get("finish_reason") or ""), **envelope(body))


def chat(
    model: Union[Model, str],
    messages: Union[str, Sequence[Mapping[str, Any]]],
    *,
    max_tokens: int = 1024,
    temperature: Optional[float] = None,
    tools: Optional[List[Dict[str, Any]]] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    timeout_s: Optional[float] = 120.0,
) -> ChatResult:
    """One assistant turn: a ChatResult (`message`, `finish_reason`, `usage`, ...; `raw` is the
    answer untouched).

    `messages` is a list of {"role", "content"} or a plain string (one user turn). Bounded by
    `timeout_s` (the 0.20.0 client waited forever by default)."""
    base = resolve_base_url(base_url)
    key = require_api_key(api_key, base)
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, Sequence) or not all(isinstance(m, Mapping) for m in messages):
        raise InvalidArgumentType("messages must be a string or a list of {'role': ..., 'content': ...} objects")
    if not messages:
        raise InvalidRequest("messages is empty; send at least one")
    if len(messages) > MAX_CHAT_MESSAGES:
        raise InvalidRequest(f"{len(messages)} messages is more than the {MAX_CHAT_MESSAGES} a chat call takes")
    row = _row(model, "chat", base, key)
    body: Dict[str, Any] = {"model": row.id, "messages": [dict(m) for m in messages], "max_tokens": max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    if tools is not None:
        body["tools"] = tools
    return parse_chat(_provider_call(base, "/v1/chat", key, body, timeout_s))


@dataclass(frozen=True)
class DecideResult:
    """A decide answer. `answers` maps each of your question keys to its answer object, in the
    order given; its shape follows the question's type: noul → `noul` (0..1); choice → `choice`,
    `probabilities`, `confidence`; score → `score`, `legend`, `probabilities`, `confidence`."""

    answers: Dict[str, Dict[str, Any]]
    id: str = ""
    model: str = ""
    provider: str = ""
    usage: Dict[str, Any] = field(default_factory=dict)
    perf: Dict[str, Any] = field(default_factory=dict)
    warnings: List[Any] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def parse_decide(body: Any) -> DecideResult:
    """A DecideResult from a /v1/decide answer, or SequencesError naming what is malformed."""
    if not isinstance(body, dict):
        raise SequencesError("malformed /v1/decide answer: not a JSON object")
    answers = body.get("answers")
    if not isinstance(answers, dict):
        raise SequencesError("malformed /v1/decide answer: 'answers' is not an object")
    for key, answer in answers.items():
        if not isinstance(answer, dict):
            raise SequencesError(f"malformed /v1/decide answer: answer {key!r} is not an object")
    return DecideResult(answers=dict(answers), provider=str(body.get("provider") or ""), **envelope(body))


def decide(
    model: Union[Model, str],
    state: Any,
    questions: Mapping[str, Mapping[str, Any]],
    *,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    timeout_s: Optional[float] = 60.0,
) -> DecideResult:
    """Score typed questions about `state` (a string, object or array) with a decision model.

    Each question is {"type": "noul" | "choice" | "score", "instructions": ..., "criteria": ...};
    the answer comes back under the same key. No cold-start wait: a 503 means the provider is
    down (Unavailable with warming=False), not warming."""
    base = resolve_base_url(base_url)
    key = require_api_key(api_key, base)
    if not isinstance(questions, Mapping):
        raise InvalidArgumentType("questions must be a mapping of your key -> {'type': ..., 'instructions': ..., 'criteria': ...}")
    if not questions:
        raise InvalidRequest("questions is empty; ask at least one")
    for name, question in questions.items():
        if not isinstance(question, Mapping) or question.get("type") not in QUESTION_TYPES:
            raise InvalidRequest(f"question {name!r} needs a type, one of {', '.join(QUESTION_TYPES)}")
    row = _row(model, "decide", base, key)
    body = {"model": row.id, "state": state, "questions": {str(k): dict(v) for k, v in questions.items()}}
    answer = _provider_call(base, "/v1/decide", key, body, timeout_s)
    return parse_decide(answer)
