"""One client driving the physical arm (`physical_arm.py`) for `bench_physics.py`, in a process of its own.

    python physics_driver.py '{"seconds": 20, "instruction": "...", "home": [...], "kwargs": {...}, "hz": 15,
                               "arm_python": "...", "arm": ".../physical_arm.py"}'

As `latency_driver.py`, but the arm is a MuJoCo Panda whose servos lag their targets: observe()
reads the joints it MEASURES and the two views it renders; act() sets the target q_ref + row (a
joint_delta row on the joints of the observation its chunk came from) and logs the target beside
the joints measured at that moment. Runs with this checkout's client or with the public 0.20.0 one
(never imports anything else of this checkout). Prints one JSON line: the outcome's counts, the
arm's costs and, per action, its time, wall clock, target, measured joints, age and lateness.
"""

import json
import subprocess
import sys
import time
import warnings

warnings.simplefilter("ignore")
import sequence_ai  # noqa: E402

spec = json.loads(sys.argv[1])
hz, home = float(spec.get("hz", 15.0)), list(spec["home"])
arm = subprocess.Popen([spec["arm_python"], spec["arm"], json.dumps({"home": home})], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, bufsize=1)


def ask(request: dict) -> dict:
    arm.stdin.write(json.dumps(request) + "\n")
    arm.stdin.flush()
    return json.loads(arm.stdout.readline())


observed = []  # (monotonic time, measured joints) of every observe(), in order
chunk_refs = []  # the peer: (time, joints) of the observation behind each installed chunk
since_chunk = [0]
log = []  # (monotonic, wall clock, target, measured, age, lateness) of every act


def observe():
    seen = ask({"op": "observe"})
    observed.append((time.monotonic(), seen["q"]))
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v, data in seen["frames"].items()],
        proprioception=sequence_ai.Proprioception(joint_positions=seen["q"], gripper=[0.0]),
        instruction=spec["instruction"])


def on_chunk(chunk):
    chunk_refs.append(observed[len(chunk_refs)])
    since_chunk[0] = 0


def act(action):
    now, wall = time.monotonic(), time.time()
    ref = getattr(action, "q_ref", None)
    at, moment = None, None
    if ref is None:  # the peer: the chunk's observation, by order
        at, ref = chunk_refs[-1] if chunk_refs else (None, home)
        if at is not None:
            moment = at + since_chunk[0] / hz
        since_chunk[0] += 1
    else:
        at, moment = action.observed_at, action.due_at
    target = [r + d for r, d in zip(ref, action[:7])]
    measured = ask({"op": "act", "target": target})["q"]
    log.append((now, wall, target, measured, None if at is None else now - at, None if moment is None else now - moment))


with sequence_ai.connect("pi05-droid") as policy:
    policy.predict(observe())  # admission, TLS, catalogue: not measured
    observed.clear()
    for _ in range(policy.buffered):
        policy.next_action()  # drain: the measured run starts from an empty buffer at home
    started = time.monotonic()
    out = policy.run(observe=observe, act=act, validate=lambda a: True, max_actions=int(spec["seconds"] * hz),
                     on_chunk=on_chunk, progress=False, open_loop_horizon=8, **spec.get("kwargs", {}))
costs = ask({"op": "stats"})
arm.stdin.close()
arm.wait(10)
print(json.dumps({"actions": out.actions, "chunks": out.chunks, "underruns": out.underruns,
                  "underrun_s": out.underrun_s, "elapsed_s": out.elapsed_s, "reason": out.reason, "arm": costs,
                  "log": [(t - started, wall, target, measured, age, late)
                          for t, wall, target, measured, age, late in log]}))
