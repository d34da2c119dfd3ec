"""Faults of an openpi server, each met with the real WebsocketPolicyServer: killed mid-run and restarted,
the policy raising, a policy that never answers, rows of the wrong width (in the answer or the metadata),
an answer over the frame bound — and, from a hand-made websocket server, frames that are not openpi's."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from _openpi_server import OpenpiServer
from _robot import Arm
from eventually import wait_until

import sequence_ai
from sequence_ai import SequencesError, Unavailable


def ok(action) -> bool:
    return True


def test_a_server_killed_mid_run_and_restarted_is_reconnected_with_one_hold():
    server = OpenpiServer("--latency-ms", "40").start()
    try:
        with sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
            arm = Arm(policy)
            result = {}
            driver = threading.Thread(target=lambda: result.update(outcome=policy.run(
                arm.observe, arm.act, max_actions=60, validate=ok, progress=False)))
            driver.start()
            assert wait_until(lambda: len(arm.commands) >= 10, 20)
            server.kill()
            # the client saw the connection go and the arm ran out of rows: it holds until the server is back
            assert wait_until(lambda: not policy._worker.connected and policy.progress().buffered == 0, 20)
            server.start()
            driver.join(60)
            outcome = result["outcome"]
            assert (outcome.reason, outcome.actions) == ("completed", 60)
            assert policy._worker.reconnects == 1 and policy._worker.metadata == {"stand_in": "pi05-droid"}
            assert outcome.underruns == 1  # one hold while the server was away, then on as before
    finally:
        server.kill()


def test_an_exception_in_the_policy_is_an_error_naming_the_servers_last_traceback_line():
    with OpenpiServer() as server, sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy, "explode now")
        with pytest.raises(SequencesError, match="RuntimeError: the stand-in policy exploded on purpose"):
            policy.run(arm.observe, arm.act, max_actions=10, validate=ok, progress=False)
        assert arm.commands == []


def test_a_server_that_never_answers_is_bounded_and_an_interrupt_still_ends_the_run_in_time():
    with OpenpiServer() as server:
        # startup_timeout_s=0: no warm wait before the first answer, so the request's own timeout bounds it
        with sequence_ai.connect(model="pi05_droid", base_url=server.url, timeout_s=2.0, startup_timeout_s=0) as policy:
            arm = Arm(policy, "hang on")
            started = time.monotonic()
            with pytest.raises(Unavailable, match=r"sent no answer within 2\.0s"):
                policy.predict(arm.observe())
            assert time.monotonic() - started < 10
        with sequence_ai.connect(model="pi05_droid", base_url=server.url, timeout_s=60.0) as policy:
            arm = Arm(policy, "hang on")
            result = {}
            driver = threading.Thread(target=lambda: result.update(outcome=policy.run(
                arm.observe, arm.act, max_actions=10, validate=ok, progress=False, control_hz=15)))
            driver.start()
            assert wait_until(lambda: policy.progress().running or policy.progress().warming, 10) is not None
            policy.interrupt()
            driver.join(5)
            assert not driver.is_alive() and result["outcome"].reason == "interrupted"


@pytest.mark.parametrize("flag", ["--action-dim", "--metadata-action-dim"])
def test_rows_of_the_wrong_width_are_refused_before_any_command(flag):
    with OpenpiServer(flag, "7") as server, sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy)
        with pytest.raises(SequencesError, match=r"7.*pi05_droid declares.*8"):
            policy.run(arm.observe, arm.act, max_actions=10, validate=ok, progress=False)
        assert arm.commands == []


def test_an_answer_over_the_frame_bound_is_refused():
    with OpenpiServer("--junk-bytes", str(20 << 20)) as server, \
            sequence_ai.connect(model="pi05_droid", base_url=server.url) as policy:
        arm = Arm(policy)
        with pytest.raises(SequencesError, match="over the 16777216-byte bound"):
            policy.predict(arm.observe())


class HandMade:
    """A websocket server of our own (websockets' asyncio server) that speaks first with `metadata`
    and answers every request with `answer`; it keeps the request headers it saw."""

    def __init__(self, metadata, answer):
        self.metadata, self.answer, self.headers = metadata, answer, []
        self.port = None
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), daemon=True).start()
        assert started.wait(10)

    def _run(self, started):
        from websockets.asyncio.server import serve

        async def handler(connection):
            self.headers.append(dict(connection.request.headers))
            await connection.send(self.metadata)
            async for _ in connection:
                await connection.send(self.answer)

        async def main():
            async with serve(handler, "127.0.0.1", 0) as server:
                self.port = server.sockets[0].getsockname()[1]
                started.set()
                await asyncio.Future()

        self._loop.run_until_complete(main())


@pytest.mark.parametrize("metadata, answer, message", [
    (b"\x80", b"\xc1\xc1", "malformed answer from the openpi server: not a msgpack frame"),
    (b"\x80", b"\x81\xa7actions\xa3abc", "'actions' is not an H\u00d7D array"),
    ("a text frame", b"\x80", "sent text where its metadata belongs"),
    (b"\x93\x01\x02\x03", b"\x80", "metadata is a list, not a map"),
])
def test_frames_that_are_not_openpis_are_clear_errors(metadata, answer, message, monkeypatch):
    server = HandMade(metadata, answer)
    monkeypatch.setenv("OPENPI_API_KEY", "k-123")
    with sequence_ai.connect(model="pi05_droid", base_url=f"ws://127.0.0.1:{server.port}") as policy:
        arm = Arm(policy)
        with pytest.raises(SequencesError) as caught:
            policy.predict(arm.observe())
        assert message in str(caught.value)
    assert server.headers[0]["authorization"] == "Api-Key k-123"  # the key from the environment, openpi's header


def test_a_server_not_up_yet_is_the_warming_wait_and_the_run_starts_once_it_is():
    server = OpenpiServer("--latency-ms", "40")  # its port chosen, nothing listening on it yet
    warmed = []
    try:
        with sequence_ai.connect(model="pi05_droid", base_url=server.url, on_warming=lambda *a: warmed.append(a)) \
                as policy:
            arm = Arm(policy)
            assert policy.ready() == (False, None)
            result = {}
            driver = threading.Thread(target=lambda: result.update(outcome=policy.run(
                arm.observe, arm.act, max_actions=20, validate=ok, progress=False)))
            driver.start()
            assert wait_until(lambda: warmed, 20)  # refused: warming, told to on_warming
            assert policy.progress().warming and arm.commands == []
            server.start()
            driver.join(60)
            assert (result["outcome"].reason, result["outcome"].actions) == ("completed", 20)
            assert policy.ready() == (True, None)
    finally:
        server.kill()
