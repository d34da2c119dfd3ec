"""How fresh each played action was, in the recording (#23): every command carries the age and
lateness act() saw, the outcome the run's p50 and max of them, replay prints and draws them, and a
file written before they existed still reads (None where it has nothing)."""

from __future__ import annotations

import contextlib
import math
from types import SimpleNamespace

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")

from _loop_robot import Robot, policy_for, run_kwargs

from sequence_ai import cli
from sequence_ai.recording import Recorder, read_run
from sequence_ai.recording.messages import FRESHNESS, TOPICS
from sequence_ai.recording.schemas import ros_name, schema_text
from sequence_ai.recording.summary import summary_lines


def _recorded_run(platform, record):
    """A recorded run on the local platform with some latency; what act() saw of each action:
    (values, age_s, lateness_s)."""
    platform.fault("latency", ms=150, jitter=0.2)
    robot = Robot()
    seen = []

    def act(action):
        seen.append((list(action), action.age_s, action.lateness_s))
        robot.act(action)

    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, act=act), max_actions=30, record=record)
    return out, seen


def test_each_recorded_command_carries_the_age_and_lateness_act_received(platform, tmp_path):
    path = tmp_path / "fresh.mcap"
    out, seen = _recorded_run(platform, str(path))
    record = read_run(path)
    assert out.reason == "completed" and len(record.commands) == len(seen) == 30
    assert [(list(c.values), c.age_s, c.lateness_s) for c in record.commands] == seen
    assert all(c.age_s is not None and c.age_s >= 0 for c in record.commands)
    assert all(c.lateness_s is not None for c in record.commands)
    # the outcome record holds the run's own freshness figures
    assert {name: getattr(record.outcome, name) for name in FRESHNESS} == {name: getattr(out, name)
                                                                          for name in FRESHNESS}
    assert out.age_max_s == max(c.age_s for c in record.commands)
    assert out.lateness_max_s == max(c.lateness_s for c in record.commands)


def test_a_callers_recorder_gets_the_runs_freshness_under_an_outcome_that_lacks_it(platform, tmp_path):
    """The ROS node writes its own RunOutcome message, which has no freshness fields: the file's
    outcome takes them from the client's outcome of the run."""
    path = tmp_path / "node-like.mcap"
    recorder = Recorder(path)
    out, _seen = _recorded_run(platform, recorder)
    node_message = SimpleNamespace(reason="canceled", actions=out.actions, chunks=out.chunks,
                                   elapsed_s=out.elapsed_s, message="canceled by the client", held=True,
                                   final_instruction="pick up the cup")
    recorder.outcome(node_message)
    recorder.close()
    outcome = read_run(path).outcome
    assert outcome.reason == "canceled" and outcome.message == "canceled by the client"
    assert {name: getattr(outcome, name) for name in FRESHNESS} == {name: getattr(out, name) for name in FRESHNESS}
    assert outcome.age_p50_s is not None and outcome.age_p50_s >= 0


def test_replay_prints_and_draws_the_actions_age_and_lateness(recorded, capsys, tmp_path):
    path, sent, _ = recorded
    record = read_run(path)
    # _runs.py: each row plays 0.15 s (the latency) + (row + 1) periods after its observation
    assert [(c.age_s, c.lateness_s) for c in record.commands] == sent.freshness
    lines = summary_lines(record)
    assert "action age (observation to act()): p50 350 ms, max 483 ms" in lines
    assert "action lateness (act() past the moment its row was for): p50 217 ms, max 217 ms" in lines
    assert cli.main(["replay", str(path), "--plot", str(tmp_path / "t.png")]) == 0
    assert "action age (observation to act()): p50 350 ms" in capsys.readouterr().out

    with _timeline(record) as figure:
        assert len(figure.axes) == 3
        drawn = {line.get_label(): list(line.get_ydata()) for line in figure.axes[2].get_lines()}
        assert drawn["age: observation → act()"] == pytest.approx([c.age_s * 1000 for c in record.commands])
        assert drawn["lateness: act() − its row's moment"] == pytest.approx([217.0] * 15, abs=0.5)


@contextlib.contextmanager
def _timeline(record):
    """The replay's figure of `record` (closed after)."""
    matplotlib = pytest.importorskip("matplotlib", reason="needs the [replay] extra")
    from sequence_ai.recording.timeline import timeline_figure

    figure = timeline_figure(record)
    try:
        yield figure
    finally:
        matplotlib.pyplot.close(figure)


# A file as the recorder wrote it before #23: Command and RunOutcome without the freshness fields.
_OLD_COMMAND = ("# One action handed to the robot, with the chunk row it came from.\n"
                "std_msgs/Header header\nstring rid\nuint32 row_index\nuint32 action_index\nfloat64[] values\n")
_OLD_OUTCOME = (
    "# How the run ended (sequence_ai.RunOutcome), plus what the recording kept. NaN: not measured.\n"
    "std_msgs/Header header\nstring reason\nbool stopped_early\nstring message\nuint32 actions\nuint32 chunks\n"
    "float64 elapsed_s\nuint32 underruns\nfloat64 underrun_s\nuint32 episode_resets\nfloat64 max_seam_jump\n"
    "string action_space\nuint32 instruction_swaps\nfloat64 max_instruction_lag_s\nfloat64 observe_s\n"
    "# whether a hold ended the run, and the instruction in force at the end\nbool held\nstring final_instruction\n"
    "# camera frames written to the file, and dropped because the disk could not keep up\n"
    "uint32 frames_recorded\nuint32 frames_dropped\n")
_HEADER_TYPES = ("=" * 80 + "\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n"
                 + "=" * 80 + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n")


def _old_shape_file(path):
    from mcap_ros2.writer import Writer

    t0 = 1_700_000_000_000_000_000
    with open(path, "wb") as stream:
        writer = Writer(stream)
        run = writer.register_msgdef(ros_name("sequence_ai_record/RunStart"),
                                     schema_text("sequence_ai_record/RunStart"))
        command = writer.register_msgdef(ros_name("sequence_ai_record/Command"), _OLD_COMMAND + _HEADER_TYPES)
        outcome = writer.register_msgdef(ros_name("sequence_ai_record/RunOutcome"), _OLD_OUTCOME + _HEADER_TYPES)

        def header(ns):
            return {"stamp": {"sec": ns // 10**9, "nanosec": ns % 10**9}, "frame_id": ""}

        writer.write_message(TOPICS["run"], run, {
            "header": header(t0), "model": "pi05-droid", "episode_id": "old", "control_hz": 15.0,
            "client_version": "0.20.0", "joint_names": [], "camera_views": [], "extra_json": "{}"}, t0, t0)
        for i in range(5):
            t = t0 + (i + 1) * 66_666_667
            writer.write_message(TOPICS["command"], command, {
                "header": header(t), "rid": "r-1", "row_index": i, "action_index": i + 1,
                "values": [0.1 * i] * 8}, t, t)
        t = t0 + 400_000_000
        writer.write_message(TOPICS["outcome"], outcome, {
            "header": header(t), "reason": "completed", "stopped_early": False, "message": "", "actions": 5,
            "chunks": 1, "elapsed_s": 0.4, "underruns": 0, "underrun_s": 0.0, "episode_resets": 0,
            "max_seam_jump": math.nan, "action_space": "joint_position", "instruction_swaps": 0,
            "max_instruction_lag_s": math.nan, "observe_s": 0.01, "held": False, "final_instruction": "",
            "frames_recorded": 0, "frames_dropped": 0}, t, t)
        writer.finish()
    return path


def test_a_file_written_before_the_freshness_fields_still_reads_and_replays(tmp_path, capsys):
    path = _old_shape_file(tmp_path / "old.mcap")
    record = read_run(path)
    assert record.complete and len(record.commands) == 5
    assert all(c.age_s is None and c.lateness_s is None for c in record.commands)
    assert record.outcome.reason == "completed" and record.outcome.actions == 5
    assert all(getattr(record.outcome, name) is None for name in FRESHNESS)
    assert not any(line.startswith(("action age", "action lateness")) for line in summary_lines(record))
    png = tmp_path / "old.png"
    assert cli.main(["replay", str(path), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "outcome: completed, 5 actions over 1 chunks" in out and f"timeline: {png}" in out

    with _timeline(record) as figure:
        assert len(figure.axes) == 3
        texts = [text.get_text() for text in figure.axes[2].texts]
        assert texts == ["no action age or lateness in this file (none played, or recorded before they were)"]
