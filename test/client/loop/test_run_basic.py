"""run()/act() against the local platform over pinned TLS: the happy paths."""

from __future__ import annotations

import os

from _loop_robot import Robot, policy_for, run_kwargs


def test_run_completes_max_actions_without_hold(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=20)
    assert out.reason == "completed" and not out.stopped_early
    assert out.actions == 20 == len(robot.actions)
    assert robot.holds == 0
    assert out.chunks >= 2  # one request per window (8 rows) until a chunk's rows (15) end the run
    assert str(out).startswith("RunOutcome(20 actions over ") and str(out).endswith(", completed)")


def test_observe_validate_act_and_callbacks_run_on_the_calling_thread(platform):
    import threading

    robot = Robot()
    threads = set()

    def note(fn):
        def wrapped(*args):
            threads.add(threading.get_ident())
            return fn(*args)
        return wrapped

    with policy_for(platform) as policy:
        policy.run(observe=note(robot.observe), act=note(robot.act), validate=note(lambda a: len(robot.actions) < 18),
                   hold=note(robot.hold), on_chunk=note(lambda c: None), on_status=note(lambda s: None),
                   max_actions=20, progress=False)
    assert threads == {threading.get_ident()}


def test_every_request_of_a_run_carries_its_own_request_id(platform):
    import re

    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=40)
    rids = [r["rid"] for r in platform.requests(limit=50)]
    assert len(rids) >= 4 and all(re.fullmatch(r"r-[0-9a-f]{8}", rid) for rid in rids), rids
    assert len(set(rids)) == len(rids)


def test_a_forked_child_draws_request_ids_of_its_own():
    # The ids come from the PRNG, which a forked child must not share with its parent.
    from sequence_ai._act._request import new_rid

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, new_rid().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert child != new_rid() and child.startswith("r-")


def test_the_outcome_text_never_shows_a_negative_zero():
    from sequence_ai import RunOutcome

    text = str(RunOutcome(actions=3, chunks=1, elapsed_s=0.2, reason="completed", age_p50_s=0.3,
                          lateness_p50_s=-0.001))
    assert "late p50 0.00s" in text and "-0.00" not in text
    assert "late p50 -0.05s" in str(RunOutcome(actions=3, chunks=1, elapsed_s=0.2, reason="completed", age_p50_s=0.3,
                                               lateness_p50_s=-0.05))
