"""`Policy.run(..., record=...)` against the local platform: the file holds what the model saw, what
it answered, what reached the robot (each action traced to its request and row), the holds and the
outcome; a bad `record` is refused before anything moves."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")

from _loop_robot import Robot, interrupt_after, policy_for, run_kwargs
from eventually import wait_until

from sequence_ai.recording import Recorder, read_run

SECOND = "now put it on the plate"


def test_a_recorded_run_holds_what_the_model_saw_and_what_the_robot_got(platform, tmp_path):
    platform.fault("latency", ms=250, jitter=0.2)
    path = tmp_path / "run.mcap"
    robot = Robot()
    with policy_for(platform) as policy:
        def act(action):
            robot.act(action)
            if len(robot.actions) == 12:
                policy.set_instruction(SECOND)

        out = policy.run(**run_kwargs(robot, act=act), max_actions=40, stitch="none", record=str(path))
    record = read_run(path, frames=True)
    assert record.complete and record.damage is None
    assert out.reason == "completed" and out.recording_frames_dropped == 0

    # every action the robot got, in order, each traced to the request and row it came from
    assert [list(c.values) for c in record.commands] == robot.actions
    answers = {a.rid: a for a in record.answers}
    for command in record.commands:
        assert list(answers[command.rid].steps[command.row_index]) == list(command.values)
    # the requests are the ones the worker received, each answered, with the injected latency
    worker_rids = {r["rid"] for r in platform.requests(limit=100)}
    sent = [r.rid for r in record.requests]
    assert set(sent) <= worker_rids and len(sent) == len(robot.observations)
    assert len(record.answers) == out.chunks and all(a.latency_s >= 0.2 for a in record.answers)
    assert all(a.rid in sent for a in record.answers)
    # what the model saw: the frames and joints each request sent
    jpeg = base64.b64decode(robot.observations[0].images[0].data)
    assert len(record.frames) == 2 * len(sent) and all(f.data == jpeg and f.format == "jpeg" for f in record.frames)
    assert {f.view for f in record.frames} == {"exterior_1", "wrist_left"}
    assert len(record.joint_states) == len(sent) and list(record.joint_states[0].position) == [0.0] * 8
    # the instruction change, and the requests after it carry it
    assert [text for _, text in record.instructions] == [SECOND]
    assert record.requests[0].instruction == "pick up the cup" and record.requests[-1].instruction == SECOND
    assert record.outcome.reason == "completed" and record.outcome.actions == 40
    assert record.outcome.chunks == out.chunks and not record.outcome.held
    assert record.run.model == "pi05-droid" and record.run.episode_id


def test_an_interrupted_run_records_its_hold_and_outcome(platform, tmp_path):
    path = tmp_path / "interrupted.mcap"
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=3, record=path)  # warm: the next run starts at once
        timer = interrupt_after(policy, 0.5)
        out = policy.run(**run_kwargs(robot), max_actions=10_000, record=path)
        timer.join()
    record = read_run(path)
    assert out.reason == "interrupted" and robot.holds == 1
    assert [reason for _, reason, _ in record.holds][-1:] == ["interrupted"]
    assert record.holds[-1][2] == out.actions == len(record.commands)
    assert record.outcome.reason == "interrupted" and record.outcome.held and record.outcome.stopped_early


def test_a_recorder_the_caller_owns_stays_open_for_its_own_events(platform, tmp_path):
    path = tmp_path / "owned.mcap"
    robot = Robot()
    recorder = Recorder(path, joint_names=[f"j{i}" for i in range(1, 8)] + ["finger"])
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=10, record=recorder)
        recorder.feedback(policy.progress())
    assert not recorder.stats().error
    # the run's events reach the disk (within the 1 s flush interval) while the caller keeps the file open
    assert wait_until(lambda: len(read_run(path).commands) == 10, timeout_s=10.0, poll_s=0.1)
    assert read_run(path).outcome is None, "the outcome is the caller's to write"
    recorder.outcome(out, message="done by the caller")
    recorder.close()
    record = read_run(path)
    assert record.complete and len(record.commands) == out.actions == 10
    assert len(record.feedback) == 1 and record.feedback[0].actions == 10
    assert list(record.joint_states[0].name)[-1] == "finger"
    assert record.outcome.message == "done by the caller" and record.outcome.actions == 10


@pytest.mark.parametrize("target,error", [(123, TypeError), ("/no/such/folder/run.mcap", FileNotFoundError)])
def test_a_bad_record_target_is_refused_before_anything_moves(platform, target, error):
    robot = Robot()
    platform.reset()
    with policy_for(platform) as policy, pytest.raises(error) as raised:
        policy.run(**run_kwargs(robot), max_actions=10, record=target)
    assert robot.actions == [] and robot.observations == [] and platform.requests() == []
    assert ("record must be a file path" in str(raised.value)) if error is TypeError else "/no/such/folder" in str(
        raised.value)


def test_a_recording_that_fails_never_stops_the_run(platform, tmp_path, caplog):
    """A Recorder whose command() raises (a subclass of the caller's) is logged once; the run
    completes, every action reaches the robot, and the other events still reach the file."""

    class Broken(Recorder):
        def command(self, row, **kwargs):
            raise RuntimeError("this recorder cannot take commands")

    path = tmp_path / "broken.mcap"
    robot = Robot()
    recorder = Broken(path)
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=12, record=recorder)
    recorder.outcome(out)
    recorder.close()
    assert out.reason == "completed" and len(robot.actions) == 12
    assert caplog.text.count("recording the run's played failed") == 1
    record = read_run(path)
    assert record.commands == [] and record.requests and record.outcome.actions == 12


def test_record_refuses_a_symbolic_link_and_leaves_what_it_points_at_alone(platform, tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("not a recording")
    link = tmp_path / "run.mcap"
    link.symlink_to(precious)
    robot = Robot()
    platform.reset()
    with policy_for(platform) as policy, pytest.raises(OSError, match="is a symbolic link") as raised:
        policy.run(**run_kwargs(robot), max_actions=10, record=str(link))
    assert str(link) in str(raised.value) and str(precious) in str(raised.value)
    assert precious.read_text() == "not a recording" and link.is_symlink()
    assert robot.actions == [] and robot.observations == [] and platform.requests() == []
    # A link to nowhere is refused too (it would otherwise create its target).
    dangling = tmp_path / "dangling.mcap"
    dangling.symlink_to(tmp_path / "elsewhere.mcap")
    with pytest.raises(OSError, match="is a symbolic link"):
        Recorder(dangling)
    assert not (tmp_path / "elsewhere.mcap").exists()


@pytest.mark.parametrize("deleted", ["the file", "its folder"])
def test_a_recording_deleted_mid_run_says_so_in_the_outcome_logged_once(platform, tmp_path, caplog, deleted):
    """Writes to a deleted file succeed and go nowhere: the outcome's recording_error says the file
    was deleted (and its folder, when that went too), logged once at ERROR; the run goes on."""
    import logging
    import shutil

    folder = tmp_path / "runs"
    folder.mkdir()
    path = folder / "run.mcap"

    class Deleting(Robot):
        def act(self, action):
            super().act(action)
            if len(self.actions) == 5:
                shutil.rmtree(folder) if deleted == "its folder" else path.unlink()

    robot = Deleting()
    caplog.set_level(logging.ERROR, logger="sequence_ai.recording")
    with policy_for(platform) as policy, pytest.warns(UserWarning, match="was deleted while it was being written"):
        out = policy.run(**run_kwargs(robot), max_actions=12, record=str(path))
    assert out.reason == "completed" and len(robot.actions) == 12
    assert f"{path} was deleted while it was being written" in out.recording_error, out.recording_error
    assert ("its folder" in out.recording_error) == (deleted == "its folder"), out.recording_error
    assert caplog.text.count("was deleted while it was being written") == 1, caplog.text
    assert not path.exists()


def test_a_recorder_hears_once_that_its_file_was_deleted_from_its_writer_or_a_check(tmp_path):
    heard = []
    path = tmp_path / "run.mcap"
    with Recorder(path, flush_interval_s=0.05, on_error=heard.append) as recorder:
        recorder.hold("underrun")
        assert recorder.check_file() is None and recorder.error is None
        path.unlink()
        assert wait_until(lambda: recorder.error is not None, 10.0), "the writer never noticed"
        assert recorder.check_file() == recorder.error and "was deleted while it was being written" in recorder.error
        recorder.hold("underrun")  # nothing more is written, nothing raised
    assert heard == [recorder.error]
    replaced = tmp_path / "replaced.mcap"
    with Recorder(replaced, on_error=heard.append) as recorder:
        replaced.unlink()
        replaced.write_bytes(b"someone else's")
        assert "was replaced by another file" in recorder.check_file()
    assert replaced.read_bytes() == b"someone else's"
