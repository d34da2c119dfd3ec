"""A scripted run recorded through the real Recorder: what was sent is kept, to compare with the file."""

from __future__ import annotations

import base64
import io
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple

from sequence_ai._loop._outcome import RunOutcome, RunProgress
from sequence_ai.recording import Recorder

VIEWS = ("exterior_image_1_left", "wrist_image_left")
JOINTS = [f"panda_joint{i}" for i in range(1, 8)] + ["gripper"]


def jpeg(seed: int, size: Tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    image = Image.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=80)
    return out.getvalue()


@dataclass
class SentRun:
    """What the scripted run handed to the recorder, in order."""

    t0: float
    frames: List[Tuple[str, bytes]] = field(default_factory=list)
    joints: List[List[float]] = field(default_factory=list)
    rids: List[str] = field(default_factory=list)
    chunks: Dict[str, List[List[float]]] = field(default_factory=dict)
    commands: List[Tuple[List[float], str, int]] = field(default_factory=list)
    freshness: List[Tuple[float, float]] = field(default_factory=list)  # each command's (age_s, lateness_s)
    holds: List[str] = field(default_factory=list)
    instructions: List[str] = field(default_factory=list)
    outcome: Any = None


def scripted_run(recorder: Recorder, *, chunks: int = 3, rows: int = 5, joints: int = 7,
                 reason: str = "interrupted", hz: float = 15.0, frame: Callable[[int], bytes] = jpeg,
                 space: str = "joint_position", published: bool = False) -> SentRun:
    """Three requests of 5 rows each, an underrun hold between the 2nd and 3rd, an instruction
    change before the 3rd, progress after each chunk, and the outcome (`reason`). `joints`: an
    arm of another size (the gripper follows them); `hz`: the model's rate as recorded (the
    actions still play 1/15 s apart); `frame(seed)`: each camera frame's bytes; `space`: the rows'
    action space; `published`: each action with the command a node would publish for it, its
    gripper named as the node names it (fr3_finger_joint1)."""
    names = [f"panda_joint{i}" for i in range(1, joints + 1)] + ["gripper"]
    t = time.monotonic()
    sent = SentRun(t0=t)
    recorder.run_started(model="pi05-droid", episode_id="ep-1", control_hz=hz, joint_names=names,
                         camera_views=VIEWS, extra={"robot": "franka"}, t=t)
    instruction = "pick up the red cube"
    recorder.instruction(instruction, t=t)
    sent.instructions.append(instruction)
    actions = 0
    for k in range(chunks):
        if k == chunks - 1:
            t += 0.01
            instruction = "put it on the plate"
            recorder.instruction(instruction, t=t)
            sent.instructions.append(instruction)
        rid = f"r-{k:08x}"
        images = []
        for v, view in enumerate(VIEWS):
            data = frame(10 * k + v)
            images.append({"view": view, "data": base64.b64encode(data).decode(), "timestamp_ms": None})
            sent.frames.append((view, data))
        positions = [0.1 * k + 0.01 * j for j in range(joints)]
        observation = {"images": images, "proprioception": {"joint_positions": positions, "gripper": [0.02 * k]},
                       "instruction": instruction}
        sent.joints.append([*positions, 0.02 * k])
        sent_t = t
        recorder.observation(rid, observation, t=t)
        recorder.request(rid, instruction, actions_at_submit=actions, episode_id="ep-1", views=VIEWS, t=t)
        sent.rids.append(rid)
        steps = [[0.1 * k + 0.001 * r + 0.01 * j for j in range(joints + 1)] for r in range(rows)]
        sent.chunks[rid] = steps
        t += 0.15
        recorder.answer(rid, steps, sent_t=sent_t, latency_s=0.15, action_space=space, control_hz=hz,
                        t=t)
        if k == chunks - 1:
            recorder.hold("underrun", t=t - 0.1)
            sent.holds.append("underrun")
        for r, row in enumerate(steps):
            t += 1 / 15
            age = t - sent_t  # the observation went with the request
            if published:
                recorder.arm_command([*names[:-1], "fr3_finger_joint1"], [1.0 + v for v in row], t=t - 0.001)
            recorder.command(row, rid=rid, row_index=r, age_s=age, lateness_s=age - r / 15, t=t)
            sent.commands.append((row, rid, r))
            sent.freshness.append((age, age - r / 15))
            actions += 1
        recorder.feedback(RunProgress(running=True, actions=actions, chunks=k + 1, buffered=0, elapsed_s=t - sent.t0,
                                      instruction=instruction, refill_latency_s=0.15), t=t)
    outcome = RunOutcome(actions=actions, chunks=chunks, elapsed_s=t - sent.t0, reason=reason, underruns=1,
                         underrun_s=0.1, max_seam_jump=0.01, action_space="joint_position", instruction_swaps=1,
                         max_instruction_lag_s=0.02, observe_s=0.003)
    t += 0.01
    recorder.hold(reason, t=t)
    sent.holds.append(reason)
    recorder.outcome(outcome, t=t)
    sent.outcome = outcome
    return sent
