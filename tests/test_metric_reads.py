"""Each metric's ``reads`` (the row kinds it reads) against what it asks for.

A retest judges only the rules whose metric reads a kind it re-read
(sncheck.run.confirm.Window._evaluate): a metric that reads a kind its ``reads`` does not
list is never judged on a retest of that kind, and a suspect whose symptom it is would be
released unseen. So every kind a metric asks the rows for must be listed."""

from pathlib import Path

import pandas as pd
import pytest

from sncheck.health.metrics import METRICS, DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory
from sncheck.store.frames import RowFrames
from sncheck.store.rundir import read_frames
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "tests/data/run-614f5fd/run"  # a demo-2sn gate: p2p, host_fact, collective, golden, not_run rows


class Asked(RowFrames):
    """Rows that record every kind a metric asks them for."""

    def __init__(self, frames) -> None:
        super().__init__(frames)
        self.asked: set[str] = set()

    def kind(self, kind: str, columns=None) -> pd.DataFrame:
        self.asked.add(kind)
        return super().kind(kind, columns)


@pytest.fixture(scope="module")
def run():
    parts = read_frames(RUN)
    frames = {k: parts.kind(k) for k in parts.kinds}
    ctx = DetectContext(Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml")), {})
    return frames, ctx


def test_no_metric_asks_for_a_kind_it_does_not_list(run):
    frames, ctx = run
    seen = set()
    for name, metric in METRICS.items():
        for rows in (Asked({}), Asked(frames)):  # no rows (what it asks first), a gate's rows (what it asks for all)
            metric.fn(rows, ctx)
            assert rows.asked <= set(metric.reads), (name, rows.asked, metric.reads)
            seen |= rows.asked
    assert {"p2p", "host_fact", "collective", "golden", "not_run", "rank"} <= seen  # the rows held what they ask


def test_every_rule_judges_its_reads_kinds_alone_as_all_the_rows(run):
    """What a retest does (only the rules whose kinds it re-read, over those rows): the
    same findings as those rules over every row."""
    frames, ctx = run
    every = pd.concat(frames.values(), ignore_index=True)
    by_reads: dict[tuple[str, ...], list] = {}
    for rule in load_rules("default").rules:
        by_reads.setdefault(METRICS[rule.metric].reads, []).append(rule)
    fired = set()
    for reads, rules in by_reads.items():
        want = [(f.entity, f.rule, f.message) for f in evaluate(rules, every, ctx)]
        got = [(f.entity, f.rule, f.message) for f in evaluate(rules, every[every["kind"].isin(reads)], ctx)]
        assert got == want, reads
        fired |= {rule for _, rule, _ in want}
    assert {"p2p-data-corruption", "collective-wrong-results", "host-unreachable"} <= fired, fired  # p2p, collective, facts
