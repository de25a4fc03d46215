"""In a fleet larger than ``mockp2p.CARDS_PER_PART`` cards the mock's pair and rank rows go
out in parts of more rows, the same rows (issue 31, store31: every read of a card column
hashes the card names each part holds, every card's: 22 ms a part and column at 131,072
cards; README "Fleet scale", round 10)."""

from __future__ import annotations

from sncheck.backends import mock, mockp2p
from sncheck.backends.mock import MockBackend
from sncheck.backends.mockp2p import BATCH_PAIRS, CARDS_PER_PART, part_rows
from sncheck.probeplan import StressPlan, connectivity_plan, stress_groups
from sncheck.run.inputs import load_faults_text
from tests.test_mock_p2p_rounds import FAULTS, TOPO, Batches


def test_a_part_holds_its_rows_for_every_so_many_cards_of_the_fleet():
    assert part_rows(BATCH_PAIRS, 16_384) == BATCH_PAIRS          # the 16,384-card gate: as before
    assert part_rows(BATCH_PAIRS, CARDS_PER_PART) == BATCH_PAIRS
    assert part_rows(BATCH_PAIRS, CARDS_PER_PART + 1) == 2 * BATCH_PAIRS
    assert part_rows(BATCH_PAIRS, 131_072) == 4 * BATCH_PAIRS     # 131,072 cards: 1,048,576 pairs a part
    assert part_rows(7, 1) == 7


class Rows(Batches):
    def rows(self) -> dict[str, list]:
        """Every batch's columns as lists of values, one after the other."""
        out: dict[str, list] = {}
        for cols in self.batches:
            n = max(len(v) for v in cols.values() if not isinstance(v, (str, int, float)))
            for k, v in cols.items():
                values = [v] * n if isinstance(v, (str, int, float)) else \
                    v.to_pylist() if hasattr(v, "to_pylist") else [None if x != x else x for x in list(v)]
                out.setdefault(k, []).extend(values)
        return out


class Sink:
    """Each kind's batches (a not_run row aside)."""

    def __init__(self) -> None:
        self.kinds: dict[str, Rows] = {}

    def __call__(self, row: dict) -> None:
        pass

    def batch(self, kind: str, columns: dict) -> None:
        self.kinds.setdefault(kind, Rows()).batch(kind, columns)


def _run(monkeypatch, cards_per_part: int) -> tuple[Sink, Sink]:
    monkeypatch.setattr(mockp2p, "BATCH_PAIRS", 50)
    monkeypatch.setattr(mock, "BATCH_RANK_ROWS", 50)
    monkeypatch.setattr(mockp2p, "CARDS_PER_PART", cards_per_part)
    pairs, sweeps = Sink(), Sink()
    MockBackend(TOPO, load_faults_text(FAULTS, TOPO), seed=3).p2p(connectivity_plan(TOPO), pairs)
    b = MockBackend(TOPO, load_faults_text(FAULTS, TOPO), seed=3)
    b.collectives(StressPlan(groups=stress_groups(TOPO), collectives=("all_reduce",), sizes=(8, 1 << 20)), sweeps)
    return pairs, sweeps


def test_a_large_fleet_s_rows_go_out_in_fewer_parts_the_same_rows(monkeypatch):
    cards = len(TOPO.card_ids)
    small, small_sweeps = _run(monkeypatch, cards)           # this fleet within one CARDS_PER_PART
    large, large_sweeps = _run(monkeypatch, -(-cards // 4))  # this fleet as four times CARDS_PER_PART
    pairs, fewer = small.kinds["p2p"], large.kinds["p2p"]
    assert len(fewer.batches) < len(pairs.batches)
    assert all(len(b["src"]) >= 4 * 50 for b in fewer.batches[:-1])
    assert fewer.rows() == pairs.rows()
    for kind in ("collective", "rank"):
        assert len(large_sweeps.kinds[kind].batches) < len(small_sweeps.kinds[kind].batches), kind
        assert large_sweeps.kinds[kind].rows() == small_sweeps.kinds[kind].rows(), kind
