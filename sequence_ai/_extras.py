"""The optional extras (pyproject.toml's optional-dependencies, held equal to these by
test/test_install_hints.py) and the command that installs one.

A hint names the extra's packages themselves, never this project's name with the extra: this
project is not on any package index, and an index answers its name with a different project
(whose releases do not have these extras). From a checkout, `pip install '<checkout>[extra]'`
installs the same packages.
"""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["EXTRAS", "install_hint"]

EXTRAS: Dict[str, Tuple[str, ...]] = {
    "image": ("pillow>=9.0.1", "numpy>=1.21.5"),
    "serve": ("fastapi>=0.110", "uvicorn>=0.29", "cryptography>=42", "pillow>=10", "numpy>=1.23"),
    "record": ("mcap>=1.6,<2", "mcap-ros2-support>=0.6,<1"),
    "replay": ("mcap>=1.6,<2", "mcap-ros2-support>=0.6,<1", "matplotlib>=3.5"),
    "lerobot": ("mcap>=1.6,<2", "mcap-ros2-support>=0.6,<1", "lerobot[dataset]>=0.6,<0.7"),
    "physics": ("mujoco>=3.2", "gymnasium-robotics>=1.4", "numpy>=1.23", "pillow>=10"),
    "openpi": ("websockets>=13", "msgpack>=1.0", "pillow>=10", "numpy>=1.23"),
}


def install_hint(extra: str) -> str:
    """`pip install 'mcap>=1.6,<2' 'mcap-ros2-support>=0.6,<1' (the [record] extra)`."""
    packages = " ".join(f"'{package}'" for package in EXTRAS[extra])
    return f"pip install {packages} (the [{extra}] extra)"
