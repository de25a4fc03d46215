"""Renderers: HTML (with inline SVG), JSON, JUnit and Prometheus from one results envelope."""

from __future__ import annotations

import json
import math
import random
import re
import xml.etree.ElementTree as ET
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest

from sncheck.errors import ConfigError
from sncheck.model import Verdict
from sncheck.report.firstscreen import WORD
from sncheck.report import RENDERERS, default_filename, get_renderer
from sncheck.report.html import render_html, write_html
from sncheck.store.results import dumps_results, from_json, write_json
from sncheck.report.junit import render_junit
from sncheck.report.prometheus import escape_label_value, render_prometheus
from sncheck.report.svg import Cell, Series, heatmap, line_chart
from sncheck.report.svg import block_heatmap as heatmap_block
from sncheck.rows import busbw_GBps, host_fact_row, not_run_row, p2p_row
from sncheck.topology import link_id

EVIL = "<script>alert(1)</script>"
SLOW_CARD = "node002/gpu1"
DEAD_LINK = ("node003/gpu0", "node004/gpu3")
SIZES = [1 << k for k in range(10, 30, 2)]           # 10 sizes, 1K .. 256M


def cards_of(host: str, n: int = 4) -> list[str]:
    return [f"{host}/gpu{i}" for i in range(n)]


def p2p_matrix(supernodes: dict[str, list[str]], cards_per_host: int = 4, *,
               slow: str | None = None, dead: tuple[str, str] | None = None,
               seed: int = 1) -> list[dict]:
    """Every card pair inside each supernode, plus rail-0 pairs across supernodes."""
    rnd = random.Random(seed)
    rows = []
    for hosts in supernodes.values():
        cards = [c for h in hosts for c in cards_of(h, cards_per_host)]
        for r, (a, b) in enumerate(combinations(cards, 2)):
            tier = "intra_host" if a.rsplit("/", 1)[0] == b.rsplit("/", 1)[0] else "scale_up"
            if dead and {a, b} == set(dead):
                rows.append(p2p_row(r, a, b, link_id(a, b), tier, 64 << 20, status="error",
                                    error="connection reset"))
                continue
            factor = 0.6 if slow in (a, b) else 1.0
            bw = 380 * factor * rnd.gauss(1, 0.02)
            # cards come in natural order, so "a<->b" is already the link id
            rows.append(p2p_row(r, a, b, f"{a}<->{b}", tier, 64 << 20, bw=bw,
                                bw_rev=bw * rnd.gauss(1, 0.01),
                                lat=3.0 / factor * rnd.gauss(1, 0.02)))
    firsts = [hosts[0] for hosts in supernodes.values()]
    for a_host, b_host in combinations(firsts, 2):
        a, b = f"{a_host}/gpu0", f"{b_host}/gpu0"
        rows.append(p2p_row(99, a, b, link_id(a, b), "scale_out", 64 << 20, bw=48.0, lat=14.0))
    return rows


def collective_rows() -> list[dict]:
    groups = [("host:node001", "host", 4, 1.0), ("host:node002", "host", 4, 0.6),
              ("rail:sn0:gpu0", "rail", 2, 1.0), ("rail:sn0:gpu1", "rail", 2, 0.6)]
    rows = []
    for group, kind, ranks, factor in groups:
        for size in SIZES:
            for repeat in range(2):
                time_us = 10 + size / (300e9 * factor) * 1e6
                rows.append({"kind": "collective", "layer": "stress", "group": group,
                             "group_kind": kind, "ranks": ranks, "collective": "all_reduce",
                             "size_bytes": size, "count": size // 4, "dtype": "float",
                             "repeat": repeat, "time_us": time_us,
                             "algbw_GBps": size / time_us / 1e3,
                             "busbw_GBps": busbw_GBps("all_reduce", size, time_us, ranks),
                             "wrong": 0, "status": "ok"})
    return rows


def reference_loss(steps: int = 20) -> list[float]:
    return [1.0 + 4.0 * math.exp(-s / 6) for s in range(steps)]


def golden_rows() -> list[dict]:
    rows = []
    for group, diverge in (("host:node001", False), ("host:node002", True)):
        for step, ref in enumerate(reference_loss()):
            loss = ref * (1.0 + (0.05 * step if diverge and step > 10 else 0.005))
            rows.append({"kind": "golden", "layer": "golden", "group": group, "stage": "group",
                         "step": step, "loss": loss, "step_time_s": 0.12, "comm_s": 0.03,
                         "comm_share": 0.25})
    return rows


def fact_rows() -> list[dict]:
    rows = [host_fact_row(h, "gpu_count", 4, 4, True, tool="nvidia-smi")
            for h in ("node001", "node002", "node003", "node004")]
    rows.append(host_fact_row("node003", "nvlink_links_up", 16, 18, False, tool="nvidia-smi",
                              message="2 NVLink links down on gpu1"))
    return rows


def make_results(**overrides) -> dict:
    results = {
        "schema": "sncheck.run/1", "run_id": "20261129T103000Z-ab12",
        "playbook": "pre-upgrade-gate", "backend": "mock", "inventory": "demo-2sn",
        "started": "2026-11-29T10:30:00Z", "finished": "2026-11-29T10:41:00Z",
        "verdict": "fail", "gate": "critical", "seed": 7,
        "design": {"intra_host": {"bandwidth_GBps": 450.0, "latency_us": 3.0},
                   "scale_up": {"bandwidth_GBps": 450.0, "latency_us": 3.0},
                   "scale_out": {"bandwidth_GBps": 50.0}},
        "topology": {"supernodes": [{"name": "sn0", "hosts": ["node001", "node002"]},
                                    {"name": "sn1", "hosts": ["node003", "node004"]}]},
        "layers": [
            {"name": "connectivity", "verdict": "fail", "summary": {"pairs": 56, "rounds": 7,
                                                                     "hosts": 4}},
            {"name": "stress", "verdict": "fail",
             "summary": {"groups": 4, "sizes": SIZES, "cut_short": "interrupted by operator"}},
            {"name": "golden", "verdict": "fail",
             "summary": {"reference": {"name": "tiny-gpt-ref", "loss": reference_loss(),
                                       "band": {"step_rel": 0.05, "final_rel": 0.02}}}},
            {"name": "soak", "verdict": "skipped", "summary": {}},
        ],
        "findings": [
            {"entity": SLOW_CARD, "entity_kind": "card", "layer": "connectivity",
             "rule": "p2p-bandwidth-below-design", "severity": "critical",
             "message": "all links of node002/gpu1 at 60% of design",
             "evidence": {"measured": 228.1, "expected": 450.0, "unit": "GB/s", "tier": "scale_up"}},
            {"entity": link_id(*DEAD_LINK), "entity_kind": "link", "layer": "connectivity",
             "rule": "p2p-failed", "severity": "critical", "message": "connection reset",
             "evidence": {}},
            {"entity": "node002", "entity_kind": "host", "layer": "stress",
             "rule": "busbw-below-median", "severity": "warning",
             "message": "host group busbw at 0.6x the median",
             "evidence": {"measured": 0.6, "expected": 1.0, "unit": "ratio"}},
            {"entity": "host:node002", "entity_kind": "host", "layer": "golden",
             "rule": "loss-outside-band", "severity": "critical",
             "message": "loss left the band at step 11",
             "evidence": {"measured": 1.9, "expected": 1.3, "unit": "loss"}},
            {"entity": "node001", "entity_kind": "host", "layer": "connectivity",
             "rule": "info-note", "severity": "info", "message": "driver 550.54",
             "evidence": {}},
        ],
        "isolation": [
            {"entity": SLOW_CARD, "entity_kind": "card", "action": "isolate",
             "reason": "confirmed by retest", "applied": False},
            {"entity": "node005/gpu0", "entity_kind": "card", "action": "release",
             "reason": "retest passed", "applied": True},
        ],
    }
    results.update(overrides)
    return results


def make_rows() -> pd.DataFrame:
    sns = {"sn0": ["node001", "node002"], "sn1": ["node003", "node004"]}
    rows = (p2p_matrix(sns, slow=SLOW_CARD, dead=DEAD_LINK) + collective_rows() + golden_rows()
            + fact_rows()
            + [not_run_row("stress", "node004", "host", "unreachable", "ssh: no route to host")])
    return pd.DataFrame(rows)


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(from_json(make_results()), make_rows())


# ---- HTML ------------------------------------------------------------------------

def test_html_shows_header_and_layer_verdicts(page: str) -> None:
    assert "20261129T103000Z-ab12" in page and "pre-upgrade-gate" in page
    assert 'class="banner v-fail"' in page
    for layer, verdict in (("connectivity", "fail"), ("soak", "skipped")):
        assert re.search(rf"<td>{layer}</td>\s*<td><span class=\"verdict v-{verdict}\">", page)
    assert "cut short: interrupted by operator" in page
    assert "pairs: 56" in page


def test_html_lists_findings_and_isolation(page: str) -> None:
    findings = page.split('id="findings"')[1].split("</section>")[0]
    assert "5: 3 critical, 1 warning, 1 info" in findings
    assert "p2p-bandwidth-below-design" in findings and "228.1" in findings
    # Each finding's entity kind and the tier it was judged in (none said: a dash).
    assert "<th>kind</th>" in findings and "<th>tier</th>" in findings
    row = findings.split(f"<td>{SLOW_CARD}</td>")[1].split("</tr>")[0]
    assert "<td>card</td>" in row and "<td>scale_up</td>" in row
    dead = link_id(*DEAD_LINK).replace("<", "&lt;").replace(">", "&gt;")
    assert "<td>&mdash;</td>" in findings.split(f"<td>{dead}</td>")[1].split("</tr>")[0].split("<td>GB/s")[0]
    assert findings.index("critical") < findings.index("warning") < findings.index(">info<")
    isolation = page.split('id="isolation"')[1].split("</section>")[0]
    assert SLOW_CARD in isolation and "confirmed by retest" in isolation
    assert "release" in isolation and "<td>yes</td>" in isolation


def test_html_heatmaps_per_supernode(page: str) -> None:
    charts = page.split('id="connectivity-charts"')[1].split("</section>")[0]
    maps = [s for s in svgs(charts) if 'class="chart heatmap' in s]
    assert len(maps) == 4                          # 2 supernodes x (bandwidth, latency)
    assert "sn0: pair bandwidth" in maps[0] and "sn0: pair latency" in maps[1]
    sn0 = maps[0]
    assert sn0.count("<rect") >= 8 * 8             # 8 cards in sn0: card level
    # The slow card is the lowest cell, and named in the caption.
    worst = charts.split("Worst: ")[1].split(";")[0]
    assert "node002/gpu1" in worst
    # The dead link is drawn black in sn1 (both directions) and counted.
    assert maps[2].count('fill="#111111"') >= 2
    assert "2 failed directions" in charts
    # The scale-out pair is not inside any supernode map.
    assert "node001/gpu0 \u2192 node003/gpu0" not in charts


def test_html_collective_and_golden_charts(page: str) -> None:
    stress = page.split('id="stress-charts"')[1].split("</section>")[0]
    chart = svgs(stress)[0]
    assert chart.count("<polyline") == 2          # host and rail medians
    assert "host (median of 2 groups)" in chart and "rail (median of 2 groups)" in chart
    assert "design intra_host 450 GB/s" in chart  # host groups cross intra_host links
    assert ">1K<" in chart and ">256M<" in chart   # log2 axis labels
    golden = page.split('id="golden-charts"')[1].split("</section>")[0]
    assert len(svgs(golden)) == 2
    assert "<polygon" in golden                    # the tolerance band
    assert "reference tiny-gpt-ref" in golden
    node1, node2 = golden.split("host:node002: ")
    assert "inside the band" in node1.split("host:node001: ")[1]
    assert "steps outside the band" in node2


def test_html_golden_at_fleet_size_one_fleet_chart_then_the_worst_groups() -> None:
    # 300 replicas (one per host of a fleet): drawing each would be most of the page.
    groups = [f"host:h{i:04d}" for i in range(1, 301)]
    diverging = {"host:h0017": 0.08, "host:h0250": 0.03}      # per-step drift past step 10
    rows = []
    for group in groups:
        for step, ref in enumerate(reference_loss()):
            drift = diverging.get(group, 0.0) * max(0, step - 10)
            rows.append({"kind": "golden", "layer": "golden", "group": group, "stage": "group", "step": step,
                         "loss": ref * (1.0 + 0.003 + drift), "step_time_s": 0.1, "comm_share": 0.2})
    results = make_results(topology={"supernodes": [{"name": "sn0", "hosts": [g[5:] for g in groups]}]},
                           findings=[{"entity": "h0123", "entity_kind": "host", "layer": "golden",
                                      "rule": "golden-step-time-regression", "severity": "warning",
                                      "message": "slow", "evidence": {}}])
    golden = render_html(from_json(results), pd.DataFrame(rows)).split('id="golden-charts"')[1].split("</section>")[0]
    charts = svgs(golden)
    # The fleet chart, then the out-of-band groups worst first, then the one a finding names.
    assert len(charts) == 4
    assert "golden: 300 groups" in charts[0] and "median of 300 groups" in charts[0]
    assert "lowest group" in charts[0] and "highest group" in charts[0] and "<polygon" in charts[0]
    assert [c.split("<title>")[1].split("<")[0] for c in charts[1:]] == [
        "golden host:h0017", "golden host:h0250", "golden host:h0123"]
    assert "300 groups trained" in golden and "2 outside the band</span>: host:h0017, host:h0250." in golden
    assert "2 groups outside the band" in golden          # the fleet chart's caption


def test_html_facts_and_not_run(page: str) -> None:
    facts = page.split('id="host-facts"')[1].split("</section>")[0]
    assert "4 facts as expected; 1 not" in facts
    assert "nvlink_links_up" in facts and "2 NVLink links down" in facts
    not_run = page.split('id="not-run"')[1].split("</section>")[0]
    assert "unreachable" in not_run and "no route to host" in not_run


def test_html_is_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(//|[a-z]+:)""", page, flags=re.IGNORECASE)
    # Readable under a strict CSP (Jenkins' default): no <style>, no style=; the one <link> is
    # the stylesheet beside the page (Jenkins' style-src 'self' allows it).
    assert "<style" not in page
    assert re.findall(r"<link[^>]*>", page) == ['<link rel="stylesheet" href="report.css">']
    assert not re.search(r"\sstyle\s*=", page, flags=re.IGNORECASE)


def test_html_says_each_slow_stress_group_and_what_explained_or_judged_it() -> None:
    """reviews17 #1 addendum 3: a slow group was in results.json's stress summary alone; the
    report never said it, nor that the culprit which explained it was released by its retest."""
    results = make_results()
    results["layers"][1]["summary"].update(
        slow_groups={"cross:gpu0": 64 << 20, "host:node002": 1 << 20, "host:node003": 8, f"host:{EVIL}": 4096},
        explained={"cross:gpu0": {"entity": "node005/gpu0", "entity_kind": "card"},
                   "host:node003": {"entity": SLOW_CARD, "entity_kind": "card"}},
        again=["host:node003~node002/gpu1"])  # its rerun without the culprit's cards: not slow
    results["findings"][2]["evidence"]["groups"] = ["host:node002"]
    page = render_html(from_json(results), None)
    [line] = re.findall(r'<div class="slow-groups">(.*?)</div>', page)
    assert line == "; ".join([
        "slow groups: cross:gpu0 from 64M: explained by card node005/gpu0 (released by its retest: this "
        "group&#39;s slowness is left unexplained)",
        "host:node002 from 1M: judged, busbw-below-median on host node002 (warning)",
        f"host:node003 from 8: explained by card {SLOW_CARD} (confirmed by its retest), its rerun "
        "host:node003~node002/gpu1 not slow",
        "host:&lt;script&gt;alert(1)&lt;/script&gt; from 4K: no earlier culprit explains it, no group finding: narrowed to its "
        "cards&#39; pairs (the stress findings say what they showed)"])
    assert 'class="slow-groups"' not in render_html(from_json(make_results()), None)


def test_html_escapes_hostile_names_in_tables_and_svg() -> None:
    host = EVIL
    a, b = f"{host}/gpu0", f"{host}/gpu1"
    rows = pd.DataFrame([p2p_row(0, a, b, link_id(a, b), "intra_host", 1, bw=400.0, lat=3.0)])
    results = make_results(
        topology={"supernodes": [{"name": "sn<b>0</b>", "hosts": [host]}]},
        findings=[{"entity": a, "entity_kind": "card", "layer": "connectivity",
                   "rule": "r", "severity": "critical", "message": f"bad {EVIL}",
                   "evidence": {}}],
        isolation=[{"entity": a, "entity_kind": "card", "action": "quarantine",
                    "reason": EVIL, "applied": False}])
    page = render_html(from_json(results), rows)
    assert "<script" not in page
    assert "<b>0</b>" not in page
    table = page.split('id="findings"')[1].split("</section>")[0]
    assert "bad &lt;script&gt;alert(1)&lt;/script&gt;" in table
    maps = [s for s in svgs(page) if 'class="chart heatmap' in s]
    assert maps and all("<script" not in s for s in maps)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;/gpu0</text>" in maps[0]


def test_html_large_domain_aggregates_to_hosts(tmp_path) -> None:
    hosts = [f"node{i:03d}" for i in range(1, 49)]     # 48 hosts x 8 cards = 384 cards
    rows = pd.DataFrame(p2p_matrix({"sn0": hosts}, cards_per_host=8, slow="node007/gpu3"))
    results = make_results(topology={"supernodes": [{"name": "sn0", "hosts": hosts}]})
    out = tmp_path / "report.html"
    write_html(out, from_json(results), rows)
    page = out.read_text(encoding="utf-8")
    assert len(page.encode()) < 2_000_000
    charts = page.split('id="connectivity-charts"')[1].split("</section>")[0]
    assert "384 cards, drawn host &times; host (48 &times; 48" in charts
    bw_map = next(s for s in svgs(charts) if "sn0: pair bandwidth" in s)
    assert bw_map.count("<rect") < 48 * 48 + 20
    assert ">node007</text>" in bw_map and "node007/gpu3</text>" not in bw_map
    assert "node007/gpu3" in charts                 # named among the worst cells


def test_html_repeated_directions_are_the_median_of_their_rounds() -> None:
    # A pair measured in three rounds (a retest) shows the median of its rounds; a pair
    # that failed in one of two rounds is outlined (partly failed), not black.
    sns = {"sn0": ["node001", "node002"]}
    rows = p2p_matrix(sns)
    slow, flaky = ("node001/gpu0", "node002/gpu3"), ("node001/gpu1", "node002/gpu2")
    rows = [r for r in rows if (r["src"], r["dst"]) != slow]
    for r, bw in enumerate((100.0, 300.0, 200.0)):
        rows.append(p2p_row(10 + r, *slow, link_id(*slow), "scale_up", 64 << 20, bw=bw, bw_rev=bw, lat=3.0))
    rows.append(p2p_row(20, *flaky, link_id(*flaky), "scale_up", 64 << 20, status="error", error="reset"))
    results = make_results(topology={"supernodes": [{"name": "sn0", "hosts": sns["sn0"]}]}, findings=[])
    charts = render_html(from_json(results), pd.DataFrame(rows)).split('id="connectivity-charts"')[1].split("</section>")[0]
    worst = charts.split("Worst: ")[1].split(".</")[0]
    assert worst.startswith("node001/gpu0 \u2192 node002/gpu3: 200 GB/s (44%)")
    bw_map = next(s for s in svgs(charts) if "sn0: pair bandwidth" in s)
    assert "failed directions" not in charts.split("sn0, bandwidth")[1].split("</figcaption>")[0]
    assert "some probes failed" in bw_map


def test_html_fleet_overview_first_one_tile_per_supernode(page: str) -> None:
    overview = page.index('id="fleet-overview"')
    assert overview < page.index('id="findings"') < page.index('id="connectivity-charts"')
    section = page[overview:page.index("</section>", overview)]
    tiles = svgs(section)[0]
    # Two supernodes, both with critical findings: each tile says so in text (a ✕), not
    # by colour alone, with a thick outline; the page links each to its heatmap.
    assert tiles.count("<g><title>sn") == 2 and section.count('<a href="#heatmap-') >= 2
    # sn0: the slow card and host:node002's golden loss; sn1: the dead link.
    assert "\u2715 2 findings" in tiles and "\u2715 1 finding<" in tiles
    assert tiles.count('stroke-width="3"') == 2 and "fill=" in tiles
    for anchor in re.findall(r'href="#([^"]+)"', section):
        assert f'id="{anchor}"' in page


def test_html_worst_pairs_table(page: str) -> None:
    table = page.split('id="worst-pairs"')[1].split("</section>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], flags=re.DOTALL)
    assert 0 < len(rows) <= 20
    first = rows[0]
    assert "failed" in first and set(DEAD_LINK) <= set(re.findall(r"node\d+/gpu\d", first))
    assert any(SLOW_CARD in r for r in rows)


def test_html_fleet_domain_with_findings_gets_a_card_closeup(tmp_path) -> None:
    hosts = [f"node{i:03d}" for i in range(1, 49)]     # 48 hosts x 8 cards = 384 cards
    rows = pd.DataFrame(p2p_matrix({"sn0": hosts}, cards_per_host=8, slow="node007/gpu3"))
    finding = {"entity": "node007/gpu3", "entity_kind": "card", "layer": "connectivity",
               "rule": "p2p-bandwidth-below-design", "severity": "critical", "message": "slow"}
    results = make_results(topology={"supernodes": [{"name": "sn0", "hosts": hosts}]}, findings=[finding])
    page = render_html(from_json(results), rows)
    charts = page.split('id="connectivity-charts"')[1].split("</section>")[0]
    maps = svgs(charts)
    closeup = next(s for s in maps if "sn0: pair bandwidth (GB/s), close-up" in s)
    assert ">node007/gpu3</text>" in closeup and ">node016/gpu0</text>" not in closeup
    assert closeup.count("<path") >= 2 and closeup.count("<rect") < 20  # compact, card level
    host_map = next(s for s in maps if "sn0: pair bandwidth (GB/s)</title>" in s)
    assert "<path" in host_map and host_map.count("<rect") < 20  # compact: a path per colour


def test_svg_block_heatmap_merges_runs_and_marks_failures() -> None:
    nan = float("nan")
    score = [[nan, 1.0, 1.0, 1.0], [1.0, nan, 1.0, 0.5], [1.0, 1.0, nan, 1.0], [1.0, 1.0, 1.0, nan]]
    failed = [[False] * 4, [False] * 4, [False, True, False, False], [False] * 4]
    out = heatmap_block(["h<1>", "h2", "h3", "h4"], score, title="t", failed=failed)
    assert "h&lt;1&gt;" in out and "<rect" in out  # (the legend's swatches)
    green = re.search(r'<path fill="#1a9850" d="([^"]*)"', out).group(1)
    assert green.count("M") < 12                       # runs merged: fewer shapes than cells
    assert 'stroke="#fff"' in out and "\u2715 failed" in out


def test_template_override_replaces_builtin_partial(tmp_path) -> None:
    (tmp_path / "_summary.html").write_text(
        "<p id=custom>CUSTOM {{ run.run_id }} {{ run.verdict }}</p>")
    page = render_html(from_json(make_results(run_id="r<1>")), pd.DataFrame(), template_dirs=[tmp_path])
    assert "<p id=custom>CUSTOM r&lt;1&gt; fail</p>" in page
    assert 'id="layers"' not in page                # the built-in summary is gone
    assert 'id="findings"' in page                  # the other partials are still built in


def test_html_writes_its_stylesheet_beside_it_and_a_template_dir_may_replace_it(tmp_path) -> None:
    write_html(tmp_path / "a" / "night.html", from_json(make_results()), make_rows())
    page = (tmp_path / "a" / "night.html").read_text()
    assert '<link rel="stylesheet" href="report.css">' in page and "<style" not in page
    assert "prefers-color-scheme: dark" in (tmp_path / "a" / "report.css").read_text()
    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / "report.css").write_text("body { font-family: serif; }\n")
    write_html(tmp_path / "b" / "report.html", from_json(make_results()), make_rows(), [mine])
    assert (tmp_path / "b" / "report.css").read_text() == "body { font-family: serif; }\n"


def test_template_dir_that_does_not_exist_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        render_html(from_json(make_results()), pd.DataFrame(), template_dirs=[tmp_path / "nope"])


@pytest.mark.parametrize("rows", [pd.DataFrame(), None, pd.DataFrame({"kind": ["p2p"]})])
def test_html_renders_without_rows(rows) -> None:
    page = render_html(from_json(make_results()), rows)
    assert "No point-to-point measurements." in page
    assert "No collective measurements." in page
    assert "0 facts as expected" in page


def test_html_renders_minimal_envelope_without_design_or_topology() -> None:
    rows = make_rows()
    page = render_html(from_json({"verdict": "pass", "run_id": "x", "layers": [{"name": "connectivity"}]}), rows)
    assert 'class="banner v-pass"' in page
    charts = page.split('id="connectivity-charts"')[1].split("</section>")[0]
    assert "all: pair bandwidth" in charts
    assert "Reference: intra_host median" in charts   # no design: relative to the median
    assert "scale_up design" not in charts
    assert "scale_out" not in charts                  # cross-supernode pairs stay out


# ---- SVG helpers ---------------------------------------------------------------------

def test_svg_heatmap_marks_missing_failed_and_partial() -> None:
    cells = {(0, 1): Cell(400.0, 0.9), (1, 0): Cell(None, None, failed=True),
             (0, 2): Cell(300.0, 0.6, partial=True)}
    out = heatmap(["a", "b", "c"], cells, title="t<x>", unit="GB/s")
    assert "t&lt;x&gt;" in out and "t<x>" not in out
    assert 'fill="#111111"' in out and 'fill="#d9d9d9"' in out and 'stroke="#000"' in out
    assert "a \u2192 b: 400 GB/s (90%)" in out


def test_svg_line_chart_log2_axis_and_escaping() -> None:
    out = line_chart([Series("<i>", [8, 1024, 1 << 20], [1.0, 10.0, 100.0])], title="T",
                     xlabel="size", ylabel="GB/s", logx=True)
    assert ">16<" in out and ">1M<" in out and "&lt;i&gt;" in out and "<i>" not in out
    assert line_chart([], title="T", xlabel="x", ylabel="y") == ""


# ---- JSON ----------------------------------------------------------------------------

def test_write_json_is_stable_atomic_and_plain(tmp_path) -> None:
    results = make_results(extra={"b": 1, "a": float("nan")})
    path = tmp_path / "run" / "results.json"
    write_json(path, results)
    text = path.read_text()
    assert text == dumps_results(results)
    assert list(json.loads(text))[:3] == ["schema", "run_id", "playbook"]
    assert json.loads(text)["extra"] == {"b": 1, "a": None}
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]   # no temp file left


# ---- JUnit ---------------------------------------------------------------------------

def junit_cases(text: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(text)
    return {(suite.get("name"), case.get("name")): case
            for suite in root.iter("testsuite") for case in suite.iter("testcase")}


def test_junit_one_suite_per_family_one_case_per_host() -> None:
    text = render_junit(from_json(make_results()))
    root = ET.fromstring(text)
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"sncheck.connectivity", "sncheck.stress", "sncheck.golden",
                           "sncheck.soak"}
    hosts = ["node001", "node002", "node003", "node004"]
    for name in ("sncheck.connectivity", "sncheck.golden", "sncheck.soak"):
        assert [c.get("name") for c in suites[name].iter("testcase")] == hosts
    cases = junit_cases(text)
    conn = "sncheck.connectivity"
    assert cases[(conn, "node001")].find("failure") is None             # an info note only
    assert "driver 550.54" in cases[(conn, "node001")].find("system-out").text
    assert cases[(conn, "node002")].find("failure").get("type") == "critical"   # its slow card
    for host in ("node003", "node004"):                                # both ends of the dead link
        assert "connection reset" in cases[(conn, host)].find("failure").get("message")
    assert cases[(conn, "node002")].get("classname") == "sncheck.connectivity.sn0"
    assert cases[("sncheck.golden", "node002")].find("failure") is not None     # host:node002
    # stress: a warning below the critical gate passes the host, and the layer (its verdict
    # is the record's: nothing of it gates, whatever a document said).
    assert cases[("sncheck.stress", "node002")].find("failure") is None
    assert ("sncheck.stress", "layer") not in cases
    assert all(cases[("sncheck.soak", h)].find("skipped") is not None for h in hosts)
    assert int(root.get("failures")) == 3 + 1
    # A verdict that fails with no failing host still fails its suite (never greener than
    # the run): the safety cap refusing the isolations.
    blocked = junit_cases(render_junit(from_json(make_results(isolation_blocked="the cap"))))
    assert blocked[("sncheck.isolation", "layer")].find("failure") is not None
    assert sum(int(s.get("skipped")) for s in root.iter("testsuite")) == 4   # per suite only (the xunit XSD)
    warn = junit_cases(render_junit(from_json(make_results(gate="warning"))))
    assert warn[("sncheck.stress", "node002")].find("failure") is not None
    assert ("sncheck.stress", "layer") not in warn


def test_junit_names_are_stable_across_runs() -> None:
    a = render_junit(from_json(make_results()))
    b = render_junit(from_json(make_results(run_id="20261130T020000Z-ff99", seed=99, started="x")))
    hosts_only = lambda t: sorted(k for k in junit_cases(t) if k[1] != "layer")   # noqa: E731
    assert sorted(junit_cases(a)) == sorted(junit_cases(b))
    # Another night, other findings: the same testcase per host.
    c = render_junit(from_json(make_results(findings=make_results()["findings"][:1])))
    assert hosts_only(a) == hosts_only(c)
    root = ET.fromstring(b)
    assert root.get("name") == "sncheck"
    assert not any("20261130" in (e.get("name") or "") + (e.get("classname") or "") for e in root.iter())


def test_junit_error_for_hosts_that_could_not_run() -> None:
    findings = [{"entity": "node004", "entity_kind": "host", "layer": "connectivity",
                 "rule": "host-unreachable", "severity": "critical", "message": "ssh: no route"},
                {"entity": "node003", "entity_kind": "host", "layer": "stress",
                 "rule": "not-run-timeout", "severity": "critical", "message": "timed out"}]
    layers = [{"name": "connectivity", "verdict": "fail"}, {"name": "stress", "verdict": "fail"},
              {"name": "golden", "verdict": "error", "summary": {"cut_short": "no reference"}}]
    cases = junit_cases(render_junit(from_json(make_results(findings=findings, layers=layers))))
    assert cases[("sncheck.connectivity", "node004")].find("error") is not None
    assert cases[("sncheck.stress", "node004")].find("error") is not None   # unreachable: everywhere
    assert cases[("sncheck.stress", "node003")].find("error").get("message") == "node003: timed out"
    assert cases[("sncheck.connectivity", "node003")].find("error") is None
    assert cases[("sncheck.golden", "node001")].find("error").get("message") == "no reference"


def test_junit_passing_layer_and_hostile_text() -> None:
    results = make_results(verdict="pass",
                           layers=[{"name": "connectivity", "verdict": "pass", "summary": {}}],
                           findings=[{"entity": "node003", "entity_kind": "host", "layer": "connectivity",
                                      "rule": "r", "severity": "info", "message": f"{EVIL}\x1b[0m"}])
    text = render_junit(from_json(results))
    root = ET.fromstring(text)
    assert root.findall(".//failure") == [] and root.get("tests") == "4"   # the 4 hosts
    assert EVIL in root.find(".//system-out").text and "<script>" not in text


def test_junit_keeps_findings_of_unlisted_layers() -> None:
    results = make_results(layers=[], topology={}, findings=[
        {"entity": "a", "entity_kind": "host", "layer": "isolation", "rule": "r", "severity": "critical", "message": "m"},
        {"entity": "b", "entity_kind": "host", "layer": "isolation", "rule": "r", "severity": "info", "message": "m"}])
    root = ET.fromstring(render_junit(from_json(results)))
    assert [s.get("name") for s in root.iter("testsuite")] == ["sncheck.isolation"]
    assert root.get("tests") == "2" and root.get("failures") == "1"


# ---- Prometheus ---------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                    r'(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})?'
                    r' (-?[0-9.eE+-]+|NaN|[+-]Inf)$')


def prom_samples(text: str) -> dict[str, list[str]]:
    samples: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) sncheck_\w+ ", line), line
            continue
        m = SAMPLE.match(line)
        assert m, line
        samples.setdefault(m.group(1), []).append(line)
    return samples


def test_prometheus_lines_parse_and_series_are_per_card() -> None:
    samples = prom_samples(render_prometheus(from_json(make_results()), make_rows()))
    assert 'sncheck_run_verdict{verdict="fail"} 1' in samples["sncheck_run_verdict"]
    assert 'sncheck_findings{severity="critical"} 3' in samples["sncheck_findings"]
    assert ('sncheck_layer_verdict{layer="soak",verdict="skipped"} 1'
            in samples["sncheck_layer_verdict"])
    assert not any("link=" in line or "src=" in line for lines in samples.values() for line in lines)
    bw_min = samples["sncheck_card_p2p_bandwidth_min_bytes_per_second"]
    # 16 cards x (intra_host, scale_up), plus the two gpu0 cards of each supernode's first
    # host on scale_out: per card and tier, never per pair.
    assert len(bw_min) == 16 * 2 + 2
    slow = [line for line in bw_min if 'hostname="node002",gpu="1",' in line]
    assert slow and all('supernode="sn0"' in line for line in slow)
    value = lambda line: float(line.rsplit(" ", 1)[1])   # noqa: E731
    healthy = [value(x) for x in bw_min if 'tier="intra_host"' in x and 'hostname="node001"' in x]
    assert all(value(x) < 0.7 * min(healthy) for x in slow)    # the slow card's pairs at 0.6x
    failed = samples["sncheck_card_p2p_failed_pairs"]
    assert 'sncheck_card_p2p_failed_pairs{hostname="node004",gpu="3",supernode="sn1"} 1' in failed
    assert len(failed) == 16
    busbw = samples["sncheck_busbw_bytes_per_second"]
    assert len(busbw) == 4 and all(f'size_bytes="{SIZES[-1]}"' in s for s in busbw)


def test_prometheus_units_uuid_and_isolated_cards() -> None:
    """busbw in bytes/s, the UUID label where the hosts' facts list it (and no empty
    UUID where they do not), and the quarantined cards with their card labels."""
    uuid = "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    rows = pd.DataFrame(make_rows().to_dict("records") + [
        host_fact_row("node002", "gpu_uuid", json.dumps({"1": uuid}), None, True, tool="nvidia-smi")])
    results = make_results(isolation=[
        {"entity": SLOW_CARD, "entity_kind": "card", "action": "quarantine", "reason": "r", "applied": False},
        {"entity": "node004/nic3", "entity_kind": "nic", "action": "isolate", "reason": "r", "applied": True}])
    samples = prom_samples(render_prometheus(from_json(results), rows))
    group = pd.DataFrame(collective_rows())
    group = group[(group["group"] == "host:node001") & (group["size_bytes"] == SIZES[-1])]
    busbw = next(x for x in samples["sncheck_busbw_bytes_per_second"] if 'group="host:node001"' in x)
    assert float(busbw.rsplit(" ", 1)[1]) == pytest.approx(group["busbw_GBps"].median() * 1e9)
    slow = [x for name in samples if name.startswith("sncheck_card_") for x in samples[name]
            if 'hostname="node002",gpu="1",' in x]
    assert slow and all(f'UUID="{uuid}"' in x for x in slow)
    others = [x for x in samples["sncheck_card_p2p_bandwidth_min_bytes_per_second"] if 'gpu="1",' not in x]
    assert others and not any("UUID" in x for x in others)
    assert samples["sncheck_isolation_applied"] == [
        f'sncheck_isolation_applied{{entity="{SLOW_CARD}",entity_kind="card",action="quarantine",'
        f'hostname="node002",gpu="1",UUID="{uuid}",supernode="sn0"}} 0',
        'sncheck_isolation_applied{entity="node004/nic3",entity_kind="nic",action="isolate",'
        'hostname="node004",gpu="3",supernode="sn1"} 1']
    assert 'sncheck_design_p2p_bandwidth_bytes_per_second{tier="scale_up"} 450000000000' in \
        samples["sncheck_design_p2p_bandwidth_bytes_per_second"]
    assert len(samples["sncheck_card_info"]) == 16


def test_prometheus_skew_and_p99_per_card() -> None:
    rows = pd.DataFrame([
        {"kind": "rank", "group": "host:node001", "card": "node001/gpu0", "skew_us": 2.0},
        {"kind": "rank", "group": "host:node001", "card": "node001/gpu0", "skew_us": 4.0},
        {"kind": "rank", "group": "pair:node001/gpu0<->node002/gpu0", "card": "node001/gpu0",
         "skew_us": 900.0},
        {**p2p_row(0, "node001/gpu0", "node001/gpu1", "node001/gpu0<->node001/gpu1", "intra_host",
                   1 << 20, bw=400.0, lat=3.0), "lat_p99_us": 9.0}])
    samples = prom_samples(render_prometheus(from_json(make_results()), rows))
    assert samples["sncheck_card_launch_skew_seconds"] == [
        'sncheck_card_launch_skew_seconds{hostname="node001",gpu="0",supernode="sn0"} 3e-06']
    assert samples["sncheck_host_p2p_latency_p99_seconds"] == [   # (per host: the p99 of its cards' pairs)
        'sncheck_host_p2p_latency_p99_seconds{hostname="node001",supernode="sn0",tier="intra_host"} 9e-06']


def test_prometheus_typical_figures_per_host_the_alerts_per_card() -> None:
    """sncheck.prom bounded (issue 31: 12 series a card, 250 MB at 131,072 cards): per card
    what an alert is written on (its worst pair per tier, its failed pairs, its skew), per
    host and tier the median over its cards of each card's median bandwidth and p99; a
    card with nothing measured in a tier is left out of its host's median there."""
    def pair(a: str, b: str, bw: float, p99: float, status: str = "ok") -> dict:
        tier = "intra_host" if a.split("/")[0] == b.split("/")[0] else "scale_up"
        row = p2p_row(0, a, b, f"{a}<->{b}", tier, 1 << 20, bw=bw, lat=3.0)
        return {**row, "bw_rev_GBps": bw, "lat_p99_us": p99, "status": status}

    rows = pd.DataFrame([pair("node001/gpu0", "node001/gpu1", 100.0, 10.0),
                         pair("node001/gpu0", "node001/gpu2", 300.0, 30.0),
                         pair("node001/gpu1", "node001/gpu2", 200.0, 20.0),
                         pair("node001/gpu0", "node002/gpu0", 400.0, 40.0),
                         pair("node001/gpu3", "node002/gpu1", 0.0, 0.0, status="timeout")])
    samples = prom_samples(render_prometheus(from_json(make_results()), rows))
    # cards' medians in intra_host: gpu0 (100, 300) 200, gpu1 (100, 200) 150, gpu2 (300, 200) 250
    assert samples["sncheck_host_p2p_bandwidth_median_bytes_per_second"] == [
        'sncheck_host_p2p_bandwidth_median_bytes_per_second{hostname="node001",supernode="sn0",'
        'tier="intra_host"} 200000000000',
        'sncheck_host_p2p_bandwidth_median_bytes_per_second{hostname="node001",supernode="sn0",'
        'tier="scale_up"} 400000000000',   # (gpu3's one pair failed: no median of its own)
        'sncheck_host_p2p_bandwidth_median_bytes_per_second{hostname="node002",supernode="sn0",'
        'tier="scale_up"} 400000000000']
    assert 'sncheck_host_p2p_latency_p99_seconds{hostname="node001",supernode="sn0",tier="intra_host"} 2e-05' \
        in samples["sncheck_host_p2p_latency_p99_seconds"]
    assert not any(name.startswith("sncheck_card_p2p_") and "median" in name for name in samples)
    per_card = [name for name in samples if name.startswith("sncheck_card_")]
    assert sorted(per_card) == ["sncheck_card_info", "sncheck_card_p2p_bandwidth_min_bytes_per_second",
                                "sncheck_card_p2p_failed_pairs", "sncheck_card_p2p_latency_p99_max_seconds"]
    # per card and tier its worst pair's p99 (review #5), the worst bandwidth's labels; gpu3's one pair
    # failed: no value of its own (and node002/gpu1's)
    assert samples["sncheck_card_p2p_latency_p99_max_seconds"] == [
        f'sncheck_card_p2p_latency_p99_max_seconds{{hostname="{h}",gpu="{g}",supernode="sn0",tier="{t}"}} {v}'
        for h, g, t, v in (("node001", 0, "intra_host", "3e-05"), ("node001", 0, "scale_up", "4e-05"),
                           ("node001", 1, "intra_host", "2e-05"), ("node001", 2, "intra_host", "3e-05"),
                           ("node002", 0, "scale_up", "4e-05"))]
    assert [line.split(" ")[0] for line in samples["sncheck_card_p2p_latency_p99_max_seconds"]] == [
        line.split(" ")[0].replace("bandwidth_min_bytes_per_second", "latency_p99_max_seconds")
        for line in samples["sncheck_card_p2p_bandwidth_min_bytes_per_second"]]
    assert 'sncheck_card_p2p_failed_pairs{hostname="node001",gpu="3",supernode="sn0"} 1' \
        in samples["sncheck_card_p2p_failed_pairs"]


def test_prometheus_card_worst_p99_is_over_pairs_each_the_median_of_its_rounds() -> None:
    """The worst pair's p99 of a card (review #5): each pair's p99 is the median over its
    rounds (a failed round counts as none), the card's the highest over its pairs in the
    tier, at either end: one spike in one round of three moves nothing."""
    def pair(a: str, b: str, p99: float, status: str = "ok") -> dict:
        return {**p2p_row(0, a, b, f"{a}<->{b}", "intra_host", 1 << 20, bw=100.0, lat=3.0),
                "lat_p99_us": p99, "status": status}

    rows = pd.DataFrame([pair("node001/gpu0", "node001/gpu1", 10.0), pair("node001/gpu0", "node001/gpu1", 900.0),
                         pair("node001/gpu0", "node001/gpu1", 12.0),            # median of its rounds: 12
                         pair("node001/gpu2", "node001/gpu0", 11.0),
                         pair("node001/gpu2", "node001/gpu0", 5000.0, status="timeout")])   # a failed round: none
    samples = prom_samples(render_prometheus(from_json(make_results()), rows))
    assert samples["sncheck_card_p2p_latency_p99_max_seconds"] == [
        f'sncheck_card_p2p_latency_p99_max_seconds{{hostname="node001",gpu="{g}",supernode="sn0",'
        f'tier="intra_host"}} {v}' for g, v in ((0, "1.2e-05"), (1, "1.2e-05"), (2, "1.1e-05"))]


def test_prometheus_written_atomically_as_prom_only(tmp_path, monkeypatch) -> None:
    """The textfile collector reads *.prom: the temporary file must not match it."""
    import sncheck.config.fileio as fileio
    seen = []
    real_replace = fileio.os.replace

    def spy(src, dst):
        seen.append((str(src), str(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", spy)
    path = tmp_path / "sncheck.prom"
    get_renderer("prometheus")(from_json(make_results()), make_rows(), path)
    (tmp_src, dst), = seen
    assert dst == str(path) and not tmp_src.endswith(".prom") and tmp_src.startswith(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["sncheck.prom"]
    prom_samples(path.read_text())


def test_prometheus_file_written_in_pieces_whole_and_atomic(tmp_path, monkeypatch) -> None:
    """The file is written a piece at a time (never the whole text in memory: ~250 MB at
    131,072 cards), is byte for byte the text rendered whole, and a failure half-way leaves
    the old file as it was, with no temporary file beside it."""
    import sncheck.report.prometheus as prom
    monkeypatch.setattr(prom, "PIECE_LINES", 5)   # the 16 cards' families in several pieces
    pieces: list[str] = []
    prom.expose(from_json(make_results()), make_rows(), pieces.append)
    whole = render_prometheus(from_json(make_results()), make_rows())
    assert "".join(pieces) == whole and all(p.endswith("\n") for p in pieces)
    per_card = [p for p in pieces if p.startswith("sncheck_card_")]   # samples, not heads
    assert len(per_card) > 10 and max(p.count("\n") for p in per_card) == 5   # 16 cards: 4 pieces a family
    path = tmp_path / "sncheck.prom"
    get_renderer("prometheus")(from_json(make_results()), make_rows(), path)
    assert path.read_text() == whole
    old = path.read_bytes()
    written: list[str] = []

    def fail_late(record, rows, put) -> None:
        for p in pieces[:-3]:
            put(p)
            written.append(p)
        raise RuntimeError("cut half-way")

    monkeypatch.setattr(prom, "expose", fail_late)
    with pytest.raises(RuntimeError, match="half-way"):
        get_renderer("prometheus")(from_json(make_results()), make_rows(), path)
    assert len(written) > 10 and path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["sncheck.prom"]


def test_prometheus_busbw_names_no_missing_collective_or_group() -> None:
    """A collective row without a collective (a kind whose rows lack the column, or one
    row's value missing) or without a group names no series: never collective="nan"."""
    rows = pd.DataFrame(collective_rows())
    lacking = rows.drop(columns="collective")
    text = render_prometheus(from_json(make_results(layers=[])), lacking)
    assert "sncheck_busbw_bytes_per_second{" not in text
    some = rows.astype({"collective": object, "group": object})
    some.loc[some["group"].eq("host:node002"), "collective"] = None
    some.loc[some["group"].eq("rail:sn0:gpu0"), "group"] = math.nan
    samples = prom_samples(render_prometheus(from_json(make_results(layers=[])), some))["sncheck_busbw_bytes_per_second"]
    assert [x.split("{")[1].split(",")[0] for x in samples] == ['group="host:node001"', 'group="rail:sn0:gpu1"']
    assert all('collective="all_reduce"' in x for x in samples)


def test_prometheus_label_escaping() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    rows = pd.DataFrame(collective_rows()).assign(group='we"ird\\grp\n')
    text = render_prometheus(from_json(make_results(layers=[])), rows)
    line = next(x for x in text.splitlines() if x.startswith("sncheck_busbw_bytes_per_second{"))
    assert SAMPLE.match(line) and 'group="we\\"ird\\\\grp\\n"' in line


# ---- registry ------------------------------------------------------------------------

def test_registry_writes_every_format(tmp_path) -> None:
    results, rows = make_results(), make_rows()
    for name in RENDERERS:
        path = tmp_path / default_filename(name)
        get_renderer(name)(from_json(results), rows, path)
        assert path.stat().st_size > 0
    assert json.loads((tmp_path / "results.json").read_text())["verdict"] == "fail"
    ET.parse(tmp_path / "junit.xml")


def test_get_renderer_unknown_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match="html, json, junit, prometheus"):
        get_renderer("pdf")


def test_the_stylesheet_colours_every_verdict_word():
    """Each verdict word a run, a layer or the first screen can carry has its own colour in
    report.css (an uncoloured one read as plain text: 'inconclusive' had none)."""
    css = (Path(__file__).resolve().parents[1] / "reports/templates/report.css").read_text()
    for v in Verdict:
        assert re.search(rf"\.verdict\.v-{v.value}\b", css), v
    for v in WORD:
        assert re.search(rf"\.state-{v.value}\b", css) or v == Verdict.PASS and ".state-pass" in css, v
        assert re.search(rf"header\.banner\.v-{v.value}\b", css), v
    assert "degraded" not in css  # no fourth verdict of the report's own


def test_a_new_report_format_is_one_module_and_one_line(tmp_path, monkeypatch) -> None:
    """Issue 19's extension count: a module with write() reading only the record's flags,
    and its line in FORMATS; a run then writes it beside the others."""
    from click.testing import CliRunner

    from sncheck import report
    from sncheck.cli.main import main

    (tmp_path / "sncheck_test_csv_out.py").write_text(
        "def write(record, rows, path, template_dirs=()):\n"
        "    lines = ['entity,gates'] + [f\"{f.entity},{record.gates(f)}\" for f in record.findings]\n"
        "    open(path, 'w').write('\\n'.join(lines) + '\\n')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(report.FORMATS, "csv", ("sncheck_test_csv_out", "findings.csv"))
    (tmp_path / "f.yaml").write_text("faults:\n  - {type: corrupt_card, target: node003/gpu2}\n")
    demo = Path(__file__).resolve().parents[1] / "fixtures/inventories/demo-2sn.yaml"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(demo), "--faults", str(tmp_path / "f.yaml"),
                                  "--format", "json,csv",
                                  "--out", str(tmp_path / "run"), "-q"])
    assert r.exit_code == 1, r.output
    assert "node003/gpu2,True" in (tmp_path / "run" / "findings.csv").read_text()


def test_views_read_only_the_columns_they_ask_for() -> None:
    """The report and Prometheus ask the run's rows for the columns they read (the run
    store reads only those from its parts): given nothing else, each output is the one
    every column gives, and no big kind is asked for whole."""
    from sncheck.store.frames import RowFrames, frames_of

    sns = {"sn0": ["node001", "node002"], "sn1": ["node003", "node004"]}
    raw = (p2p_matrix(sns, slow=SLOW_CARD, dead=DEAD_LINK) + collective_rows() + golden_rows() + fact_rows()
           + [not_run_row("stress", "node004", "host", "unreachable", "ssh: no route to host")])
    for i, r in enumerate(raw):   # a reverse direction and a p99 unlike the rest: a view that lost them shows it
        if r["kind"] == "p2p" and r.get("bw_GBps") and i % 3 == 0:
            r["bw_rev_GBps"], r["lat_p99_us"] = r["bw_GBps"] * 0.5, 40.0 + i
    asked: list[tuple[str, object]] = []

    class Whole(RowFrames):   # every column, whatever is asked
        def kind(self, kind, columns=None):  # noqa: ANN001, ANN202, ARG002 -- the RowFrames call
            return super().kind(kind)

    class Asked(RowFrames):   # only the columns asked for, the asks recorded
        def kind(self, kind, columns=None):  # noqa: ANN001, ANN202 -- the RowFrames call
            asked.append((kind, columns))
            return super().kind(kind, columns)

    typed = frames_of(raw)
    whole, only = (cls({k: typed.kind(k) for k in typed.kinds}) for cls in (Whole, Asked))
    assert {"p2p", "collective", "golden"} <= set(whole.kinds)
    record = from_json(make_results())
    assert render_html(record, only) == render_html(record, whole)
    assert render_prometheus(record, only) == render_prometheus(record, whole)
    assert {k for k, cols in asked if cols is None} <= {"host_fact", "not_run"}, asked
    # and a column the rows lack comes back all missing, never a KeyError
    lacking = RowFrames({"p2p": whole.kind("p2p").drop(columns=["lat_us"])}).kind("p2p", ["src", "lat_us"])
    assert list(lacking.columns) == ["src", "lat_us"] and lacking["lat_us"].isna().all() and len(lacking)
