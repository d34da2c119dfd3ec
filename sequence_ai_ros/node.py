"""Node `sequence_ai_policy`: drives one arm from a remote policy.

    ~/act              sequence_ai_ros/action/Act      one instruction, a time bound; cancel = interrupt
    ~/set_instruction  sequence_ai_ros/srv/SetInstruction   the arm keeps moving
    ~/interrupt        std_srvs/srv/Trigger            stops within one control period, holds
    ~/run_outcome      sequence_ai_ros/msg/RunOutcome  TRANSIENT_LOCAL, depth 1
    ~/warming          sequence_ai_ros/msg/WarmingStatus  TRANSIENT_LOCAL, depth 1
    ~/instruction      std_msgs/String                 TRANSIENT_LOCAL, depth 1
    /diagnostics       diagnostic_msgs/DiagnosticArray

One goal runs at a time on its own thread, inside `Policy.run()`; the control timer (at the
model's control frequency) is that loop's only clock. Every ending publishes exactly one hold and
then the outcome, and leaves exactly one terminal goal state.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import sys
import threading
import time
from typing import Any, Dict, Optional

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

import sequence_ai
from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome, WarmingStatus
from sequence_ai_ros.srv import SetInstruction

from . import parameters
from .arm import ArmLoop
from .commands import CommandMapping, CommandPublisher
from .images import FrameRule
from .inputs import BadInput, LatestSample, StaleInput, input_problem, joint_check
from .outcome import CANCELED, SUCCEEDED, outcome_message, status_for
from .parameters import ConfigError
from .realtime import ControlPriority
from .ticks import TimerTicks

__all__ = ["PolicyNode", "main"]

LATCHED = QoSProfile(
    depth=1, history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
COMMANDS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
# Under use_sim_time a goal's max_seconds is ROS time, enforced by the node on its control timer;
# the client's own (wall-clock) bound is then only a safety net for a clock that stopped: this
# many times max_seconds, and at least max_seconds + SIM_TIME_WALL_MARGIN_S.
SIM_TIME_WALL_FACTOR = 10.0
SIM_TIME_WALL_MARGIN_S = 60.0


class PolicyNode(Node):
    def __init__(self, **kwargs: Any):
        super().__init__("sequence_ai_policy", **kwargs)
        parameters.declare(self)
        self.config = parameters.read(self)
        c = self.config

        self._inputs_group = MutuallyExclusiveCallbackGroup()
        self._timer_group = MutuallyExclusiveCallbackGroup()
        self._goal_group = ReentrantCallbackGroup()
        self._service_group = ReentrantCallbackGroup()

        # The policy service: catalogue row first (no worker yet), so a wrong set-up fails here.
        self.policy = sequence_ai.connect(
            model=c.model, startup_timeout_s=c.startup_timeout_s, timeout_s=c.request_timeout_s,
            on_warming=self._on_warming,
        )
        self.model = self.policy.spec()
        missing = [v for v in self.model.camera_views if v not in c.camera_views]
        if missing:
            raise ConfigError(
                f"{self.model.short_id} needs camera view(s) {', '.join(missing)}; camera_views has "
                f"{', '.join(c.camera_views) or 'none'}"
            )
        unused = [v for v in c.camera_views if self.model.camera_views and v not in self.model.camera_views]
        if unused:
            raise ConfigError(f"{self.model.short_id} does not read camera view(s) {', '.join(unused)}; remove them")
        mapping = CommandMapping(self.model, c)
        self.control_hz = float(self.model.control_hz or 15.0)

        # Inputs: the latest sample of each topic, with its age on the node clock. They live on a
        # companion node spun by an executor of its own (see main()): a 1 kHz joint_states topic
        # and camera streams then never delay the control timer's callbacks.
        self.inputs_node = rclpy.create_node(
            "sequence_ai_policy_inputs", namespace=self.get_namespace(), context=self.context,
            parameter_overrides=[self.get_parameter("use_sim_time")],
        )
        # Best effort, and only the newest sample queued: the node reads the latest of each input,
        # and a deeper queue of raw frames holds transport buffers (shared memory) the camera
        # driver needs for its next frames.
        latest = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                            durability=DurabilityPolicy.VOLATILE)
        self.joint_states = LatestSample(self.resolve_topic_name(c.joint_states_topic), c.max_joint_state_age_s,
                                         self._now_s, check=joint_check(c.joint_names, c.gripper_joint))
        self.inputs_node.create_subscription(JointState, c.joint_states_topic, self.joint_states.store, latest)
        self.cameras: Dict[str, LatestSample] = {}
        for view, topic, compressed in zip(c.camera_views, c.camera_topics, c.camera_compressed):
            sample = LatestSample(self.resolve_topic_name(topic), c.max_image_age_s, self._now_s,
                                  frame_rule=FrameRule(self.model))
            self.cameras[view] = sample
            self.inputs_node.create_subscription(CompressedImage if compressed else Image, topic, sample.store, latest)
        self._until = threading.Event()
        if c.until_topic:
            self.create_subscription(Bool, c.until_topic, self._on_until, 10, callback_group=self._inputs_group)

        # Outputs.
        publisher = CommandPublisher(self, c, COMMANDS, self.get_logger().info)
        self.arm = ArmLoop(c, self.model, mapping, publisher, self.joint_states, self.cameras,
                           lambda: 1.0 / self.control_hz, self.get_logger().warning)
        self.outcome_pub = self.create_publisher(RunOutcome, "~/run_outcome", LATCHED)
        self.warming_pub = self.create_publisher(WarmingStatus, "~/warming", LATCHED)
        self.instruction_pub = self.create_publisher(String, "~/instruction", LATCHED)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        # The one clock of the control loop. Its timer lives on a second companion node spun by a
        # single-threaded executor of its own (see main()): the tick then runs on the thread that
        # woke from the wait, where a multi-threaded executor would hand it to a pool thread first
        # (one more wake-up between the timer and the command: docs/ROS.md "One clock").
        self.ticks = TimerTicks()
        self.priority = ControlPriority(c.realtime_priority, self.get_logger().warning)
        self._tick_times: list = []
        self.clock_node = rclpy.create_node(
            "sequence_ai_policy_clock", namespace=self.get_namespace(), context=self.context,
            parameter_overrides=[self.get_parameter("use_sim_time")],
        )
        self.clock_node.create_timer(1.0 / self.control_hz, self._on_control_tick)

        # Goals and services.
        self._run_lock = threading.Lock()
        self._active: Optional[Any] = None  # the goal handle being driven
        self._held = threading.Event()  # the active run's final hold went out
        self._run_done = threading.Event()
        self._run_done.set()
        self._stop_reason: Optional[str] = None  # why the node itself interrupted the run
        self._ready = threading.Event()
        self._closing = threading.Event()
        self._warming_state = (False, math.nan, 0.0)
        self._warmup_lock = threading.Lock()
        self._warmup_running = False
        self._warmup_failure = ""  # why the last warm-up gave up ("" while none has)
        # The running goal's bound on the node clock (sim time: set only under use_sim_time).
        self.sim_time = bool(self.get_parameter("use_sim_time").value)
        self._run_clock: Optional[list] = None  # [started_s or None, max_seconds]
        self.action_server = ActionServer(
            self, Act, "~/act", execute_callback=self._execute,
            goal_callback=self._on_goal, cancel_callback=self._on_cancel, callback_group=self._goal_group,
        )
        self.create_service(SetInstruction, "~/set_instruction", self._on_set_instruction,
                            callback_group=self._service_group)
        self.create_service(Trigger, "~/interrupt", self._on_interrupt, callback_group=self._service_group)
        self.create_timer(c.feedback_period_s, self._publish_feedback, callback_group=self._timer_group)
        self.create_timer(c.diagnostics_period_s, self._publish_diagnostics, callback_group=self._timer_group)

        self._start_warmup()
        self.get_logger().info(
            f"{self.model.short_id} at {self.control_hz:g} Hz, {c.command_interface} commands on "
            f"{c.command_topic} ({c.command_type}){' [dry run]' if c.dry_run else ''}"
        )

    # -- clock ----------------------------------------------------------------------------------
    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _act_on_beat(self, row: Any) -> None:
        """Publish a validated row on a tick: the run's first command and the first after a stall
        wait for the next one, so no two commands go out less than a period apart."""
        self.ticks.on_beat(lambda: self.policy.interrupted)
        try:
            self.arm.act(row)
        finally:
            self.ticks.sent()

    def _on_control_tick(self) -> None:
        self._tick_times.append(time.monotonic())
        del self._tick_times[:-64]
        # Never coast: a velocity controller keeps the last command, so a tick with nothing
        # published while a run is active (the buffer is dry) gets an explicit zero.
        stalled = self.arm.published_this_tick == 0 and self.arm.last_command is not None
        running = self._active is not None and not self._held.is_set()  # after the final hold: silence
        if running and self.config.command_interface == "velocity" and stalled:
            command = self.arm.hold_command()
            if command is not None:
                self.arm.publisher.publish(command, 1.0 / self.control_hz)
        self.arm.published_this_tick = 0
        if self._run_clock is not None and running:
            self._check_run_clock()
        self.ticks.tick()

    def _check_run_clock(self) -> None:
        """use_sim_time: end the running goal (reason timeout) once the ROS clock passes its
        max_seconds. Called on every control tick, so within one period of the deadline."""
        run_clock = self._run_clock
        if run_clock is None:
            return
        now = self._now_s()
        if run_clock[0] is None:  # the goal arrived before the first /clock message
            if now > 0:
                run_clock[0] = now
            return
        if now - run_clock[0] >= run_clock[1]:
            if self._stop_reason is None:
                self._stop_reason = "timeout"
            if self._stop_reason == "timeout":
                self.policy.interrupt()  # again on later ticks: a run that had not started yet clears it

    def _run_elapsed_s(self) -> Optional[float]:
        """Seconds of ROS time the running goal has taken (use_sim_time only), else None."""
        run_clock = self._run_clock
        if run_clock is None or run_clock[0] is None:
            return None
        return max(0.0, self._now_s() - run_clock[0])

    # -- warming --------------------------------------------------------------------------------
    def _on_warming(self, waited_s: float, eta_s: Optional[float]) -> None:
        self._warming_state = (True, math.nan if eta_s is None else float(eta_s), float(waited_s))
        self._publish_warming(False, True, waited_s, eta_s, f"starting the model, about {eta_s or 0:.0f}s to go")

    def _publish_warming(self, ready: bool, warming: bool, waited_s: float, eta_s: Optional[float], message: str) -> None:
        self.warming_pub.publish(WarmingStatus(
            stamp=self.get_clock().now().to_msg(), model=self.model.short_id, ready=ready, warming=warming,
            waited_s=float(waited_s), eta_s=math.nan if eta_s is None else float(eta_s), message=message,
        ))

    def _start_warmup(self) -> bool:
        """Start a warm-up thread unless one runs or the worker is ready; True if started."""
        with self._warmup_lock:
            if self._warmup_running or self._ready.is_set() or self._closing.is_set():
                return False
            self._warmup_running = True
        threading.Thread(target=self._wait_for_worker, name="warmup", daemon=True).start()
        return True

    def _wait_for_worker(self) -> None:
        """Start a cold worker and report its progress on ~/warming until it can serve, or until
        startup_timeout_s; a goal arriving after a timeout starts another attempt."""
        try:
            self._warm_until_ready()
        finally:
            with self._warmup_lock:
                self._warmup_running = False

    def _warm_until_ready(self) -> None:
        started = time.monotonic()
        budget = self.config.startup_timeout_s
        self._warming_state = (True, math.nan, 0.0)
        while not self._closing.is_set():
            waited = time.monotonic() - started
            try:
                ready, eta = self.policy.ready()
            except sequence_ai.SequencesError as exc:
                self._publish_warming(False, False, waited, None, f"cannot reach the policy service: {exc}")
                ready, eta = False, None
            if ready:
                self._warming_state = (False, math.nan, waited)
                self._publish_warming(True, False, waited, None, "ready")
                self._ready.set()
                self.get_logger().info(f"{self.model.short_id} is ready after {waited:.1f}s")
                return
            self._warming_state = (True, math.nan if eta is None else float(eta), waited)
            self._publish_warming(False, True, waited, eta, f"starting the model, about {eta or 0:.0f}s to go")
            if budget > 0 and waited > budget:
                self._warmup_failure = f"not ready after startup_timeout_s={budget:g}s"
                self._warming_state = (False, math.nan if eta is None else float(eta), waited)
                self._publish_warming(False, False, waited, eta,
                                      f"{self._warmup_failure}; the next goal starts warming it again")
                self.get_logger().error(f"{self.model.short_id} not ready after {budget:g}s; "
                                        f"the next goal starts warming it again")
                return
            self._closing.wait(1.0)

    # -- goals ----------------------------------------------------------------------------------
    def _on_goal(self, goal: Any) -> GoalResponse:
        # Every goal is accepted so that a refusal can carry its reason in the result
        # (STATUS_REJECTED + message); nothing moves for a refused goal.
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        if self._active is goal_handle:
            self._stop_reason = "canceled"
            self.policy.interrupt()
        return CancelResponse.ACCEPT

    def _refusal(self, goal: Any) -> Optional[str]:
        if not goal.instruction.strip():
            return "instruction is empty"
        if not (goal.max_seconds > 0 and math.isfinite(goal.max_seconds)):
            return f"max_seconds must be > 0 (got {goal.max_seconds})"
        if not self._ready.is_set():
            if self._start_warmup():
                # The last warm-up gave up (startup_timeout_s): this goal starts another one.
                return (f"{self.model.short_id} is not ready ({self._warmup_failure}); warming it again: "
                        f"~/warming reports ready when it can take a goal")
            _, eta, waited = self._warming_state
            return (f"{self.model.short_id} is not ready yet (warming for {waited:.0f}s"
                    f"{'' if math.isnan(eta) else f', about {eta:.0f}s to go'})")
        return None

    def _execute(self, goal_handle: Any) -> Any:
        goal = goal_handle.request
        refusal = self._refusal(goal)
        if refusal is None and not self._claim(goal_handle):
            refusal = "busy: another goal is running (busy_policy: reject)"
        if refusal is not None:
            self.get_logger().warning(f"goal refused: {refusal}")
            return self._finish(goal_handle, None, "rejected", refusal, held=False, instruction=goal.instruction)
        try:
            return self._drive(goal_handle, goal)
        finally:
            with self._run_lock:
                self._active = None
                self._run_done.set()

    def _claim(self, goal_handle: Any) -> bool:
        """Make this goal the active one (preempting the running one if configured)."""
        deadline = time.monotonic() + 5.0
        while True:
            with self._run_lock:
                if self._active is None:
                    self._active = goal_handle
                    self._run_done.clear()
                    return True
                if self.config.busy_policy != "preempt":
                    return False
                self._stop_reason = "interrupted"
            self.policy.interrupt()
            if not self._run_done.wait(max(0.0, deadline - time.monotonic())):
                return False

    def _drive(self, goal_handle: Any, goal: Any) -> Any:
        c = self.config
        self._stop_reason = None
        self._until.clear()
        self.arm.begin_run(goal.instruction)
        self.policy.set_instruction(goal.instruction)
        self.instruction_pub.publish(String(data=goal.instruction))
        self.policy.discard_buffer()  # a new goal never plays rows computed for an old one
        self.ticks.reset()
        max_actions = int(goal.max_actions) or int(goal.max_seconds * self.control_hz * 2) + 1000
        held = self._held = threading.Event()
        max_seconds = float(goal.max_seconds)
        if self.sim_time:
            # max_seconds is ROS time: the control tick ends the run when the clock passes it
            # (_check_run_clock); the client's wall-clock bound is only a safety net.
            now = self._now_s()
            self._run_clock = [now if now > 0 else None, max_seconds]
            max_seconds = max(SIM_TIME_WALL_FACTOR * max_seconds, max_seconds + SIM_TIME_WALL_MARGIN_S)

        def hold() -> None:
            if not held.is_set():
                held.set()
                self.arm.hold()

        outcome = None
        reason, message = "", ""
        before = self.priority.raise_thread()  # this thread publishes on the ticks (realtime.py)
        try:
            outcome = self.policy.run(
                observe=self.arm.observe, act=self._act_on_beat, validate=self.arm.validate, hold=hold,
                max_actions=max_actions, max_seconds=max_seconds,
                until=(self._until.is_set if c.until_topic else None),
                # a dry run's arm does not move: no motion to continue, each chunk as it comes
                prefetch=c.prefetch, lookahead=c.lookahead or "auto", stitch="none" if c.dry_run else c.stitch,
                smooth_seam=c.smooth_seam,
                startup_timeout_s=c.startup_timeout_s, pacer=self.ticks,
                progress=False,
            )
            reason = outcome.reason
            if reason == "interrupted" and self._stop_reason:
                reason = self._stop_reason
            if reason == "validate":
                message = self.arm.unsafe_reason
        except StaleInput as exc:
            reason, message = "stale_input", str(exc)
        except BadInput as exc:
            reason, message = "bad_input", str(exc)
        except sequence_ai.SequencesError as exc:
            reason, message = f"raised:{type(exc).__name__}", str(exc)
        except Exception as exc:
            reason, message = f"raised:{type(exc).__name__}", str(exc)
            self.get_logger().error(f"run failed: {type(exc).__name__}: {exc}")  # str, not repr: no request bytes
        finally:
            hold()  # exactly once, on every ending (completion included)
            self.priority.restore(before)
            elapsed = self._run_elapsed_s()
            self._run_clock = None
        if outcome is None:
            outcome = getattr(self.policy, "last_outcome", None)
        if outcome is not None and elapsed is not None:  # use_sim_time: the run's length in ROS time
            outcome = dataclasses.replace(outcome, elapsed_s=elapsed,
                                          reason=reason if reason == "timeout" else outcome.reason)
        if not message and outcome is not None:
            message = str(outcome)
        return self._finish(goal_handle, outcome, reason, message, held=held.is_set(),
                            instruction=self.policy.instruction or goal.instruction)

    def _finish(self, goal_handle: Any, outcome: Any, reason: str, message: str, *, held: bool, instruction: str) -> Any:
        msg = outcome_message(outcome, reason=reason, message=message, model=self.model.short_id,
                              instruction=instruction, held=held, stamp=self.get_clock().now().to_msg())
        if reason != "rejected":
            self.outcome_pub.publish(msg)
        status, terminal = status_for(reason)
        text = f"run ended: {reason}{': ' + message if message else ''}"
        # rclpy refuses two severities from one call site, hence two calls.
        if terminal == SUCCEEDED:
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)
        if terminal == SUCCEEDED:
            goal_handle.succeed()
        elif terminal == CANCELED:
            _mark_canceled(goal_handle)
        else:
            goal_handle.abort()
        return Act.Result(status=status, message=message or reason, outcome=msg)

    # -- services -------------------------------------------------------------------------------
    def _on_set_instruction(self, request: Any, response: Any) -> Any:
        previous = self.policy.instruction or ""
        response.previous = previous
        text = request.instruction
        if not text.strip():
            response.accepted, response.message = False, "instruction is empty; the instruction in force is unchanged"
            return response
        response.accepted = True
        if text == previous:
            response.message = "same instruction, ignored"
            return response
        self.policy.set_instruction(text)
        self.arm.instruction = text
        self.instruction_pub.publish(String(data=text))
        return response

    def _on_interrupt(self, request: Any, response: Any) -> Any:
        if self._active is None:
            response.success, response.message = False, "no run in progress"
            return response
        self._stop_reason = "interrupted"
        self.policy.interrupt()
        response.success, response.message = True, "interrupted; the arm stops within one control period and holds"
        return response

    def _on_until(self, message: Bool) -> None:
        if message.data:
            self._until.set()

    # -- feedback and diagnostics ---------------------------------------------------------------
    def _publish_feedback(self) -> None:
        goal_handle = self._active
        if goal_handle is None:
            return
        p = self.policy.progress()
        elapsed = self._run_elapsed_s()  # use_sim_time: ROS time, like max_seconds
        feedback = Act.Feedback(
            actions=int(p.actions), chunks=int(p.chunks), buffered=int(p.buffered),
            elapsed_s=float(p.elapsed_s if elapsed is None else elapsed),
            instruction=p.instruction or "", underruns=int(p.underruns), warming=bool(p.warming),
            warming_eta_s=math.nan if p.warming_eta_s is None else float(p.warming_eta_s),
        )
        try:
            goal_handle.publish_feedback(feedback)
        except Exception:
            pass

    def _publish_diagnostics(self) -> None:
        p = self.policy.progress()
        ticks = self._tick_times
        rate = (len(ticks) - 1) / (ticks[-1] - ticks[0]) if len(ticks) > 2 and ticks[-1] > ticks[0] else 0.0
        values = [
            KeyValue(key="control_hz_target", value=f"{self.control_hz:.2f}"),
            KeyValue(key="control_hz_measured", value=f"{rate:.2f}"),
            KeyValue(key="running", value=str(self._active is not None)),
            KeyValue(key="refill_latency_s", value="" if p.refill_latency_s is None else f"{p.refill_latency_s:.3f}"),
            KeyValue(key="underruns", value=str(p.underruns)),
            KeyValue(key="underrun_s", value=f"{p.underrun_s:.3f}"),
        ]
        level, summary = DiagnosticStatus.OK, "ok"
        for sample in [self.joint_states, *self.cameras.values()]:
            age = sample.age_s()
            values.append(KeyValue(key=f"age_s {sample.topic}", value="never" if age is None else f"{age:.3f}"))
            if age is None or age > sample.max_age_s:
                level, summary = DiagnosticStatus.WARN, f"{sample.topic} is stale or missing"
        if not self._ready.is_set():
            level, summary = DiagnosticStatus.WARN, "worker not ready"
        # A malformed input would end the next goal bad_input: say so before anyone sends one.
        problem = input_problem(self.joint_states, list(self.cameras.values()), self.config.joint_names,
                                self.config.gripper_joint)
        if problem is not None:
            values.append(KeyValue(key="bad_input", value=problem))
            level, summary = DiagnosticStatus.ERROR, f"bad input: {problem}"
        status = DiagnosticStatus(level=level, name=f"{self.get_fully_qualified_name()}: policy loop",
                                  message=summary, hardware_id=self.model.short_id, values=values)
        self.diagnostics_pub.publish(DiagnosticArray(header=_header(self), status=[status]))

    # -- shutdown -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop any run (it holds, reason shutdown) and close the policy connection."""
        self._closing.set()
        if self._active is not None:
            self._stop_reason = "shutdown"
            self.policy.interrupt()
            self._run_done.wait(5.0)
        self.policy.close()


def _header(node: Node):
    from std_msgs.msg import Header

    return Header(stamp=node.get_clock().now().to_msg())


def _mark_canceled(goal_handle: Any) -> None:
    """End a goal as canceled. A goal stopped by ~/interrupt (not by a cancel request) must first
    pass through CANCELING, which rclpy only enters from a cancel request: enter it here."""
    if not goal_handle.is_cancel_requested:
        from rclpy.action.server import GoalEvent

        goal_handle._update_state(GoalEvent.CANCEL_GOAL)
    goal_handle.canceled()


def main(argv: Optional[list] = None) -> int:
    # Our own signal handling: on Ctrl-C / SIGTERM the running goal must still hold and report
    # while the ROS context is alive, so rclpy's handler (which shuts the context down) is off.
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    # A thread woken by the control timer waits for the GIL at most this long behind one that
    # holds it (camera conversion, JSON, HTTP); Python's default is 5 ms, a large share of a
    # 2 ms jitter budget.
    sys.setswitchinterval(0.001)
    rclpy.init(args=argv if argv is not None else sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = PolicyNode()
    except (ConfigError, sequence_ai.SequencesError) as exc:
        print(f"[sequence_ai_policy] cannot start: {exc}", file=sys.stderr)
        rclpy.shutdown()
        return 1
    executor = MultiThreadedExecutor(num_threads=6)
    executor.add_node(node)
    inputs = SingleThreadedExecutor()
    inputs.add_node(node.inputs_node)
    spinner = threading.Thread(target=executor.spin, name="executor", daemon=True)
    spinner.start()
    threading.Thread(target=inputs.spin, name="inputs", daemon=True).start()
    clock = SingleThreadedExecutor()
    clock.add_node(node.clock_node)

    def spin_clock() -> None:
        node.priority.apply()
        clock.spin()

    threading.Thread(target=spin_clock, name="control-clock", daemon=True).start()
    while not stop.wait(0.5) and spinner.is_alive():
        pass
    node.shutdown()
    executor.shutdown(timeout_sec=2.0)
    inputs.shutdown(timeout_sec=2.0)
    clock.shutdown(timeout_sec=2.0)
    node.inputs_node.destroy_node()
    node.clock_node.destroy_node()
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
