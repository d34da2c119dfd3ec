"""A recorded run reads back — with mcap's own reader, a rosbag2 reader and ROS 2's type support —
exactly as it was handed to the recorder."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
from _runs import JOINTS, VIEWS
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from sequence_ai.recording import Recorder, read_run
from sequence_ai.recording.messages import camera_topic


def _decoded(path: Path):
    with open(path, "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        header, summary = reader.get_header(), reader.get_summary()
        messages = [(channel.topic, message.log_time, decoded)
                    for _schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False)]
    return header, summary, messages


def test_mcap_reader_gets_back_every_event_as_sent(recorded):
    path, sent, recorder = recorded
    header, summary, messages = _decoded(path)
    assert header.profile == "ros2"
    assert summary.statistics.chunk_count >= 1 and summary.chunk_indexes, "the file is not chunked"
    by_topic = {}
    for topic, log_time, message in messages:
        by_topic.setdefault(topic, []).append((log_time, message))

    frames = [(m.header.frame_id, bytes(m.data), m.format) for view in VIEWS for _, m in by_topic[camera_topic(view)]]
    assert sorted(frames) == sorted((view, data, "jpeg") for view, data in sent.frames)
    joints = [m for _, m in by_topic["/policy/joint_states"]]
    assert [list(m.position) for m in joints] == sent.joints
    assert all(list(m.name) == JOINTS for m in joints)

    commands = [m for _, m in by_topic["/policy/command"]]
    assert [(list(m.values), m.rid, m.row_index) for m in commands] == [(row, rid, r) for row, rid, r in sent.commands]
    assert [m.action_index for m in commands] == list(range(1, len(sent.commands) + 1))

    chunks = [m for _, m in by_topic["/policy/chunk"]]
    assert [m.rid for m in chunks] == sent.rids
    for chunk in chunks:
        rows, width = (d.size for d in chunk.steps.layout.dim)
        flat = list(chunk.steps.data)
        assert [flat[i * width:(i + 1) * width] for i in range(rows)] == sent.chunks[chunk.rid]
        assert chunk.latency_s == pytest.approx(0.15) and chunk.action_space == "joint_position"
    requests = [m for _, m in by_topic["/policy/request"]]
    assert [m.rid for m in requests] == sent.rids
    assert [m.instruction for m in requests] == ["pick up the red cube"] * 2 + ["put it on the plate"]
    assert [m.data for _, m in by_topic["/policy/instruction"]] == sent.instructions
    assert [m.reason for _, m in by_topic["/policy/hold"]] == sent.holds
    assert len(by_topic["/policy/feedback"]) == 3

    [(_, outcome)] = by_topic["/policy/outcome"]
    for name in ("reason", "actions", "chunks", "underruns", "instruction_swaps", "action_space"):
        assert getattr(outcome, name) == getattr(sent.outcome, name), name
    assert outcome.stopped_early and outcome.max_seam_jump == pytest.approx(0.01)
    assert (outcome.frames_recorded, outcome.frames_dropped) == (len(sent.frames), 0)
    [(_, run)] = by_topic["/policy/run"]
    assert (run.model, run.episode_id, run.control_hz, list(run.camera_views)) == ("pi05-droid", "ep-1", 15.0,
                                                                                   list(VIEWS))
    assert recorder.stats().frames_recorded == len(sent.frames) and recorder.stats().error is None


def test_log_times_are_epoch_ns_that_follow_the_monotonic_clock(recorded):
    path, sent, _ = recorded
    _, summary, messages = _decoded(path)
    start = next(t for topic, t, _ in messages if topic == "/policy/run")
    commands = [t for topic, t, _ in messages if topic == "/policy/command"]
    # the run started "now": its log time is today's epoch time, not time since boot
    import time

    assert abs(start - time.time_ns()) < 120e9
    # 5 rows per chunk at 15 Hz after a 0.15 s answer: the scripted times, to the nanosecond
    first_answer = start + 150_000_000
    assert commands[0] - first_answer == pytest.approx(1e9 / 15, abs=2)
    assert all(b > a for a, b in zip(commands, commands[1:]))
    assert summary.statistics.message_end_time >= commands[-1]


def test_a_rosbag2_reader_lists_and_decodes_every_topic(recorded):
    """rosbags implements rosbag2's reader in pure Python (rosbag2 itself has no wheel here): it
    opens the bare .mcap like `ros2 bag info run.mcap`, and decodes our own types from the file's
    schemas with its own CDR decoder."""
    rosbag2 = pytest.importorskip("rosbags.rosbag2")
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    path, sent, _ = recorded
    with rosbag2.Reader(path) as bag:
        listed = {c.topic: (c.msgtype, c.msgcount) for c in bag.connections}
        assert listed["/policy/command"] == ("sequence_ai_record/msg/Command", len(sent.commands))
        assert listed[camera_topic(VIEWS[0])] == ("sensor_msgs/msg/CompressedImage", 3)
        assert listed["/policy/joint_states"] == ("sensor_msgs/msg/JointState", 3)
        assert listed["/policy/outcome"] == ("sequence_ai_record/msg/RunOutcome", 1)
        assert bag.message_count == sum(count for _, count in listed.values())
        assert bag.duration > 1e9  # ns: the scripted run spans more than a second

        store = get_typestore(Stores.EMPTY)
        with open(path, "rb") as stream:
            for schema in make_reader(stream).get_summary().schemas.values():
                own, *used = schema.data.decode().split("=" * 80 + "\nMSG: ")
                types = get_types_from_msg(own, schema.name)
                for part in used:
                    name, text = part.split("\n", 1)
                    package, type_name = name.split("/")
                    types.update(get_types_from_msg(text, f"{package}/msg/{type_name}"))
                store.register(types)
        decoded = [(c.topic, store.deserialize_cdr(raw, c.msgtype)) for c, _, raw in bag.messages()]
    outcome = next(m for topic, m in decoded if topic == "/policy/outcome")
    assert (outcome.reason, outcome.actions, outcome.underruns) == ("interrupted", 15, 1)
    chunk = next(m for topic, m in decoded if topic == "/policy/chunk")
    assert list(chunk.steps.data[:8]) == sent.chunks[chunk.rid][0]


def test_standard_messages_decode_with_ros2_type_support(recorded):
    """The camera frames, joint states and instructions are byte-for-byte what ROS 2 itself
    serialises: rclpy's own type support decodes them (what `ros2 bag play` would publish)."""
    serialization = pytest.importorskip("rclpy.serialization", reason="rclpy not importable: run through "
                                        "scripts/workspace.sh")
    from sensor_msgs.msg import CompressedImage, JointState
    from std_msgs.msg import String

    path, sent, _ = recorded
    types = {camera_topic(VIEWS[0]): CompressedImage, "/policy/joint_states": JointState,
             "/policy/instruction": String}
    seen = {topic: [] for topic in types}
    with open(path, "rb") as stream:
        for _, channel, message in make_reader(stream).iter_messages(topics=list(types)):
            seen[channel.topic].append(serialization.deserialize_message(message.data, types[channel.topic]))
    assert [bytes(m.data) for m in seen[camera_topic(VIEWS[0])]] == [d for v, d in sent.frames if v == VIEWS[0]]
    assert [list(m.position) for m in seen["/policy/joint_states"]] == sent.joints
    assert [m.data for m in seen["/policy/instruction"]] == sent.instructions


def test_read_run_gives_the_same_run(recorded):
    path, sent, _ = recorded
    record = read_run(path, frames=True)
    assert record.complete and record.damage is None
    assert [(list(c.values), c.rid, c.row_index) for c in record.commands] == sent.commands
    assert [(f.view, f.data) for f in record.frames] == sent.frames
    assert record.frame_counts == {VIEWS[0]: 3, VIEWS[1]: 3}
    assert [a.steps for a in record.answers] == [tuple(map(tuple, sent.chunks[rid])) for rid in sent.rids]
    assert record.outcome.reason == "interrupted" and math.isclose(record.outcome.underrun_s, 0.1)
    assert record.metadata["sequence_ai.recording"]["frames_dropped"] == "0"


def test_camera_topics_are_legal_ros_names():
    assert camera_topic("wrist_image_left") == "/policy/camera/wrist_image_left/compressed"
    assert camera_topic("left cam-1") == "/policy/camera/left_cam_1/compressed"
    assert camera_topic("0top") == "/policy/camera/v0top/compressed"
    assert camera_topic("") == "/policy/camera/camera/compressed"


def test_a_bad_event_is_logged_never_raised(tmp_path, caplog):
    with Recorder(tmp_path / "bad.mcap") as recorder:
        recorder.observation("r-1", {"images": [{"view": "wrist", "data": 5}]})  # a frame that is no image
        recorder.command([1.0, 2.0], rid="r-1", row_index=0)
        recorder.observation("r-2", {"images": [{"view": "wrist", "data": "%% not base64 %%"}]})
        recorder.hold(None)  # not a string
        recorder.command([3.0], rid="r-2", row_index=0)
    assert "recording an event failed" in caplog.text and "could not be encoded" in caplog.text
    stats = recorder.stats()
    assert stats.skipped == 2 and stats.error is None
    record = read_run(tmp_path / "bad.mcap")
    assert record.complete and [c.values for c in record.commands] == [(1.0, 2.0), (3.0,)]
    assert record.metadata["sequence_ai.recording"]["skipped"] == "2"


def test_the_nodes_run_outcome_message_is_recorded_with_its_own_fields(tmp_path):
    msg = pytest.importorskip("sequence_ai_ros.msg", reason="needs the built ROS workspace")
    ros_outcome = msg.RunOutcome(reason="stale_input", stopped_early=True, message="camera wrist is 0.6 s old",
                                 actions=42, chunks=6, elapsed_s=3.5, underruns=1, underrun_s=0.2,
                                 max_instruction_lag_s=math.nan, max_seam_jump=0.03, held=True,
                                 action_space="joint_position", model="pi05-droid", final_instruction="pick")
    with Recorder(tmp_path / "node.mcap") as recorder:
        recorder.outcome(ros_outcome)
    outcome = read_run(tmp_path / "node.mcap").outcome
    assert (outcome.reason, outcome.message, outcome.actions, outcome.chunks, outcome.held,
            outcome.final_instruction) == ("stale_input", "camera wrist is 0.6 s old", 42, 6, True, "pick")
    assert math.isnan(outcome.max_instruction_lag_s) and outcome.max_seam_jump == pytest.approx(0.03)
