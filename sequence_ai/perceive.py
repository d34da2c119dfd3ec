"""Perception as `sequence_ai.perceive`: detect, embed, depth and their answers."""

from ._oneshot._perception import DepthResult, DetectResult, EmbedResult, Perception, depth, detect, embed

__all__ = ["DepthResult", "DetectResult", "EmbedResult", "Perception", "depth", "detect", "embed"]
