"""ibnetdiscover's header says how far discovery went ('# Max of N hops discovered',
fabric->maxhops_discovered in ibnetdiscover.c): N past 0 promises a node N hops away, so an output
cut after its first node's header is cut, not a lone switch (reviews13: harvest13's Sun DCS 36
capture cut right after the switch's header read one switch, no link, exit 0). A switch alone
(0 hops, a managed switch whose ports are all down) still reads whole."""

from __future__ import annotations

from pathlib import Path

from sncheck.vendors.infiniband.ibnetdiscover import parse_ibnetdiscover
from sncheck.vendors.parsers import strip_source_header

ROOT = Path(__file__).resolve().parent.parent


def _capture() -> str:
    [path] = (ROOT / "fixtures/real/harvest13/ibnetdiscover").glob("02_*")
    return strip_source_header(path.read_text(encoding="utf-8"))


def test_cut_after_the_first_nodes_header_is_cut() -> None:
    text = _capture()
    cut = text[:text.index("\n", text.index("Switch  36")) + 1]
    out = parse_ibnetdiscover(cut)
    assert "the header says 1 hop(s) discovered and one node is recorded: cut short" in out["errors"], out
    assert parse_ibnetdiscover(text)["errors"] == []


def test_a_lone_switch_of_no_hops_reads_whole() -> None:
    text = _capture()
    lone = text[:text.index("\n", text.index("Switch  36")) + 1].replace("Max of 1 hops", "Max of 0 hops")
    out = parse_ibnetdiscover(lone)
    assert out["errors"] == [] and len(out["nodes"]) == 1
