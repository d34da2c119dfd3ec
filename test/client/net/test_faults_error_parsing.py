"""Answers → exceptions (docs/PROTOCOL.md §3.3), for every body shape the client must understand."""

from __future__ import annotations

import json

import pytest

from sequence_ai import AuthError, InvalidRequest, OutOfCredit, SequencesError, Unavailable
from sequence_ai._net._http import error_from_response


def test_plain_detail_string_becomes_the_message():
    error = error_from_response(400, json.dumps({"detail": "observation.images is missing view(s): wrist_left"}))
    assert type(error) is InvalidRequest and error.message.endswith("wrist_left") and error.status == 400


def test_structured_warming_detail_sets_warming_retry_and_job():
    body = {"detail": {"status": "warming_up", "retry_after_s": 142, "warming_job_id": "wj_5c1e",
                       "message": "model is loading"}}
    error = error_from_response(503, json.dumps(body), {"retry-after": "9"})
    assert isinstance(error, Unavailable) and error.warming
    assert error.retry_after_s == 142 and error.job_id == "wj_5c1e" and error.message == "model is loading"


def test_top_level_warming_code_body_is_warming():
    error = error_from_response(503, json.dumps({"code": "warming", "message": "worker starting", "retry_after_s": 60}))
    assert error.warming and error.retry_after_s == 60 and error.message == "worker starting"


def test_validation_list_message_is_the_list_repr():
    body = {"detail": [{"type": "list_type", "loc": ["body", "observation"], "msg": "Input should be a valid list"}]}
    error = error_from_response(422, json.dumps(body))
    assert type(error) is InvalidRequest and error.message.startswith("[{")


def test_busy_body_without_detail_keeps_raw_text_and_reads_retry_after_header():
    error = error_from_response(429, '{"error":"overloaded"}', {"retry-after": "1"})
    assert type(error) is Unavailable and not error.warming
    assert error.message == '{"error":"overloaded"}' and error.retry_after_s == 1.0


def test_zero_retry_after_in_the_body_suppresses_the_header():
    error = error_from_response(503, json.dumps({"detail": {"status": "warming_up", "retry_after_s": 0}}),
                                {"retry-after": "30"})
    assert error.retry_after_s == 0


@pytest.mark.parametrize("status,kind", [(401, AuthError), (402, OutOfCredit), (403, InvalidRequest),
                                         (409, InvalidRequest), (413, InvalidRequest), (504, Unavailable)])
def test_status_maps_to_its_class(status, kind):
    assert type(error_from_response(status, "nope")) is kind


@pytest.mark.parametrize("status", [500, 501, 502])
def test_other_server_errors_are_the_base_class(status):
    assert type(error_from_response(status, "boom")) is SequencesError
