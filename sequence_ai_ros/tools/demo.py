"""The closed-loop demo: local platform + simulated arm + policy node, driven like a planner would.

    make demo        (or: scripts/workspace.sh demo [--seconds 12] [--instant] [--out out/])

Starts the local platform at pi05-droid's real warm latency (0.6-0.8 s per request; `--instant`
for a worker that answers at once), then `ros2 launch sequence_ai_ros demo.launch.py` (the
simulated arm and the policy node; without the ros2 tools, the same two nodes as processes),
sends an `act` goal, changes the instruction mid-run through ~/set_instruction, prints feedback
and the final RunOutcome. The node records the goal (record_dir: `<out>/recordings/`, one MCAP
file per goal) and the PNG timeline of the run is drawn from that file, as `sequence-ai replay`
draws it: the commands per joint as published, the time the arm held, seams, instruction
changes, and every request's latency.

`--physics` runs it on the physical arm (sim_robot's `physics: mujoco`, the [physics] extra: a
MuJoCo Panda whose joints lag their commands, its cameras rendered offscreen at PHYSICS_CAMERA_HZ)
and writes what its exterior camera saw during the goal beside the timeline: a strip of frames
(`demo-exterior-strip.png`) and an animation (`demo-exterior.gif`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

__all__ = ["main"]

FIRST = "pick up the red cube"
SECOND = "put the cube on the plate"
# pi05-droid's warm latency per request on the service: 600-800 ms (docs/PROTOCOL.md §12).
REAL_LATENCY_MS = (600.0, 800.0)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="max_seconds of the act goal")
    parser.add_argument("--switch-after", type=float, default=5.0, help="seconds before the instruction changes")
    low, high = REAL_LATENCY_MS
    parser.add_argument("--latency-ms", type=float, default=(low + high) / 2,
                        help=f"refill latency the local worker injects (default: pi05-droid's {low:g}-{high:g} ms)")
    parser.add_argument("--jitter", type=float, default=(high - low) / (high + low),
                        help="latency jitter as a fraction (default: +-100 ms around 700)")
    parser.add_argument("--instant", action="store_true", help="a worker that answers at once (no injected latency)")
    parser.add_argument("--without-launch", action="store_true",
                        help="start the two nodes as processes even where ros2 launch is installed")
    parser.add_argument("--out", type=Path, default=Path("out"),
                        help="where the recording (recordings/) and the timeline PNG are written")
    parser.add_argument("--physics", action="store_true",
                        help="the physical arm (a MuJoCo Panda whose joints lag; needs the [physics] extra) and a "
                             "strip and GIF of its exterior camera in --out")
    args = parser.parse_args(argv)
    if args.physics:
        from sequence_ai.sim_physics import unavailable

        reason = unavailable(render=True)
        if reason:
            parser.error(f"--physics: {reason}")

    from sequence_ai.platform.spawn import LocalPlatform

    from ..spinning import Spinning
    from .processes import ros_environment

    os.environ.update(ros_environment())
    logs = Path(tempfile.mkdtemp(prefix="sequence-ai-demo-"))
    print(f"[demo] logs in {logs}")
    started = time.monotonic()
    latency = () if args.instant else ("--latency-ms", str(args.latency_ms), "--jitter", str(args.jitter))
    with LocalPlatform(*latency) as platform:
        print(f"[demo] local platform at {platform.base_url} (worker {platform.worker_url}), "
              + ("instant worker" if args.instant else f"latency {args.latency_ms:g} ms +-{100 * args.jitter:.0f} %"))
        record_dir = (args.out / "recordings").absolute()
        params = _physical(logs) if args.physics else None  # None: config/demo.yaml, as installed
        with _nodes(platform.env(), logs, args.without_launch, record_dir, params) as output, Spinning() as spun:
            planner = _Planner(spun, watch_camera=args.physics)
            result = planner.drive(args, started)
        if result is None:
            print("[demo] the run did not finish; log:\n" + output()[-3000:], file=sys.stderr)
            return 1
    image = _plot_recording(result.outcome.recording, args.out / "demo-timeline.png")
    if image is None:
        return 1
    print(f"[demo] timeline written to {image} (from the recording)")
    if args.physics:
        written = _write_strip(planner.frames, args.out)
        if not written:
            print("[demo] the exterior camera sent no frame during the goal", file=sys.stderr)
            return 1
        print(f"[demo] {len(planner.frames)} exterior camera frames: {', '.join(map(str, written))}")
    print(f"[demo] done in {time.monotonic() - started:.1f}s")
    return 0 if result.status in (0, 1, 2) else 1


def _plot_recording(path: str, image: Path) -> Optional[Path]:
    """The run's timeline PNG, drawn from the node's recording of it (waits for the node to finish
    the file, which it does off the goal's thread)."""
    from sequence_ai.recording import read_run
    from sequence_ai.recording.timeline import plot_timeline

    if not path:
        print("[demo] the outcome names no recording", file=sys.stderr)
        return None
    deadline = time.monotonic() + 30.0
    record = read_run(path)
    while not record.complete and time.monotonic() < deadline:
        time.sleep(0.2)  # the file's summary is written by the node's closing thread
        record = read_run(path)
    print(f"[demo] recording {path} ({'complete' if record.complete else 'not finished: read to its last chunk'}"
          f", {len(record.commands)} actions, {len(record.answers)} chunks, "
          f"{sum(record.frame_counts.values())} frames; `scripts/workspace.sh run sequence-ai replay {path}` "
          f"prints its summary)")
    return plot_timeline(record, image)


def _physical(logs: Path) -> Path:
    """config/demo.yaml with sim_robot on the physical arm, its cameras at the physical arm's rate and
    size (sim_robot.py: rendering costs tens of milliseconds a view without a GPU), and the policy
    node's input ages widened for it."""
    import yaml

    from .processes import config_path
    from .sim_robot import PHYSICS_CAMERA_HZ, PHYSICS_IMAGE_SIZE

    params = yaml.safe_load(config_path("demo.yaml").read_text())
    sim = params["/**/sim_robot"]["ros__parameters"]
    sim.update(physics="mujoco", camera_hz=PHYSICS_CAMERA_HZ, image_width=PHYSICS_IMAGE_SIZE[0],
               image_height=PHYSICS_IMAGE_SIZE[1])
    # The simulator steps and renders on one thread, on the same cores as everything else: a render
    # holds its joint states back by tens of milliseconds (more on a loaded machine), and a 3 Hz
    # camera's frame is up to 0.33 s old before it is drawn. Wider input ages than demo.yaml's keep
    # the demo going where the machine is busy; a robot keeps policy.yaml's.
    node = params["/**/sequence_ai_policy"]["ros__parameters"]
    node.update(max_image_age_s=1.5, max_joint_state_age_s=1.0)
    path = logs / "demo-physics.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _write_strip(frames: List[Tuple[float, object]], out: Path, columns: int = 4, rows: int = 2) -> List[Path]:
    """The exterior camera during the goal: columns × rows frames evenly spread over it, each marked
    with its time into the goal; and every frame as a GIF at the camera's pace."""
    if not frames:
        return []
    from PIL import Image, ImageDraw

    images = [(t, Image.fromarray(frame)) for t, frame in frames]
    width, height = images[0][1].size
    count = min(columns * rows, len(images))
    picked = [images[round(i * (len(images) - 1) / max(1, count - 1))] for i in range(count)]
    strip = Image.new("RGB", (width * min(columns, count), height * -(-count // columns)), (0, 0, 0))
    for index, (t, image) in enumerate(picked):
        tile = image.copy()
        ImageDraw.Draw(tile).text((6, 4), f"t={t:4.1f}s", fill=(0, 0, 0))
        strip.paste(tile, ((index % columns) * width, (index // columns) * height))
    out.mkdir(parents=True, exist_ok=True)
    strip_path, gif_path = out / "demo-exterior-strip.png", out / "demo-exterior.gif"
    strip.save(strip_path)
    pace_ms = max(50, round(1000 * (images[-1][0] - images[0][0]) / max(1, len(images) - 1)))
    images[0][1].save(gif_path, save_all=True, append_images=[image for _, image in images[1:]], duration=pace_ms,
                      loop=0)
    return [strip_path, gif_path]


@contextlib.contextmanager
def _nodes(env, logs: Path, without_launch: bool, record_dir: Path, params_file: Optional[Path]) -> Iterator:
    """The simulated arm and the policy node: `ros2 launch` where it is installed, else two
    processes. Yields a function that returns their log; stopped (SIGINT) on exit."""
    from .processes import LaunchProcess, NodeProcess, config_path, ros2_cli

    if ros2_cli() and not without_launch:
        arguments = {"record_dir": str(record_dir), **({"params_file": str(params_file)} if params_file else {})}
        print("[demo] ros2 launch sequence_ai_ros demo.launch.py " + " ".join(f"{k}:={v}" for k, v in arguments.items()))
        with LaunchProcess("demo.launch.py", arguments, env=env, log_path=logs / "launch.log") as launch:
            yield launch.output
        return
    print("[demo] no ros2 launch here: starting sim_robot and policy_node as processes")
    params = [params_file or config_path("demo.yaml")]
    with NodeProcess("sim_robot", params_files=params, env=env, log_path=logs / "sim_robot.log"), \
            NodeProcess("policy_node", params_files=params, parameters={"record_dir": str(record_dir)}, env=env,
                        log_path=logs / "policy_node.log") as node:
        yield node.output


class _Planner:
    """The planner side of the demo: an rclpy node that sends the goal and changes the instruction."""

    def __init__(self, spun, watch_camera: bool = False) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.action import ActionClient
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        from sequence_ai_ros.action import Act
        from sequence_ai_ros.msg import RunOutcome, WarmingStatus
        from sequence_ai_ros.srv import SetInstruction

        self.node = spun.create_node("demo_planner")
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.feedback: List[Tuple[float, object]] = []
        self.warming: Optional[object] = None
        self.outcome: Optional[object] = None
        self.t0 = time.monotonic()
        self.Act = Act
        self.node.create_subscription(WarmingStatus, "/sequence_ai_policy/warming", self._on_warming, latched)
        self.inputs_ok = False
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.node.create_subscription(RunOutcome, "/sequence_ai_policy/run_outcome",
                                      lambda m: setattr(self, "outcome", m), latched)
        self.client = ActionClient(self.node, Act, "/sequence_ai_policy/act")
        self.set_instruction = self.node.create_client(SetInstruction, "/sequence_ai_policy/set_instruction")
        self.SetInstruction = SetInstruction
        self.frames: List[Tuple[float, object]] = []  # (seconds into the goal, rgb array) of the exterior camera
        self.goal_running = False
        if watch_camera:
            from rclpy.qos import qos_profile_sensor_data
            from sensor_msgs.msg import Image

            self.node.create_subscription(Image, "/cameras/exterior_1/image_raw", self._on_frame,
                                          qos_profile_sensor_data)
        spun.spin([self.node], name="demo-planner")

    def _on_frame(self, message) -> None:
        if self.goal_running:
            import numpy as np

            frame = np.frombuffer(bytes(message.data), dtype=np.uint8).reshape(message.height, message.width, 3)
            self.frames.append((self._t(), frame.copy()))

    def _t(self) -> float:
        return time.monotonic() - self.t0

    def _on_warming(self, message) -> None:
        if self.warming is None or message.ready != getattr(self.warming, "ready", None):
            print(f"[demo] {warming_words(message)}")
        self.warming = message

    def _on_diagnostics(self, message) -> None:
        for status in message.status:
            if status.name.endswith("policy loop"):
                self.inputs_ok = status.level == b"\x00"

    def _wait(self, predicate, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return False

    def drive(self, args, started: float):
        if not self._wait(lambda: self.warming is not None and self.warming.ready, 60.0):
            print("[demo] the policy node never reported ready", file=sys.stderr)
            return None
        # What a careful planner does: wait until the node reports every input fresh.
        if not self._wait(lambda: self.inputs_ok, 30.0):
            print("[demo] the policy node never saw fresh camera and joint inputs", file=sys.stderr)
            return None
        if not self.client.wait_for_server(timeout_sec=10.0):
            print("[demo] no act action server", file=sys.stderr)
            return None
        print(f"[demo] node ready {time.monotonic() - started:.1f}s after start; sending the goal: {FIRST!r}")
        goal = self.Act.Goal(instruction=FIRST, max_seconds=args.seconds, max_actions=0)
        self.t0 = time.monotonic()
        sent = self.client.send_goal_async(goal, feedback_callback=self._on_feedback)
        if not self._wait(sent.done, 10.0) or not sent.result().accepted:
            print("[demo] goal not accepted", file=sys.stderr)
            return None
        result_future = sent.result().get_result_async()
        self.goal_running = True
        switched = False
        while not result_future.done():
            if not switched and self._t() >= args.switch_after:
                request = self.SetInstruction.Request(instruction=SECOND)
                reply = self.set_instruction.call_async(request)
                self._wait(reply.done, 5.0)
                print(f"[demo] t={self._t():5.2f}s set_instruction -> {SECOND!r} "
                      f"(accepted={reply.result().accepted if reply.done() else '?'})")
                switched = True
            time.sleep(0.05)
        self.goal_running = False
        result = result_future.result().result
        print(f"[demo] result: {status_name(self.Act, result.status)}: {result.message}")
        self._wait(lambda: self.outcome is not None, 3.0)
        o = result.outcome
        print(f"[demo] RunOutcome: reason={o.reason} actions={o.actions} chunks={o.chunks} "
              f"elapsed={o.elapsed_s:.2f}s underruns={o.underruns} ({o.underrun_s:.2f}s) "
              f"swaps={o.instruction_swaps} max_lag={o.max_instruction_lag_s:.2f}s held={o.held} "
              f"final_instruction={o.final_instruction!r}")
        return result

    def _on_feedback(self, message) -> None:
        f = message.feedback
        self.feedback.append((self._t(), f))
        if len(self.feedback) % 4 == 1:
            print(f"[demo] t={self._t():5.2f}s actions={f.actions:4d} chunks={f.chunks:3d} buffered={f.buffered:2d} "
                  f"underruns={f.underruns} instruction={f.instruction!r}")


def status_name(act_type, status: int) -> str:
    """`STATUS_TIMEOUT` for 2: the Act result's status by its name in Act.action."""
    names = {getattr(act_type.Result, n): n for n in dir(act_type.Result) if n.startswith("STATUS_")}
    return names.get(status, f"status {status}")


def warming_words(message) -> str:
    """A ~/warming message as a sentence."""
    if message.ready:
        waited = f" after {message.waited_s:.0f} s of warming" if message.waited_s >= 0.5 else ""
        return f"the model is ready{waited}"
    eta = "" if math.isnan(message.eta_s) else f", about {message.eta_s:.0f} s to go"
    return f"the model is warming: waited {message.waited_s:.0f} s{eta} ({message.message})"


if __name__ == "__main__":
    sys.exit(main())
