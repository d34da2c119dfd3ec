"""What a policy (stand-in or plug-in) is given: the observation after the contract checks.

Images are decoded to numpy arrays only when a policy reads them, so the stand-ins, which do not
look at pixels, never pay for JPEG decoding.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional


class LazyImages(Mapping):
    """view -> HxWx3 uint8 array, decoded from the JPEG/PNG bytes on first access."""

    def __init__(self, encoded: Dict[str, bytes]):
        self._encoded = encoded
        self._decoded: Dict[str, Any] = {}

    def __getitem__(self, view: str) -> Any:
        if view not in self._decoded:
            import numpy as np
            from PIL import Image

            with Image.open(io.BytesIO(self._encoded[view])) as img:
                self._decoded[view] = np.asarray(img.convert("RGB"))
        return self._decoded[view]

    def __iter__(self) -> Iterator[str]:
        return iter(self._encoded)

    def __len__(self) -> int:
        return len(self._encoded)

    def encoded(self, view: str) -> bytes:
        """The frame's JPEG/PNG bytes as sent."""
        return self._encoded[view]


@dataclass
class PolicyInput:
    """One checked observation. `joint_positions` and `gripper` already have the widths of the
    model's state_layout (padded or truncated, with a warning, per docs/PROTOCOL.md §8.1)."""

    images: LazyImages
    joint_positions: List[float]
    gripper: List[float]
    instruction: str
    seed: Optional[int]
    model: Dict[str, Any]
    episode_id: Optional[str] = None
    state: Dict[str, List[float]] = field(default_factory=dict)
