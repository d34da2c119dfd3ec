"""The gateway and the worker fuzzed from their own OpenAPI documents (schemathesis): no route
answers 5xx or hangs, whatever a schema-driven generator sends.

schemathesis's pytest plugin does not run under this pytest, so each operation's hypothesis
strategy is driven directly.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from platform_helpers import connect

schemathesis = pytest.importorskip("schemathesis")
pytestmark = pytest.mark.filterwarnings("ignore:Unverified HTTPS request")


def _fuzz_every_operation(base_url: str, secret: str, examples: int, **tls) -> set:
    auth = {"Authorization": f"Bearer {secret}"}
    # The worker serves its document only to holders of the direct secret; the gateway ignores it.
    schema = schemathesis.openapi.from_url(base_url + "/openapi.json", headers=auth, **tls)
    fuzzed = set()

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def fuzz(case):
        response = case.call(base_url=base_url, headers=auth, timeout=10, **tls)
        label = case.operation.label
        assert response.status_code < 500, (label, response.status_code, response.text[:300])
        if response.status_code >= 400:
            assert response.json()["detail"], (label, response.text[:300])

    for result in schema.get_all_operations():
        operation = result.ok()
        # The admin API is the harness's, behind its own token; fuzzing it would arm random faults.
        if operation.path.startswith("/admin"):
            continue
        fuzzed.add(operation.path)
        given(case=operation.as_strategy())(fuzz)()
    return fuzzed


def test_no_gateway_route_answers_a_server_error(platform):
    fuzzed = _fuzz_every_operation(platform.base_url, platform.api_key, 20)
    assert {"/v1/act/connect", "/v1/decide", "/v1/perceive", "/v1/chat", "/v1/reports/act"} <= fuzzed


def test_no_worker_route_answers_a_server_error(platform):
    answer = connect(platform)
    fuzzed = _fuzz_every_operation(answer["worker_url"], answer["direct_secret"], 25, verify=False)
    assert fuzzed == {"/act", "/act/episode_end", "/ping"}
