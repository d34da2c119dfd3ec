"""The recording suites: their helpers (_runs.py) live beside them."""

from __future__ import annotations

import pytest

# --import-mode=importlib does not put test folders on sys.path.


@pytest.fixture
def recorded(tmp_path):
    """(path, what was sent, the closed Recorder) of the scripted run in _runs.py."""
    pytest.importorskip("mcap", reason="needs the [record] extra")
    from _runs import scripted_run

    from sequence_ai.recording import Recorder

    path = tmp_path / "run.mcap"
    with Recorder(path) as recorder:
        sent = scripted_run(recorder)
    return path, sent, recorder
