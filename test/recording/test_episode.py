"""A recording as a training episode (sequence_ai/recording/episode.py), read from real files the
Recorder wrote: one step per action played, what the model was sent at or before it, the task in
force, the node's published command for displacement rows, and the fps rule. No lerobot needed."""

from __future__ import annotations

import base64
import importlib.util
import platform
import sys
import time

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
from _runs import VIEWS, jpeg, scripted_run

from sequence_ai import cli
from sequence_ai.recording import Recorder, read_run
from sequence_ai.recording.episode import NotAnEpisode, episode_of
from sequence_ai.recording.walk import RecordingRefused


def test_each_action_played_is_a_step_with_what_the_model_was_sent_before_it(recorded):
    path, sent, _ = recorded
    episode = episode_of(read_run(path, frames=True))
    assert (episode.fps, episode.views, episode.model) == (15, VIEWS, "pi05-droid")
    assert [step.action for step in episode.steps] == [tuple(row) for row, _, _ in sent.commands]
    # each step's state and frames are the latest sent at or before it: the scripted clock sends the
    # second request the moment the fifth action plays, the third one after the tenth
    requests = [0] * 4 + [1] * 6 + [2] * 5
    assert [step.state for step in episode.steps] == [tuple(sent.joints[k]) for k in requests]
    assert [step.frames for step in episode.steps] == [(k, k) for k in requests]
    assert [episode.images[view][2] for view in VIEWS] == [data for _, data in sent.frames[4:6]]
    # the instruction changed before the third request: the last five steps carry the new task
    assert [step.task for step in episode.steps] == ["pick up the red cube"] * 10 + ["put it on the plate"] * 5
    assert episode.tasks == ["pick up the red cube", "put it on the plate"]
    assert (episode.reason, episode.succeeded, episode.outcome["actions"]) == ("interrupted", False, 15)
    assert episode.steps[0].joint_command is None  # absolute rows: the action is the target already


def test_another_fps_takes_the_latest_step_at_or_before_each_frame(recorded):
    path, sent, _ = recorded
    record = read_run(path, frames=True)
    rows = [tuple(row) for row, _, _ in sent.commands]
    assert [s.action for s in episode_of(record, fps=5).steps] == rows[0::3]  # 15 steps over 14/15 s: 5 frames
    assert [s.action for s in episode_of(record, fps=30).steps] == [r for r in rows for _ in (0, 1)][:-1]
    only = episode_of(record, views=["wrist_image_left"])
    assert only.views == ("wrist_image_left",) and all(len(s.frames) == 1 for s in only.steps)
    with pytest.raises(NotAnEpisode, match="no frames of view side_cam"):
        episode_of(record, views=["side_cam"])


def test_displacement_rows_keep_the_command_the_node_published_and_holds_are_no_steps(tmp_path):
    names = [f"fr3_joint{i}" for i in range(1, 8)] + ["fr3_finger_joint1"]
    path = tmp_path / "delta.mcap"
    t = time.monotonic()
    published, played = [], []
    with Recorder(path) as recorder:
        # a first run on a fresh Policy does not know its rate yet when it begins: the chunks' rate counts
        recorder.run_started(model="pi05-droid", joint_names=[*names[:7], "gripper"], t=t)
        recorder.instruction("wave", t=t)
        image = {"view": "exterior_1", "data": base64.b64encode(jpeg(1)).decode()}
        recorder.observation("r1", {"images": [image], "proprioception": {"joint_positions": [0.5] * 7,
                                                                            "gripper": [0.0]}}, t=t)
        rows = [[0.01 * (r + 1)] * 7 + [1.0] for r in range(4)]
        recorder.answer("r1", rows, sent_t=t, latency_s=0.05, action_space="joint_delta", control_hz=10.0, t=t + 0.05)
        for r, row in enumerate(rows):
            at = t + 0.1 * (r + 1)
            if r == 2:  # a velocity-mode zero at an underrun tick would fall between two actions
                recorder.arm_command(names, [9.0] * 8, t=at - 0.05)
            target = [0.5 + v for v in row[:7]] + [0.04]
            recorder.arm_command(names, target, t=at)
            recorder.command(row, rid="r1", row_index=r, t=at + 0.0001)
            published.append(tuple(target))
            played.append(tuple(row))
        recorder.hold("completed", t=t + 0.45)
        recorder.arm_command(names, [0.5] * 7 + [0.04], t=t + 0.45)  # the node's hold after the run
    episode = episode_of(read_run(path, frames=True))
    assert [s.action for s in episode.steps] == played
    assert [s.joint_command for s in episode.steps] == published
    # one joint, one name: the gripper the node publishes as fr3_finger_joint1 is `gripper`, as in the state
    assert (episode.joint_command_kind, episode.joint_command_names) == ("joint_position", (*names[:7], "gripper"))
    assert episode.state_names == episode.action_names == episode.joint_command_names
    assert episode.published_names == tuple(names)
    assert episode.fps == 10


def test_the_episode_metadata_keeps_numbers_as_numbers_and_booleans_as_booleans(recorded):
    """meta/sequence_ai_episodes.jsonl's line, through plain json (test_lerobot_export.py reads a
    real export's beside lerobot): every outcome field typed as the RunOutcome message declares it."""
    import json

    from sequence_ai.recording.schemas import definition
    from sequence_ai.recording.to_lerobot import metadata_line

    path, sent, _ = recorded
    line = json.loads(json.dumps(metadata_line(episode_of(read_run(path, frames=True)), 0, {})))
    outcome = line["outcome"]
    declared = dict(reversed(f.split()) for f in definition("sequence_ai_record/RunOutcome").splitlines()
                    if f and not f.startswith("#") and not f.startswith("std_msgs"))
    assert set(outcome) == set(declared)
    for name, kind in declared.items():
        expected = {"bool": (bool,), "string": (str,)}.get(kind, (int,) if "int" in kind else (float, type(None)))
        assert isinstance(outcome[name], expected) and (kind == "bool") == isinstance(outcome[name], bool), (name,
                                                                                                             outcome)
    assert (outcome["actions"], outcome["held"], outcome["stopped_early"], outcome["underrun_s"]) == (15, True, True,
                                                                                                      0.1)
    assert (line["control_hz"], line["complete"], line["frames"]) == (15.0, True, 15)
    assert outcome["age_p50_s"] is None  # not measured in this run: null, never "nan" or "None"


def test_a_recording_cut_short_gives_the_steps_it_holds(tmp_path):
    path = tmp_path / "run.mcap"
    with Recorder(path, chunk_size=2048) as recorder:  # small chunks: a cut keeps the ones before it
        sent = scripted_run(recorder)
    data = path.read_bytes()
    cut = tmp_path / "cut.mcap"
    for size in range(len(data) - 1, 0, -97):
        cut.write_bytes(data[:size])
        record = read_run(cut, frames=True)
        if record.commands and "sequence_ai.outcome" not in record.metadata:  # the ending lost too
            break
    episode = episode_of(record)
    assert not episode.complete and episode.damage and episode.reason == "unknown" and not episode.succeeded
    assert [s.action for s in episode.steps] == [tuple(row) for row, _, _ in sent.commands[:len(episode.steps)]]


def test_files_that_hold_no_episode_say_why_in_one_line(tmp_path):
    garbage = tmp_path / "notes.mcap"
    garbage.write_text("not an mcap file\n")
    with pytest.raises(RecordingRefused, match=r"notes.mcap: not an MCAP file"):
        read_run(garbage, frames=True)
    idle = tmp_path / "idle.mcap"
    with Recorder(idle) as recorder:
        recorder.run_started(model="pi05-droid", control_hz=15.0)
    with pytest.raises(NotAnEpisode, match="no action was played"):
        episode_of(read_run(idle, frames=True))


def test_export_without_lerobot_installed_says_what_to_install(recorded, tmp_path, capsys):
    if importlib.util.find_spec("lerobot") is not None:
        pytest.skip("lerobot is installed here")
    path, _, _ = recorded
    assert cli.main(["export", "--format", "lerobot", str(path), str(tmp_path / "dataset")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    if sys.version_info < (3, 12):  # the reason first: the extra installs no lerobot on this Python
        assert err[0].startswith(f"error: export --format lerobot needs Python 3.12 or newer, and this is Python "
                                 f"{platform.python_version()}: lerobot 0.6 does not run on older ones"), err
    else:
        assert "needs the lerobot package" in err[0] and "sequence-ai[lerobot]" in err[0], err
    assert not (tmp_path / "dataset").exists()

