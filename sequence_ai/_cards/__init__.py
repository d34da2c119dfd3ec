"""Model cards (`_card.Card`): the contract of a model whose server publishes none. `load_card(model)`
finds a shipped card by name (`pi05_droid`, or `pi05-droid` as the Sequences catalogue spells it) or
reads a user's card from a JSON file, checked field by field."""

from __future__ import annotations

import json
import os

from ._card import Card, CardError
from ._shipped import SHIPPED

__all__ = ["Card", "CardError", "load_card", "shipped_cards"]

MAX_CARD_BYTES = 1 << 20


def shipped_cards() -> list:
    return sorted(SHIPPED)


def load_card(model: str) -> Card:
    """The card for `model`: a shipped card's name, or the path of a JSON card file."""
    if not isinstance(model, str) or not model:
        raise CardError("model must name a shipped model card or a card file")
    short = model.rstrip("/").rsplit("/", 1)[-1].replace("-", "_")
    if short in SHIPPED and not os.path.isfile(model):
        return Card.from_dict(SHIPPED[short], short)
    if not (model.endswith(".json") or os.path.isfile(model)):
        raise CardError(f"no model card {model!r}: an openpi server publishes no contract, so the model must be "
                        f"a shipped card ({', '.join(shipped_cards())}) or the path of a card file (.json)")
    try:
        with open(model, "rb") as handle:
            raw = handle.read(MAX_CARD_BYTES + 1)
    except OSError as exc:
        raise CardError(f"model card {model}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CARD_BYTES:
        raise CardError(f"model card {model}: larger than {MAX_CARD_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise CardError(f"model card {model}: not JSON ({exc})") from None
    return Card.from_dict(data, model)
