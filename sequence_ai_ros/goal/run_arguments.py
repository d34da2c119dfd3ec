"""`Policy.run()`'s arguments that follow from the node's config alone.

They are computed once, when the node starts (as a controller's on_configure turns its parameters
into settings): the config cannot change, and each goal adds only its own (instruction, bounds,
callables).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

from ..parameters import NodeConfig

__all__ = ["RunArguments"]


@dataclass(frozen=True)
class RunArguments:
    """The keyword arguments of `Policy.run()` the config decides; `as_kwargs()` hands them over."""

    prefetch: bool
    lookahead: Union[int, str]  # "auto": as many requests in flight as the refill latency needs
    stitch: str
    take_over: Optional[bool]  # None: wherever the mode allows it; False: never
    request_budget: Optional[float]  # None: the client's default
    smooth_seam: int
    startup_timeout_s: float

    @classmethod
    def from_config(cls, c: NodeConfig) -> RunArguments:
        # A dry run's arm does not move: no motion to continue, each chunk as it comes, and so
        # nothing to take over (parameters.py has refused a take_over the mode rules out).
        take_over = c.take_over and not c.dry_run
        return cls(
            prefetch=c.prefetch,
            lookahead=c.lookahead or "auto",
            stitch="none" if c.dry_run else c.stitch,
            take_over=None if take_over else False,
            request_budget=(c.request_budget or None) if take_over else None,
            smooth_seam=c.smooth_seam,
            startup_timeout_s=c.startup_timeout_s,
        )

    def as_kwargs(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)
