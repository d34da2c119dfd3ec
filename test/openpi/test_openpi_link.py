"""The client in front of openpi's real policy server (openpi-server's WebsocketPolicyServer, in its scratch
venv) serving the stand-in: the same Policy as on the Sequences platform — predict, run, act, interrupt,
set_instruction — with the model's contract from its card."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _openpi_server import OpenpiServer
from _robot import START, Arm
from eventually import wait_until

import sequence_ai
from sequence_ai.platform import policies
from sequence_ai.platform.observation import LazyImages, PolicyInput
from sequence_ai.platform.openpi_standin import ROW


@pytest.fixture  # one per test: a module-wide one would pin the module to one xdist worker (test/conftest.py)
def server():
    with OpenpiServer("--latency-ms", "40") as running:
        yield running


def expected_rows(instruction: str, joints, gripper: float):
    inp = PolicyInput(images=LazyImages({}), joint_positions=list(joints), gripper=[gripper],
                      instruction=instruction, seed=None, model=ROW)
    return np.asarray(policies.stand_in(inp), dtype=np.float32).astype(np.float64).tolist()


def test_predict_sends_the_cards_keys_and_returns_the_servers_chunk(server):
    with sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy, "pick up the cup")
        prediction = policy.predict(arm.observe())
        chunk = prediction.action_chunk
        # the stand-in computed these rows from the joints, gripper and prompt it read under the card's keys
        assert chunk.steps == expected_rows("pick up the cup", START, 0.0)
        assert (chunk.action_dim, chunk.control_frequency_hz, chunk.open_loop_horizon) == (8, 15.0, 8)
        assert "infer_ms" in prediction.perf
        assert policy._worker.metadata == {"stand_in": "pi05-droid"}
        assert policy.buffered == 8  # cut to the card's open-loop horizon


def test_run_and_act_drive_the_arm_at_the_cards_rate(server):
    with sequence_ai.connect(model="pi05-droid", base_url=server.url) as policy:
        arm = Arm(policy)
        outcome = policy.run(arm.observe, arm.act, max_actions=30, validate=lambda a: True, progress=False)
        assert (outcome.reason, outcome.actions) == ("completed", 30)
        assert len(arm.commands) == 30
        outcome = policy.act("pick up the cup", arm.observe, arm.act, max_seconds=1.0, validate=lambda a: True,
                             progress=False)
        assert outcome.reason == "timeout" and outcome.actions >= 10
        assert arm.commands[-1][7] > 0.0  # the act instruction went out as the prompt: the gripper closes


def test_set_instruction_mid_run_reaches_the_server_as_the_prompt(server):
    with sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy, "open the drawer")
        chunks = []
        result = {}

        def drive():
            result["outcome"] = policy.run(arm.observe, arm.act, max_actions=100000, max_seconds=20,
                                           validate=lambda a: True, on_chunk=chunks.append, progress=False,
                                           until=lambda: bool(arm.commands) and arm.commands[-1][7] > 0.2)

        driver = threading.Thread(target=drive)
        driver.start()
        assert wait_until(lambda: len(arm.commands) >= 10, 20)
        assert all(command[7] == 0.0 for command in arm.commands)  # "open": the gripper stays open
        policy.set_instruction("pick up the cup")
        driver.join(30)
        assert result["outcome"].reason == "until" and result["outcome"].instruction_swaps == 1


def test_interrupt_stops_the_run_and_it_holds(server):
    with sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy)
        held = []
        result = {}
        driver = threading.Thread(target=lambda: result.update(outcome=policy.run(
            arm.observe, arm.act, max_actions=100000, validate=lambda a: True, hold=lambda: held.append(1),
            progress=False)))
        driver.start()
        assert wait_until(lambda: len(arm.commands) >= 5, 20)
        policy.interrupt()
        driver.join(10)
        assert result["outcome"].reason == "interrupted" and held == [1]


def test_a_serial_server_is_never_sent_a_second_request_while_one_is_in_flight():
    from sequence_ai._loop._budget import RequestCadence

    common = dict(actions_left=30, deadline=None, buffered=10, hz=15.0, lead_s=0.9, latency_s=0.7)
    assert RequestCadence(2.0).due(4.0, in_flight=1, **common)  # at 0.7 s the budget wants two in flight ...
    serial = RequestCadence(2.0, max_in_flight=1)
    assert not serial.due(4.0, in_flight=1, **common)  # ... but a server answering one at a time takes one
    assert serial.due(4.0, in_flight=0, **common)


def test_a_run_against_an_openpi_server_records_like_any_other(server, tmp_path):
    pytest.importorskip("mcap", reason="recording needs the [record] extra")
    from sequence_ai.recording.reader import read_run
    from sequence_ai.recording.summary import summarize

    path = tmp_path / "run.mcap"
    with sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy, "pick up the cup")
        outcome = policy.run(arm.observe, arm.act, max_actions=30, validate=lambda a: True, progress=False,
                             record=str(path))
    summary = summarize(read_run(path))
    assert (summary.actions, summary.answers, summary.failed) == (30, outcome.chunks, 0)
