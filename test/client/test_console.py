"""What the client prints: warnings point at the caller's line, and the warming line never glues
onto the status line."""

from __future__ import annotations

import warnings

from _loop_robot import Robot, policy_for, run_kwargs


def test_the_missing_validate_warning_points_at_the_run_call(platform, monkeypatch):
    import sequence_ai._policy as policy_module

    monkeypatch.setattr(policy_module, "_warned_no_validate", False)
    robot = Robot()
    with policy_for(platform) as policy, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.run(**run_kwargs(robot, validate=None), max_actions=2)
    (warning,) = [w for w in caught if "validate" in str(w.message)]
    assert warning.filename == __file__, warning.filename


def test_the_warming_warning_points_at_the_run_call_not_at_the_library(platform):
    platform.fault("warming", seconds=1.5, eta_s=1)
    robot = Robot()
    with policy_for(platform, on_warming=lambda waited, eta: None) as policy, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = policy.run(**run_kwargs(robot), max_actions=4)
    assert out.reason == "completed"
    warming = [w for w in caught if "warming" in str(w.message)]
    assert warming and all(w.filename == __file__ for w in warming), [w.filename for w in warming]


def test_a_warming_line_ends_the_status_line_it_interrupts(platform, capsys):
    platform.fault("warming", seconds=1.5, eta_s=1)
    robot = Robot()
    with policy_for(platform) as policy, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy.run(**run_kwargs(robot, progress=True), max_actions=4)
    captured = capsys.readouterr()
    assert "starting the model" in captured.out
    # the status line was open ("\r[sequences] starting  ") when the warming line came: ended first
    starting = captured.err.index("[sequences] starting")
    running = captured.err.index("[sequences] running")
    assert "\n" in captured.err[starting:running], repr(captured.err)
