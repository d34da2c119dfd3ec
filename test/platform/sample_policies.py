"""Plug-in policies for the tests (`--policy sample_policies:dispatch`). The instruction picks
the behaviour so one platform process can exercise every case."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np


def dispatch(inp):
    horizon = int(inp.model["action_horizon"])
    if inp.instruction == "raise":
        raise RuntimeError("boom from the plug-in")
    if inp.instruction == "wrong width":
        return [[0.0] * 5 for _ in range(horizon)]
    if inp.instruction == "nan":
        return [[math.nan] * 8 for _ in range(horizon)]
    if inp.instruction == "empty":
        return []
    if inp.instruction == "steps object":
        return SimpleNamespace(steps=[{"index": i, "values": [0.5] * 8} for i in range(3)])
    # Prove the pixels arrive decoded: echo each view's height/width and mean colour.
    ext = inp.images["exterior_1"]
    wrist = inp.images["wrist_left"]
    row = [ext.shape[0] / 1000, ext.shape[1] / 1000, float(ext[..., 0].mean()) / 255, wrist.shape[0] / 1000,
           len(inp.joint_positions) / 10, len(inp.gripper) / 10, float(inp.seed or 0) / 100, 1.0]
    return np.array([row] * horizon)
