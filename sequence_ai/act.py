"""The control loop's names as `sequence_ai.act` (where 0.20.0 kept them)."""

from ._act._chunk import ActionChunk, Prediction
from ._loop._outcome import RunOutcome
from ._policy import Policy, connect
from ._vision._observation import observation
from ._wire import ImageFrame, Observation, Proprioception

__all__ = ["ActionChunk", "ImageFrame", "Observation", "Policy", "Prediction", "Proprioception", "RunOutcome",
           "connect", "observation"]
