"""One client driving a kinematic position-controlled arm for `bench_latency.py`, in a process of its own.

    python latency_driver.py FRAME_FILE '{"seconds": 40, "instruction": "...", "home": [...], "kwargs": {...},
                                          "swaps": [[t_s, "instruction"], ...], "hz": 15}'

Runs with this checkout's client or with the public 0.20.0 one (never imports anything else of this
checkout). The arm starts at `home`; each action is a joint_delta row, so its target is q_ref + row
with q_ref the joints of the observation its chunk came from (ours: the `q_ref` each row carries; the
peer: the observation that went with the chunk's request, in order). `swaps`: set_instruction() at
those seconds after run() starts. Prints one JSON line: the outcome's counts and, per action, its
time, target, age, lateness and instruction lag.

Lateness = when the row played − the moment it was computed for: ours, `Action.due_at` (its
observation's time + row/hz); the peer, which plays each chunk's rows from row 0, the observation's
time + (actions since the chunk came)/hz. Both age and lateness are timed here, by this process's
clock at act(), not read from the client's own `age_s` / `lateness_s`.
"""

import json
import sys
import threading
import time
import warnings

warnings.simplefilter("ignore")
import sequence_ai  # noqa: E402

frame_path, spec = sys.argv[1], json.loads(sys.argv[2])
hz, home = float(spec.get("hz", 15.0)), list(spec["home"])
with open(frame_path) as handle:
    data = handle.read()
q = list(home)
observed = []  # (monotonic time, joints) of every observe(), in order
chunk_refs = []  # the peer: (time, joints) of the observation behind each installed chunk
since_chunk = [0]  # the peer: actions played since its last chunk came (= the row it plays)
log = []  # (monotonic, wall clock, target, age, lateness, instruction lag) of every act
instruction = [spec["instruction"]]


def observe():
    observed.append((time.monotonic(), list(q)))
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=list(q), gripper=[0.0]), instruction=instruction[0])


def on_chunk(chunk):
    chunk_refs.append(observed[len(chunk_refs)])
    since_chunk[0] = 0


def act(action):
    global q
    now, wall = time.monotonic(), time.time()
    ref = getattr(action, "q_ref", None)
    at, moment, lag = None, None, None
    if ref is None:  # the peer: the chunk's observation, by order
        at, ref = chunk_refs[-1] if chunk_refs else (None, home)
        if at is not None:
            moment = at + since_chunk[0] / hz
        since_chunk[0] += 1
    else:
        at, moment = action.observed_at, action.due_at
        lag = None if action.swap_since is None else now - action.swap_since
    q = [r + d for r, d in zip(ref, action[:7])]
    log.append((now, wall, q, None if at is None else now - at, None if moment is None else now - moment, lag))


def swap_later(policy, started):
    for at, text in spec.get("swaps") or ():
        time.sleep(max(0.0, started + at - time.monotonic()))
        instruction[0] = text  # the peer reads it from the observation
        if hasattr(policy, "set_instruction"):
            policy.set_instruction(text)


with sequence_ai.connect("pi05-droid") as policy:
    policy.predict(observe())  # admission, TLS, catalogue: not measured
    observed.clear()
    for _ in range(policy.buffered):
        policy.next_action()  # drain: the measured run starts from an empty buffer at home
    started = time.monotonic()
    threading.Thread(target=swap_later, args=(policy, started), daemon=True).start()
    out = policy.run(observe=observe, act=act, validate=lambda a: True, max_actions=int(spec["seconds"] * hz),
                     on_chunk=on_chunk, progress=False, open_loop_horizon=8, **spec.get("kwargs", {}))
print(json.dumps({"actions": out.actions, "chunks": out.chunks, "underruns": out.underruns,
                  "underrun_s": out.underrun_s, "elapsed_s": out.elapsed_s, "reason": out.reason,
                  "log": [(t - started, wall, target, age, late, lag) for t, wall, target, age, late, lag in log]}))
