"""The cards' natural rank (topology.natural_ranks: the card table's ``natural_rank``, the
mock's link order) from one natural key a host is each card id's own natural key ranked:
over random host names (digits, leading zeros, dashes and dots, names that are prefixes of
others, names ending in letters or digits) and card counts, equal keys sharing a rank."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sncheck.model import natural_key
from sncheck.topology import Card, natural_ranks


def _by_card(cards: list[Card]) -> np.ndarray:
    keys = [natural_key(c.id) for c in cards]
    rank, dense, prev = np.empty(len(cards), np.int64), -1, None
    for k in sorted(range(len(cards)), key=keys.__getitem__):
        dense += keys[k] != prev
        rank[k], prev = dense, keys[k]
    return rank


def _name(rng: random.Random) -> str:
    parts = [rng.choice(["h", "node", "a", "a-b", "x.y", "gpu", "n", "N", "a_"])]
    for _ in range(rng.randrange(0, 3)):
        parts.append(rng.choice(["0", "00", "1", "01", "001", "9", "10", "123", str(rng.randrange(200))]))
        parts.append(rng.choice(["", "-", ".", "b", "-r", "z"]))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(40))
def test_ranks_by_host_are_the_card_ids_natural_ranks(seed):
    rng = random.Random(seed)
    hosts = list(dict.fromkeys(_name(rng) for _ in range(rng.randrange(1, 60))))
    rng.shuffle(hosts)
    cards = [Card(f"{h}/gpu{i}", h, i, "sn0") for h in hosts for i in range(rng.choice([1, 2, 8, 11, 16]))]
    assert np.array_equal(natural_ranks(cards), _by_card(cards))


def test_equal_keys_share_a_rank():
    cards = [Card(f"{h}/gpu{i}", h, i, "sn0") for h in ("h01", "h1", "h2") for i in range(2)]
    rank = natural_ranks(cards)
    assert rank.tolist() == [0, 1, 0, 1, 2, 3] == _by_card(cards).tolist()


def test_a_host_name_with_a_slash_is_keyed_card_by_card():
    cards = [Card(f"{h}/gpu{i}", h, i, "sn0") for h in ("r1/h2", "r1/h10", "r1-h3") for i in range(3)]
    assert np.array_equal(natural_ranks(cards), _by_card(cards))
