"""sequence_ai — drive a robot from a remote vision-language-action policy.

    with sequence_ai.connect(model="pi05-droid") as policy:
        out = policy.run(observe=robot.read, act=robot.apply, validate=robot.is_safe,
                         hold=robot.hold, max_actions=250)

The public surface is the names below; everything else lives in `_private` modules. Code
written for the 0.20.0 client also finds `sequence_ai.errors`, `.types`, `.perceive` and `.act`.
Names are imported on first use so `import sequence_ai` stays cheap on a robot.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._errors import (
    AuthError,
    CertPinError,
    ChunkExhausted,
    InvalidArgument,
    InvalidArgumentType,
    InvalidIndex,
    InvalidRequest,
    ObservationMismatch,
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
    "ActionChunk": "._act._chunk",
    "Prediction": "._act._chunk",
    "RunOutcome": "._loop._outcome",
    "models": "._catalogue._models",
    "observation": "._vision._observation",
    "encode": "._vision._encode",
    "prepare": "._act._actions",
    "to_joint_positions": "._act._actions",
    "DEFAULT_JPEG_QUALITY": "._vision._encode",
    "DEFAULT_BASE_URL": "._net._http",
    "account": "._oneshot._calls",
    "chat": "._oneshot._calls",
    "decide": "._oneshot._calls",
    "ChatResult": "._oneshot._calls",
    "DecideResult": "._oneshot._calls",
    "detect": "._oneshot._perception",
    "depth": "._oneshot._perception",
    "embed": "._oneshot._perception",
    "Perception": "._oneshot._perception",
    "DetectResult": "._oneshot._perception",
    "EmbedResult": "._oneshot._perception",
    "DepthResult": "._oneshot._perception",
    "SimulatedArm": ".sim",
    "MAX_RUN_SECONDS": "._loop._settings",
    "STITCH_MODES": "._loop._stitch",
    "INSTRUCTION_LIMIT_CHARS": "._loop._instruction",
}
# sub-modules, also reachable as attributes without an import (as in 0.20.0)
_MODULES = {"recipes", "errors", "types", "perceive", "act", "sim"}

__all__ = [
    "__version__",
    "SequencesError",
    "AuthError",
    "OutOfCredit",
    "InvalidRequest",
    "Unavailable",
    "CertPinError",
    "ChunkExhausted",
    "InvalidArgument",
    "InvalidArgumentType",
    "InvalidIndex",
    "ObservationMismatch",
    "ImageFrame",
    "Proprioception",
    "Observation",
    "Model",
    *_LAZY,
    "recipes",
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module 'sequence_ai' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | _MODULES)
