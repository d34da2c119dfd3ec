"""Fixtures shared by every suite: the local Sequences platform in a subprocess.

    local_platform   session-scoped: one platform for the whole run
    platform         the session platform after clear_faults(), so a test's faults never leak
    fresh_platform   a platform of its own, for tests that restart, kill or stop things
"""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # --import-mode=importlib leaves sys.path alone; the package may not be installed
    # Appended, not prepended: in the ROS workspace the installed sequence_ai_ros (which holds the
    # generated interfaces) must win over the source directory of the same name.
    sys.path.append(_ROOT)

from sequence_ai.platform.spawn import LocalPlatform


@pytest.fixture(scope="session")
def local_platform() -> Iterator[LocalPlatform]:
    with LocalPlatform() as running:
        yield running


@pytest.fixture
def platform(local_platform: LocalPlatform) -> Iterator[LocalPlatform]:
    if not local_platform.running:  # a test killed it by mistake: bring it back for the next ones
        local_platform.restart()
    local_platform.reset()
    yield local_platform
    if local_platform.running:
        local_platform.clear_faults()


@pytest.fixture
def fresh_platform() -> Iterator[LocalPlatform]:
    with LocalPlatform() as running:
        yield running
