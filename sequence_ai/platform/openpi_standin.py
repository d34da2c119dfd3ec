"""The stand-in policy (`policies.stand_in`) served by openpi's own `WebsocketPolicyServer`.

    python -m sequence_ai.platform.openpi_standin --port 8000 [--latency-ms 700 --jitter 0.2]

It runs where `openpi-server` is installed (its scratch venv, requirements/scratch/openpi.txt),
with this source tree on PYTHONPATH. It reads DROID's wire (two views, 7 joint positions, 1 gripper
position, the prompt) and answers `actions` of the local pi05-droid row's shape (15 × 8, joint_delta),
after the given latency — blocking the server's event loop as a real checkpoint's inference does.

Faults for the tests, chosen by the prompt so a run can meet one mid-way (set_instruction):
    a prompt with "explode"   the policy raises (the server sends the traceback and closes 1011)
    a prompt with "hang"      the policy never answers
    --action-dim N            rows N wide (a wrong width); --metadata-action-dim N: metadata that says N
    --junk-bytes N            every answer carries N more bytes (an oversized frame)
    --sweeping                the sweeping stand-in (policies.sweeping), for the moving-goal bench
"""

from __future__ import annotations

import argparse
import logging
import random
import threading
import time
from typing import Any, Dict, List

from . import policies
from .catalogue import ROWS
from .observation import LazyImages, PolicyInput

ROW = next(dict(row) for row in ROWS if row["id"].endswith("/pi05-droid"))
JOINTS_KEY = "observation/joint_position"
GRIPPER_KEY = "observation/gripper_position"
VIEW_KEYS = ("observation/exterior_image_1_left", "observation/wrist_image_left")


def make_policy(args: argparse.Namespace) -> Any:
    import numpy as np
    from openpi_client import base_policy

    class StandIn(base_policy.BasePolicy):
        def __init__(self) -> None:
            self.served = 0

        def infer(self, obs: Dict[str, Any]) -> Dict[str, Any]:
            prompt = obs.get("prompt")
            if not isinstance(prompt, str):
                raise ValueError("no prompt in the observation")
            for key in VIEW_KEYS:
                image = obs.get(key)
                if image is None or image.dtype != np.uint8 or image.shape != (224, 224, 3):
                    raise ValueError(f"{key}: expected a 224x224x3 uint8 image, got "
                                     f"{getattr(image, 'shape', None)} {getattr(image, 'dtype', None)}")
            if "explode" in prompt:
                raise RuntimeError("the stand-in policy exploded on purpose")
            if "hang" in prompt:
                threading.Event().wait()  # never answers; the process is killed by the test
            latency = args.latency_ms / 1000.0 * (1.0 + args.jitter * random.uniform(-1.0, 1.0))
            started = time.time()
            time.sleep(max(0.0, latency))
            inp = PolicyInput(images=LazyImages({}), joint_positions=[float(v) for v in obs[JOINTS_KEY]],
                              gripper=[float(v) for v in obs[GRIPPER_KEY]], instruction=prompt, seed=None,
                              model=ROW)
            rows: List[List[float]] = (policies.sweeping(inp, observed_at=started) if args.sweeping
                                       else policies.stand_in(inp))
            actions = np.asarray(rows, dtype=np.float32)
            if args.action_dim != actions.shape[1]:
                actions = np.resize(actions, (actions.shape[0], args.action_dim))
            self.served += 1
            answer: Dict[str, Any] = {"actions": actions, "policy_timing": {"infer_ms": latency * 1000.0}}
            if args.junk_bytes:
                answer["junk"] = np.zeros(args.junk_bytes, dtype=np.uint8)
            return answer

    return StandIn()


def main(argv: Any = None) -> None:
    from openpi_server.websocket_policy_server import WebsocketPolicyServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter", type=float, default=0.0, help="± this share of the latency, uniform")
    parser.add_argument("--action-dim", type=int, default=8)
    parser.add_argument("--metadata-action-dim", type=int, default=None)
    parser.add_argument("--junk-bytes", type=int, default=0)
    parser.add_argument("--sweeping", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    metadata: Dict[str, Any] = {"stand_in": "pi05-droid"}
    if args.metadata_action_dim is not None:
        metadata["action_dim"] = args.metadata_action_dim
    WebsocketPolicyServer(make_policy(args), host=args.host, port=args.port, metadata=metadata).serve_forever()


if __name__ == "__main__":
    main()
