"""One row of the performance table (`run_all.py`): metric, ours, peer, ratio, goal, verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Row:
    metric: str
    ours: str
    peer: str = "—"
    ratio: str = "—"
    goal: str = "—"
    verdict: str = "—"  # PASS, FAIL, or — (reported, no goal)


def verdict(ok: Optional[bool]) -> str:
    return "—" if ok is None else ("PASS" if ok else "FAIL")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"
