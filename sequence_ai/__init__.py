"""sequence_ai — drive a robot from a remote vision-language-action policy.

    with sequence_ai.connect(model="pi05-droid") as policy:
        out = policy.run(observe=robot.read, act=robot.apply, validate=robot.is_safe,
                         hold=robot.hold, max_actions=250)

The public surface is the names below; everything else lives in `_private` modules.
Names are imported on first use so `import sequence_ai` stays cheap on a robot.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._errors import (
    AuthError,
    CertPinError,
    ChunkExhausted,
    InvalidRequest,
    OutOfCredit,
    SequencesError,
    Unavailable,
)
from ._version import __version__
from ._wire import ImageFrame, Model, Observation, Proprioception

# public name -> private module that defines it
_LAZY = {
    "connect": "._policy",
    "Policy": "._policy",
    "ActionChunk": "._chunk",
    "Prediction": "._chunk",
    "RunOutcome": "._outcome",
    "models": "._catalogue",
    "observation": "._observation",
    "encode": "._encode",
    "prepare": "._actions",
    "to_joint_positions": "._actions",
    "account": "._oneshot",
    "chat": "._oneshot",
    "decide": "._oneshot",
    "detect": "._oneshot",
    "depth": "._oneshot",
    "embed": "._oneshot",
    "DecideResult": "._oneshot",
    "Perception": "._oneshot",
    "recipes": ".recipes",
}

__all__ = [
    "__version__",
    "SequencesError",
    "AuthError",
    "OutOfCredit",
    "InvalidRequest",
    "Unavailable",
    "CertPinError",
    "ChunkExhausted",
    "ImageFrame",
    "Proprioception",
    "Observation",
    "Model",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'sequence_ai' has no attribute {name!r}")
    module = importlib.import_module(module_name, __name__)
    value = module if name == "recipes" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
