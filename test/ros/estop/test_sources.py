"""Who holds the e-stop (estop/sources.py), on a set clock: a press is released only by its own
publisher's false; a publisher that went away while pressing leaves a lost press that only the
explicit release frees; the start latch; the heartbeat; a publisher that cannot connect; the
release refused while a listed publisher has sent nothing yet; a message that could not be decoded
presses; a publisher faster than FLOOD_HZ is shown flooding, with its rate."""

from __future__ import annotations

from sequence_ai_ros.estop.sources import FLOOD_HZ, GONE_KEPT, RATE_WINDOW_S, UNLISTED_GRACE_S, EStopSources

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


def test_the_release_is_refused_while_a_listed_publisher_has_sent_nothing_yet():
    estop = sources()
    estop.heard(A, True)
    estop.listed({A: ("/pendant", True)})
    estop.listed({})  # the pendant went away pressing: a lost press
    estop.listed({B: ("/pendant2", True)})  # a new one is listed; its latched value has not arrived
    ok, why = estop.release()
    assert not ok and "/pendant2" in why and "has sent nothing since it appeared" in why, why
    assert estop.engaged and "went away while pressing" in estop.holds()[0], "nothing was released"
    estop.heard(B, True)  # its latched value: a press
    assert not estop.release()[0]
    estop.heard(B, False)
    ok, why = estop.release()
    assert ok and "the lost press of /pendant" in why and not estop.engaged


def test_a_message_that_could_not_be_decoded_presses_for_its_publisher_until_its_own_false():
    estop = sources()
    estop.listed({A: ("/pendant", True)})
    estop.heard(A, True, decoded=False)
    assert estop.engaged and "presses it" in estop.holds()[0]
    assert [s.state for s in estop.sources()] == ["pressing (a message that could not be decoded)"]
    assert estop.sources()[0].undecodable == 1
    estop.heard(A, False)
    assert not estop.engaged and [s.state for s in estop.sources()] == ["released"]


def test_a_publisher_faster_than_the_flood_rate_is_shown_with_its_rate_and_its_values_count_as_any():
    clock = Clock()
    estop = sources(clock=clock)
    estop.listed({A: ("/pendant", True), B: ("/dashboard", True)})
    estop.heard(A, False, count=1)
    for _ in range(25):  # 1000 messages a second, a hundred a take
        clock.s += RATE_WINDOW_S / 10
        estop.heard(B, False, count=100)
        estop.heard(A, False, count=1)
    flooding = {s.gid: s for s in estop.sources()}[B]
    assert flooding.flooding and 900 <= flooding.rate_hz <= 1100, flooding
    states = {s.gid: s.state for s in estop.sources()}
    assert states[B] == f"released; flooding: {flooding.rate_hz:.0f} messages/s (more than {FLOOD_HZ:g}/s)", states
    assert states[A] == "released", states
    assert not estop.engaged, "a flood of false presses nothing"
    estop.heard(A, True)
    assert estop.engaged, "and releases no other publisher's press"
    estop.heard(B, False, count=5)
    assert estop.engaged
    clock.s += 2 * RATE_WINDOW_S  # it stopped: not flooding any more
    assert not any(s.flooding for s in estop.sources())
