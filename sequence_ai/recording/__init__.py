"""Recording a run to an MCAP file, and reading one back (needs the `[record]` extra).

    from sequence_ai.recording import Recorder, read_run

The client imports nothing from here unless a run is recorded, so `import sequence_ai` works
without the MCAP packages.
"""

from __future__ import annotations

from .reader import ReadLimits, RecordingRefused, RunRecord, read_run
from .recorder import Recorder
from .sink import RecordingStats

__all__ = ["ReadLimits", "Recorder", "RecordingRefused", "RecordingStats", "RunRecord", "read_run"]
