"""What the demo prints is words a user reads at once: the result's status by name, the warming
status as a sentence."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.ros


def test_the_result_status_is_named():
    from sequence_ai_ros.action import Act

    from sequence_ai_ros.tools.demo import status_name

    assert status_name(Act, Act.Result.STATUS_TIMEOUT) == "STATUS_TIMEOUT"
    assert status_name(Act, Act.Result.STATUS_COMPLETED) == "STATUS_COMPLETED"
    assert status_name(Act, 200) == "status 200"


def test_warming_reads_as_a_sentence():
    from sequence_ai_ros.tools.demo import warming_words

    ready = warming_words(SimpleNamespace(ready=True, waited_s=0.0, eta_s=math.nan, message="ready"))
    assert ready == "the model is ready"
    assert warming_words(SimpleNamespace(ready=True, waited_s=12.4, eta_s=math.nan, message="")) == \
        "the model is ready after 12 s of warming"
    warming = warming_words(SimpleNamespace(ready=False, waited_s=3.0, eta_s=40.0, message="starting"))
    assert warming == "the model is warming: waited 3 s, about 40 s to go (starting)"
    assert "unknown" not in warming_words(SimpleNamespace(ready=False, waited_s=3.0, eta_s=math.nan, message="x"))
