"""openpi's own client driving the same kinematic arm as `latency_driver.py`, for `bench_openpi.py`, in
openpi's scratch venv (never imports this checkout).

    python openpi_peer_driver.py FRAME_FILE '{"url": "ws://...", "seconds": 40, "instruction": "...",
                                              "home": [...], "hz": 15, "horizon": 8}'

As openpi's DROID example drives a robot: `WebsocketClientPolicy` wrapped in an `ActionChunkBroker`
with open-loop horizon 8, called once per tick at 15 Hz; the broker asks the server for a new chunk only
when the last one is played out, and the tick waits for that answer. Each row is a joint_delta from
the joints of the observation its chunk was asked with. Prints one JSON line in `latency_driver.py`'s
form: counts, and per action its time, target, age and lateness (by this process's clock). Held time:
every gap between two actions beyond one period.
"""

import base64
import io
import json
import sys
import time

import numpy as np
from openpi_client.action_chunk_broker import ActionChunkBroker
from openpi_client.websocket_client_policy import WebsocketClientPolicy
from PIL import Image

frame_path, spec = sys.argv[1], json.loads(sys.argv[2])
hz, home, period = float(spec["hz"]), list(spec["home"]), 1.0 / float(spec["hz"])
with open(frame_path) as handle:
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(handle.read()))).convert("RGB"), dtype=np.uint8)
q = list(home)
calls = []  # (time, joints) of the observation behind each server call


class Counting:
    """The inner policy, counting the calls the broker makes and noting their observations."""

    def __init__(self, inner):
        self.inner = inner

    def infer(self, obs):
        calls.append((time.monotonic(), list(obs["observation/joint_position"])))
        return self.inner.infer(obs)

    def reset(self):
        self.inner.reset()


def observation():
    return {"observation/exterior_image_1_left": image, "observation/wrist_image_left": image,
            "observation/joint_position": np.asarray(q, dtype=np.float64),
            "observation/gripper_position": np.zeros(1), "prompt": spec["instruction"]}


client = WebsocketClientPolicy(spec["url"])
client.infer(observation())  # the connection's first request: not measured (as ours: predict() first)
broker = ActionChunkBroker(Counting(client), action_horizon=int(spec["horizon"]))
log, actions, held, stops = [], int(spec["seconds"] * hz), 0.0, 0
seen, row = 0, 0  # server calls seen, and the row of the current chunk being played
started = previous = time.monotonic()
for index in range(actions):
    action = broker.infer(observation())["actions"]
    now, wall = time.monotonic(), time.time()
    row = 0 if len(calls) != seen else row + 1
    seen = len(calls)
    at, ref = calls[-1]
    q = [r + d for r, d in zip(ref, action[:7])]
    gap = now - previous - period if index else 0.0
    if gap > 0.5 * period:  # the arm got no command for more than half a period: it stood still
        held, stops = held + gap, stops + 1
    previous = now
    log.append((now - started, wall, q, now - at, now - (at + row / hz), None))
    time.sleep(max(0.0, period - (time.monotonic() - now)))
elapsed = time.monotonic() - started
print(json.dumps({"actions": actions, "chunks": len(calls), "underruns": stops, "underrun_s": held,
                  "elapsed_s": elapsed, "reason": "completed", "log": log}))
