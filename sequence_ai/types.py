"""The client's data types, as `sequence_ai.types`: what goes on the wire and what comes back."""

from ._act._chunk import ActionChunk, Prediction
from ._loop._outcome import RunOutcome
from ._oneshot._calls import ChatResult, DecideResult
from ._oneshot._perception import DepthResult, DetectResult, EmbedResult, Perception
from ._wire import ImageFrame, Model, Observation, Proprioception

__all__ = [
    "ActionChunk",
    "ChatResult",
    "DecideResult",
    "DepthResult",
    "DetectResult",
    "EmbedResult",
    "ImageFrame",
    "Model",
    "Observation",
    "Perception",
    "Prediction",
    "Proprioception",
    "RunOutcome",
]
