"""Placeholder until the one-shot stand-ins land."""

from __future__ import annotations

from typing import Any


def add_routes(app: Any, state: Any) -> None:
    return None
