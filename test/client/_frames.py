"""Synthetic camera frames with natural-ish content: gradients, hard edges and sensor noise."""

from __future__ import annotations

import numpy as np


def natural_frame(width: int = 1280, height: int = 720, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([x / width * 255, y / height * 255, (x + y) / (width + height) * 255], -1)
    for _ in range(30):  # flat rectangles give edges at every phase of the filter
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = x0 + int(rng.integers(3, max(4, width // 4))), y0 + int(rng.integers(3, max(4, height // 4)))
        image[y0:y1, x0:x1] = rng.integers(0, 256, 3)
    image += rng.normal(0, 12, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)
