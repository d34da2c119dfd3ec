"""Node `sequence_ai_policy`: drives one arm from a remote policy.

    ~/act              sequence_ai_ros/action/Act      one instruction, a time bound; cancel = interrupt
    ~/set_instruction  sequence_ai_ros/srv/SetInstruction   the arm keeps moving
    ~/interrupt        std_srvs/srv/Trigger            stops within one control period, holds
    ~/run_outcome      sequence_ai_ros/msg/RunOutcome  TRANSIENT_LOCAL, depth 1
    ~/warming          sequence_ai_ros/msg/WarmingStatus  TRANSIENT_LOCAL, depth 1
    ~/instruction      std_msgs/String                 TRANSIENT_LOCAL, depth 1
    ~/goal_refused     std_msgs/String                 why the latest goal was rejected, TRANSIENT_LOCAL
    ~/release_estop    std_srvs/srv/Trigger            the e-stop's explicit release (estop_topic set)
    /diagnostics       diagnostic_msgs/DiagnosticArray

One goal runs at a time on its own thread, inside `Policy.run()`; the control timer (at the
model's control frequency) is that loop's only clock. A goal the node cannot run is rejected at
once (goal/acceptance.py). Every ending publishes exactly one hold and then the outcome, and
leaves exactly one terminal goal state.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Optional, Sequence

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.action import ActionServer
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Bool, Header, String
from std_srvs.srv import Trigger

import sequence_ai
from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome, WarmingStatus
from sequence_ai_ros.srv import SetInstruction

from . import parameters
from .companions import companion_node, subscribe_inputs
from .control.arm import ArmLoop
from .control.commands import CommandMapping, CommandPublisher
from .control.realtime import ControlPriority
from .control.ticks import TimerTicks
from .diagnostics import TickRate, policy_loop_status
from .estop.topic import EStop
from .goal.acceptance import GoalAcceptance
from .goal.outcome import GoalEnding, ending_of, send_feedback
from .goal.recording import GoalRecordings
from .goal.run_arguments import RunArguments
from .goal.services import GoalServices
from .goal.slot import GoalRun, GoalSlot
from .goal.time_bound import RunClock
from .parameters import ConfigError
from .qos import COMMANDS, LATCHED
from .warmup import WarmUp

__all__ = ["PolicyNode"]


class PolicyNode(Node):
    """The node `sequence_ai_policy`: one arm, one goal at a time, driven by a remote policy."""

    def __init__(self, argv: Optional[Sequence[str]] = None, **kwargs: Any):
        super().__init__("sequence_ai_policy", **kwargs)
        try:
            self._build(sys.argv if argv is None else argv)
        except (ConfigError, sequence_ai.SequencesError) as exc:
            self.get_logger().fatal(f"cannot start: {exc}")
            raise

    def _build(self, argv: Sequence[str]) -> None:
        parameters.declare(self)
        c = self.config = parameters.read(self)
        inputs_group = MutuallyExclusiveCallbackGroup()
        timer_group = MutuallyExclusiveCallbackGroup()

        # The policy service: catalogue row first (no worker yet), so a wrong set-up fails here.
        self.policy = sequence_ai.connect(
            model=c.model, startup_timeout_s=c.startup_timeout_s, timeout_s=c.request_timeout_s,
            base_url=c.policy_url or None,  # ws:// names an openpi server (model: its card)
            on_warming=lambda waited_s, eta_s: self.warmup.on_warming(waited_s, eta_s),
        )
        self.model = self.policy.spec()
        parameters.check_against_model(c, self.model)
        mapping = CommandMapping(self.model, c)
        self.control_hz = float(self.model.control_hz or 15.0)
        parameters.declare_model_rate(self, self.model.short_id, self.control_hz)
        # record_dir: one MCAP file per goal (goal/recording.py); a folder it cannot use stops here.
        self.recordings = GoalRecordings.for_node(c, self.model, self.get_fully_qualified_name(),
                                                  self.get_logger().error)

        # Inputs: the latest sample of each topic, on a companion node (companions.py).
        self.inputs_node = companion_node(self, "inputs", argv)
        self.joint_states, self.cameras = subscribe_inputs(self.inputs_node, c, self.model, self._now_s)
        self._until = threading.Event()
        if c.until_topic:
            self.create_subscription(Bool, c.until_topic, lambda m: m.data and self._until.set(), 10,
                                     callback_group=inputs_group)
        # The e-stop's subscription on a companion of its own (estop/topic.py), its service here.
        self.estop_node = companion_node(self, "estop", argv) if c.estop_topic else None
        self.estop = EStop(self, c.estop_topic, start_engaged=c.estop_start_engaged, heartbeat_s=c.estop_heartbeat_s,
                           on_engaged=self._on_estop, input_node=self.estop_node) if c.estop_topic else None

        # Outputs.
        publisher = CommandPublisher(self, c, COMMANDS, self.get_logger().info)
        self.arm = ArmLoop(c, self.model, mapping, publisher, self.joint_states, self.cameras,
                           lambda: 1.0 / self.control_hz, self.get_logger().warning)
        self.outcome_pub = self.create_publisher(RunOutcome, "~/run_outcome", LATCHED)
        self.warming_pub = self.create_publisher(WarmingStatus, "~/warming", LATCHED)
        self.instruction_pub = self.create_publisher(String, "~/instruction", LATCHED)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.ending = GoalEnding(self.model.short_id, self.outcome_pub, self.recordings,
                                 lambda: self.get_clock().now().to_msg(), self.get_logger())

        # The one clock of the control loop, on the clock companion: its tick runs on the thread
        # that woke from the timer's wait (docs/ROS.md "One clock").
        self.tick_rate = TickRate()
        self.priority = ControlPriority(c.realtime_priority, self.get_logger().warning)
        self.run_clock = RunClock(self._now_s, bool(self.get_parameter("use_sim_time").value))
        self.clock_node = companion_node(self, "clock", argv)
        timer_clock = self.clock_node.create_timer(1.0 / self.control_hz, self._on_control_tick).clock
        self.ticks = TimerTicks(1.0 / self.control_hz, lambda: timer_clock.now().nanoseconds * 1e-9)

        # Goals and services: one goal at a time (goal/slot.py), taken or refused by goal/acceptance.py.
        self.goals = GoalSlot(c.busy_policy == "preempt", self.policy.interrupt)
        self.run_arguments = RunArguments.from_config(c)  # what every goal's run() is given
        self._closing = threading.Event()
        self.warmup = WarmUp(self.policy, self.model.short_id, c.startup_timeout_s, self.warming_pub,
                             lambda: self.get_clock().now().to_msg(), self.get_logger())
        refusals = [lambda: "the node is shutting down" if self._closing.is_set() else None, self.warmup.refusal]
        if self.estop is not None:
            refusals.insert(1, self.estop.goal_refusal)
        self.acceptance = GoalAcceptance(self, self.goals, refusals)
        self.action_server = ActionServer(
            self, Act, "~/act", execute_callback=self._execute, goal_callback=self.acceptance.on_goal,
            cancel_callback=self.acceptance.on_cancel, callback_group=ReentrantCallbackGroup(),
        )
        services = ReentrantCallbackGroup()
        self.goal_services = GoalServices(self.goals, self.policy,
                                          lambda text: self.instruction_pub.publish(String(data=text)),
                                          self.get_logger().info)
        self.create_service(SetInstruction, "~/set_instruction", self.goal_services.set_instruction,
                            callback_group=services)
        self.create_service(Trigger, "~/interrupt", self.goal_services.interrupt, callback_group=services)
        self.create_timer(c.feedback_period_s, self._publish_feedback, callback_group=timer_group)
        self.create_timer(c.diagnostics_period_s, self._publish_diagnostics, callback_group=timer_group)

        self.warmup.start()
        self.get_logger().info(
            f"{self.model.short_id} at {self.control_hz:g} Hz, {c.command_interface} commands on "
            f"{c.command_topic} ({c.command_type}){' [dry run]' if c.dry_run else ''}"
            f"{f', e-stop on {self.estop.topic}' if self.estop else ''}"
            f"{f', recording each goal to {self.recordings.folder}' if self.recordings else ''}"
        )

    # -- clock ----------------------------------------------------------------------------------
    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_control_tick(self) -> None:
        self.tick_rate.tick(time.monotonic())
        run = self.goals.run
        running = run is not None and not run.held.is_set()  # after the final hold: silence
        self.arm.tick(running, self.ticks.command_waiting)
        if running:
            run.interrupt_again()
            if run.stop_reason is None and self.run_clock.expired():
                run.stop("timeout")
        self.ticks.tick()

    def _act_on_beat(self, run: GoalRun, row: Any) -> None:
        """Publish a validated row on a tick: the run's first command and the first after a stall
        wait for the next one, so no two commands go out less than a period apart."""
        with self.ticks.beat(lambda: self.policy.interrupted), run.publishing():  # refused once stopping
            self.arm.act(row)

    # -- goals (which ones are taken: goal/acceptance.py) ----------------------------------------
    def _on_estop(self) -> None:
        run = self.goals.run
        if run is not None:
            run.stop("estop")

    def _execute(self, goal_handle: Any) -> Any:
        goal = goal_handle.request
        run, refusal = self.acceptance.claim(goal_handle, self._begin)
        try:
            if run is None:
                return self.ending.finish(goal_handle, None, "rejected", refusal, held=False,
                                          instruction=goal.instruction)
            if self.estop is not None and self.estop.engaged:  # pressed since the goal was accepted
                run.stop("estop")
            if self._closing.is_set():
                run.stop("shutdown")
            return self._drive(run, goal)
        finally:
            self.goals.release(run)

    def _begin(self, run: GoalRun) -> None:
        """A run begins (the slot locked)."""
        self.arm.begin_run()

    def _drive(self, run: GoalRun, goal: Any) -> Any:
        def observe() -> Any:
            run.check()  # a stop that came before run() began (it clears the interrupt flag)
            if not run.started:  # run() has put the goal's instruction in force
                self.goal_services.first_observation(run)
            return self.arm.observe()

        outcome = None
        reason, message = "", ""
        earlier = getattr(self.policy, "last_outcome", None)  # a previous goal's, not this one's
        before = None
        # Everything the goal computes is inside: whatever raises, the arm holds once and the
        # outcome goes out.
        try:
            self.ticks.start_run()  # its first command on a tick; its late beats counted from zero
            self._until.clear()
            self.instruction_pub.publish(String(data=goal.instruction))
            self.policy.discard_buffer()  # a new goal never plays rows computed for an old one
            max_actions = int(goal.max_actions) or int(goal.max_seconds * self.control_hz * 2) + 1000
            max_seconds = self.run_clock.start(float(goal.max_seconds))  # sim time: checked on the ticks
            if self.recordings is not None:
                run.recorder = self.recordings.open(bytes(run.goal_handle.goal_id.uuid).hex())
                self.arm.record_to(run.recorder)  # every command and hold as published
            before = self.priority.raise_thread()  # this thread publishes on the ticks (control/realtime.py)
            outcome = self.policy.run(
                observe=observe, act=lambda row: self._act_on_beat(run, row), validate=self.arm.validate,
                hold=lambda: run.hold_once(self.arm.hold), max_actions=max_actions, max_seconds=max_seconds,
                until=(self._until.is_set if self.config.until_topic else None), pacer=self.ticks,
                progress=False, instruction=goal.instruction, record=run.recorder, **self.run_arguments.as_kwargs(),
            )
            reason = outcome.reason
            if reason == "validate":
                message = self.arm.unsafe_reason
        except Exception as exc:
            reason, message = ending_of(exc)
            if reason.startswith("raised:") and not isinstance(exc, sequence_ai.SequencesError):
                self.get_logger().error(f"run failed: {type(exc).__name__}: {message}")
        finally:
            # exactly once, on every ending (completion included); the client records the holds it made
            if run.hold_once(self.arm.hold) and run.recorder is not None:
                run.recorder.hold(reason or "completed")
            self.arm.record_to(None)
            self.priority.restore(before)
            elapsed = self.run_clock.finish()
        if outcome is None:  # run() raised: its outcome, if it got as far as making one
            latest = getattr(self.policy, "last_outcome", None)
            outcome = latest if latest is not earlier else None
        return self.ending.finish(run.goal_handle, outcome, reason, message, held=run.held.is_set(),
                                  instruction=self.policy.instruction or goal.instruction, recorder=run.recorder,
                                  stop_reason=run.stop_reason, elapsed_s=elapsed,
                                  late_beats=(self.ticks.late_beats, self.ticks.late_beat_s))

    # -- feedback and diagnostics ---------------------------------------------------------------
    def _publish_feedback(self) -> None:
        run = self.goals.run
        if run is not None:  # sim time: elapsed in ROS time, like max_seconds
            send_feedback(run, self.policy.progress(), self.run_clock.elapsed_s())

    def _publish_diagnostics(self) -> None:
        c = self.config
        status = policy_loop_status(
            name=self.get_fully_qualified_name(), model_id=self.model.short_id, target_hz=self.control_hz,
            measured_hz=self.tick_rate.hz(), running=self.goals.run is not None, ready=self.warmup.ready.is_set(),
            progress=self.policy.progress(), joint_states=self.joint_states, cameras=list(self.cameras.values()),
            joint_names=c.joint_names, gripper_joint=c.gripper_joint,
            estop=self.estop.topic if self.estop is not None and self.estop.engaged else None,
            late_beats=(self.ticks.late_beats, self.ticks.late_beat_s),
        )
        statuses = [status] if self.estop is None else [status, self.estop.status(self.get_fully_qualified_name())]
        self.diagnostics_pub.publish(DiagnosticArray(header=Header(stamp=self.get_clock().now().to_msg()),
                                                     status=statuses))

    # -- shutdown -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop any run (it holds, reason shutdown) and close the policy connection."""
        self._closing.set()
        self.warmup.close()
        run = self.goals.run
        if run is not None:
            self.get_logger().info("stop requested: shutdown")
            run.stop("shutdown")
            self.goals.wait_idle(5.0)
        self.policy.close()

    def destroy_node(self) -> None:
        estop = getattr(self, "estop", None)
        if estop is not None:  # its subscription is a Waitable of ours: rclpy does not destroy those
            estop.destroy()
        super().destroy_node()

    def finish_recordings(self) -> None:
        """After shutdown() and the results have gone out: finish the recordings still being
        written (bounded)."""
        if self.recordings is not None:
            self.recordings.close()
