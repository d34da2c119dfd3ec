"""`sequence-ai doctor` and `sequence-ai models` with a ws:// URL, against openpi's real server serving the
stand-in: doctor checks what a run needs of such a server (accepting connections, /healthz, the metadata
and the card agreeing, a real round trip and its latency); models lists the shipped cards."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from _openpi_server import OpenpiServer, free_port
from eventually import wait_until

from sequence_ai import cli
from sequence_ai._doctor_openpi import openpi_doctor

NOTHING_LISTENS_WAIT_S = 2.0
NOTHING_LISTENS_BOUND_S = 30.0  # the --wait, then one line: never a hang


def lines_of(text: str) -> dict:
    """{label: text} of doctor's report lines (`  label         text`)."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^  (\S+)\s{2,}(.*)$", line)
        if match:
            found.setdefault(match.group(1), match.group(2))
    return found


def test_doctor_checks_an_openpi_server_end_to_end(capsys, monkeypatch):
    monkeypatch.setenv("OPENPI_API_KEY", "pi-key-0123456789abcdef")
    with OpenpiServer("--latency-ms", "40") as server:
        assert cli.main(["--base-url", server.url, "doctor", "--model", "pi05-droid"]) == 0
    out = capsys.readouterr().out
    seen = lines_of(out)
    assert f"openpi      {server.url}" in out and out.rstrip().endswith("ready")
    assert seen["key"] == "OPENPI_API_KEY  (pi-key-01…cdef)"  # redacted, never whole
    assert seen["card"].startswith("pi05_droid: 8-wide joint_delta at 15 Hz, 15 rows (plays 8)")
    assert re.fullmatch(r"up, websocket open and metadata read in \d+\.\d ms", seen["server"])
    assert re.fullmatch(r"200 \(\d+\.\d ms\)", seen["healthz"])
    assert seen["metadata"] == "stand_in=pi05-droid"
    # the stand-in sleeps 40 ms per request: a round trip shorter than that was never one
    trips = re.fullmatch(r"15×8 chunk, 8 wide as the card says; round trip (\d+\.\d) ms first, (\d+\.\d) ms then, "
                         r"the server's inference (\d+\.\d) ms", seen["predict"])
    assert trips and all(float(trips.group(i)) >= 40.0 for i in (1, 2, 3))


def test_doctor_names_both_widths_when_the_metadata_contradicts_the_card(capsys):
    with OpenpiServer("--metadata-action-dim", "7") as server:
        assert cli.main(["--base-url", server.url, "doctor"]) == 1
    seen = lines_of(capsys.readouterr().out)
    assert "metadata says action_dim 7 but model card pi05_droid declares 8" in seen["server"]
    assert "predict" not in seen  # nothing is sent to a server the card contradicts


def test_doctor_refuses_an_answer_wider_than_the_card(capsys):
    with OpenpiServer("--action-dim", "9") as server:
        assert cli.main(["--base-url", server.url, "doctor"]) == 1
    seen = lines_of(capsys.readouterr().out)
    assert seen["predict"].startswith("FAILED — the openpi server sent 9-wide actions but model card pi05_droid")


def test_doctor_where_nothing_listens_says_so_within_its_wait(capsys):
    url = f"ws://127.0.0.1:{free_port()}"
    started = time.monotonic()
    assert cli.main(["--base-url", url, "doctor", "--wait", str(NOTHING_LISTENS_WAIT_S)]) == 1
    assert time.monotonic() - started < NOTHING_LISTENS_BOUND_S
    out = capsys.readouterr().out
    seen = lines_of(out)
    assert seen["warming"].startswith(f"nothing accepts connections at {url} yet")
    assert seen["server"] == f"NOT UP — nothing accepted connections at {url} within {NOTHING_LISTENS_WAIT_S:g}s"
    assert "listens only once its checkpoint is loaded" in out and "healthz" not in seen


def test_doctor_waits_out_a_server_that_is_not_up_yet_and_then_checks_it():
    server = OpenpiServer("--latency-ms", "40")
    out, result = io.StringIO(), {}
    doctor = threading.Thread(target=lambda: result.update(code=openpi_doctor(server.url, "pi05_droid", 120.0, out)))
    doctor.start()
    try:
        assert wait_until(lambda: "warming" in out.getvalue(), 60)  # refused: the warming line, not a failure
        server.start()
        doctor.join(120)
    finally:
        server.kill()
    seen = lines_of(out.getvalue())
    assert result["code"] == 0 and seen["warming"].startswith(f"nothing accepts connections at {server.url} yet")
    assert seen["server"].startswith("up,") and seen["predict"].startswith("15×8 chunk")


def test_doctor_with_a_card_file_that_is_wrong_names_the_field(capsys, tmp_path):
    card = tmp_path / "mine.json"
    card.write_text('{"name": "mine"}')
    assert cli.main(["--base-url", f"ws://127.0.0.1:{free_port()}", "doctor", "--model", str(card)]) == 1
    seen = lines_of(capsys.readouterr().out)
    assert seen["card"].startswith("REFUSED — model card") and "control_hz" in seen["card"]


@pytest.mark.parametrize("endpoint", [[], ["--endpoint", "act"]])
def test_models_with_a_ws_url_lists_the_shipped_cards_without_asking_anything(capsys, endpoint):
    url = f"ws://127.0.0.1:{free_port()}"  # nothing listens: models never connects
    assert cli.main(["--base-url", url, "models", *endpoint]) == 0
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines()[1:]]
    assert [row[0] for row in rows] == ["pi05_droid", "pi0_droid", "pi0_fast_droid"]
    assert all(row[1:4] == ["droid_franka", "8", "15"] for row in rows)
    assert "openpi server, which lists no models" in captured.err


def test_models_of_another_endpoint_with_a_ws_url_is_empty(capsys):
    assert cli.main(["--base-url", f"ws://127.0.0.1:{free_port()}", "models", "--endpoint", "chat"]) == 0
    assert capsys.readouterr().out.strip() == "no models"
