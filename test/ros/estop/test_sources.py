"""Who holds the e-stop (estop/sources.py), on a set clock: a press is released only by its own
publisher's false; a publisher that went away while pressing leaves a lost press that only the
explicit release frees; the start latch; the heartbeat; a publisher that cannot connect."""

from __future__ import annotations

from sequence_ai_ros.estop.sources import GONE_KEPT, UNLISTED_GRACE_S, EStopSources

A, B = b"A" * 16, b"B" * 16


class Clock:
    def __init__(self) -> None:
        self.s = 100.0

    def __call__(self) -> float:
        return self.s


def sources(start_engaged: bool = False, heartbeat_s: float = 0.0, clock=None) -> EStopSources:
    return EStopSources(start_engaged=start_engaged, heartbeat_s=heartbeat_s, now_s=clock or Clock())


def test_a_press_is_released_only_by_the_publisher_that_made_it():
    estop = sources()
    estop.listed({A: ("/pendant", True), B: ("/dashboard", True)})
    assert not estop.engaged, "silent publishers that can connect hold nothing"
    estop.heard(A, True)
    estop.heard(B, False)
    estop.heard(B, False)
    assert estop.engaged and "/pendant (gid 4141" in estop.holds()[0] and "presses it" in estop.holds()[0]
    ok, why = estop.release()
    assert not ok and "presses it" in why and estop.engaged, "a live press is not released by the service"
    estop.heard(A, False)
    assert not estop.engaged and estop.holds() == []


def test_a_publisher_gone_while_pressing_holds_until_the_release_and_another_false_frees_nothing():
    estop = sources()
    estop.listed({A: ("/pendant", True), B: ("/dashboard", True)})
    estop.heard(A, True)
    gone = estop.listed({B: ("/dashboard", True)})
    assert [s.gid for s in gone] == [A] and gone[0].pressed
    assert estop.engaged and "went away while pressing" in estop.holds()[0]
    estop.heard(B, False)
    assert estop.engaged
    states = {s.gid: s.state for s in estop.sources()}
    assert states == {A: "gone while pressing: a lost press", B: "released"}
    ok, why = estop.release()
    assert ok and "the lost press of /pendant" in why and not estop.engaged
    assert estop.release() == (True, "the e-stop was not engaged")


def test_the_start_latch_holds_until_released():
    estop = sources(start_engaged=True)
    assert estop.holds() == ["not released since the node started (call ~/release_estop once it is safe)"]
    estop.heard(A, False)
    assert estop.engaged, "a false releases no start latch"
    assert estop.release() == (True, "released the start latch") and not estop.engaged


def test_the_heartbeat_engages_when_messages_stop_and_releases_when_they_come_again():
    clock = Clock()
    estop = sources(heartbeat_s=0.5, clock=clock)
    assert estop.engaged and "since the node started" in estop.holds()[0]
    estop.heard(A, False)
    assert not estop.engaged
    clock.s += 0.4
    assert not estop.engaged
    clock.s += 0.2
    assert estop.engaged and "no e-stop message for 0.6 s" in estop.holds()[0]
    assert not estop.release()[0], "a lapsed heartbeat is not released by the service"
    estop.heard(A, False)
    assert not estop.engaged


def test_a_publisher_that_cannot_connect_holds_while_it_is_there():
    estop = sources()
    estop.listed({A: ("/volatile", False)})
    assert estop.engaged and "cannot connect" in estop.holds()[0]
    assert not estop.release()[0]
    estop.listed({})
    assert not estop.engaged, "gone without a word: it pressed nothing"


def test_a_publisher_heard_but_never_listed_is_gone_after_the_grace():
    clock = Clock()
    estop = sources(clock=clock)
    estop.heard(A, True)
    assert estop.listed({}) == [] and "presses it" in estop.holds()[0], "the graph may list it late"
    clock.s += UNLISTED_GRACE_S + 0.1
    assert [s.gid for s in estop.listed({})] == [A] and "went away while pressing" in estop.holds()[0]


def test_gone_publishers_that_hold_nothing_are_forgotten_beyond_a_few_and_lost_presses_never():
    clock = Clock()
    estop = sources(clock=clock)
    estop.listed({A: ("/pendant", True)})
    estop.heard(A, True)
    for i in range(GONE_KEPT + 5):
        gid = bytes([i]) * 16
        estop.listed({A: ("/pendant", True), gid: (f"/dashboard{i}", True)})
        estop.heard(gid, False)
        clock.s += 1.0
    estop.listed({})
    kept = estop.sources()
    assert A in {s.gid for s in kept} and len(kept) == GONE_KEPT + 1
