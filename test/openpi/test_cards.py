"""Model cards: the shipped DROID cards, a user's card file, and errors that name the field."""

from __future__ import annotations

import json

import pytest

from sequence_ai._cards import CardError, load_card, shipped_cards
from sequence_ai._cards._shipped import SHIPPED


def test_the_droid_cards_ship_with_the_package_and_read_as_catalogue_rows():
    assert shipped_cards() == ["pi05_droid", "pi0_droid", "pi0_fast_droid"]
    card = load_card("pi05-droid")  # the Sequences spelling finds the same card
    row = card.row("pi05-droid")
    assert (row.control_hz, row.action_horizon, row.open_loop_horizon, row.action_dim) == (15.0, 15, 8, 8)
    assert row.camera_views == ("exterior_1", "wrist_left")
    assert row.state_layout == {"joint_positions": 7, "gripper": 1}
    assert row.client_resize == {"size": [224, 224], "filter": "bilinear"} and row.input_resize == "pad"
    assert dict(card.views)["wrist_left"] == "observation/wrist_image_left"
    assert card.prompt_key == "prompt"
    assert load_card("pi0_fast_droid").action_horizon == 10


def _write(tmp_path, **changes):
    card = json.loads(json.dumps(SHIPPED["pi05_droid"]))
    card.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del card[key]
    path = tmp_path / "my_policy.json"
    path.write_text(json.dumps(card))
    return str(path)


def test_a_users_card_file_is_read_and_checked(tmp_path):
    card = load_card(_write(tmp_path, name="my_policy", control_hz=10, views={"front": "image/front"}))
    assert card.name == "my_policy" and card.control_hz == 10.0 and card.views == (("front", "image/front"),)


@pytest.mark.parametrize("changes, named", [
    ({"control_hz": -3}, "control_hz must be a positive number of Hz, not -3"),
    ({"contol_hz": 15}, "'contol_hz' is not a card field"),
    ({"action_dim": None}, "'action_dim' is missing"),
    ({"open_loop_horizon": 20}, "open_loop_horizon (20) must not exceed action_horizon (15)"),
    ({"state": {"joints": {"key": "q", "width": 7}}}, "state.joints is not a state part"),
    ({"image": {"size": [224], "resize": "pad"}}, "image.size must be [width, height]"),
    ({"image": {"size": [224, 224], "resize": "crop"}}, "image.resize must be one of pad, stretch"),
    ({"prompt_key": "observation/joint_position"}, "wire keys name 'observation/joint_position' twice"),
])
def test_a_bad_card_is_refused_naming_the_file_and_the_field(tmp_path, changes, named):
    path = _write(tmp_path, **changes)
    with pytest.raises(CardError) as caught:
        load_card(path)
    assert path in str(caught.value) and named in str(caught.value)


def test_a_card_that_is_not_json_or_not_there_is_named(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(CardError, match=r"broken\.json: not JSON"):
        load_card(str(bad))
    with pytest.raises(CardError, match="cannot be read"):
        load_card(str(tmp_path / "missing.json"))
    with pytest.raises(CardError, match="a shipped card \\(pi05_droid, pi0_droid, pi0_fast_droid\\)"):
        load_card("gr00t")
