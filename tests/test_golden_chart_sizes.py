"""The report's golden chart draws each replica against its own replica size's reference band
(ops4's per-size references, 5699acc): it drew every replica against the largest size's
band, so on a mixed-SKU cluster a healthy 4-card host read 'outside the band' of the 8-rank
curve in the report while the verdict, judging it by the 4-rank curve, passed it."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.report.html import render_html
from sncheck.store.results import from_json

ROOT = Path(__file__).resolve().parents[1]
MIXED = ROOT / "tests" / "data" / "scenarios-r5" / "inv-mixed-sku.yaml"  # hosts of 8, 4 and 7 cards (mz2)


def golden_section(html: str) -> list[str]:
    """The golden section's charts (SVG), in order."""
    return re.findall(r"<svg\b.*?</svg>", html.split('id="golden-charts"')[1].split("</section>")[0], flags=re.DOTALL)


def title(chart: str) -> str:
    return chart.split("<title>")[1].split("<")[0]


def test_a_mixed_size_runs_report_draws_each_replica_against_its_sizes_band(tmp_path: Path) -> None:
    """The mock on the mixed inventory, the golden layer alone: the 8-card hosts' charts carry
    mock-8's band, the 4-card hosts' mock-demo's (4 ranks), and mz2 (7 cards, no 7-rank curve,
    'golden-not-judged' on the host) no band at all. Before: every chart read 'reference mock-8'."""
    (tmp_path / "pb.yaml").write_text("name: golden-only\nlayers:\n  - golden\ngate: critical\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(tmp_path / "pb.yaml"), "-i", str(MIXED), "--backend", "mock",
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output  # mz2 is not judged
    res = json.loads((out / "results.json").read_text())
    assert [f["entity"] for f in res["findings"]] == ["mz2"], res["findings"]
    charts = {title(c).removeprefix("golden host:"): c for c in golden_section((out / "report.html").read_text())}
    assert sorted(charts) == sorted(["mx1", "mx2", "mx3", "mx4", "my1", "my2", "my3", "my4", "mz1", "mz2", "mz3"])
    refs = {h: sorted(set(re.findall(r"reference ([\w-]+)", c))) for h, c in charts.items()}
    assert {h for h, names in refs.items() if names == ["mock-8"]} == {"mx1", "mx2", "mx3", "mx4", "mz1", "mz3"}, refs
    assert {h for h, names in refs.items() if names == ["mock-demo"]} == {"my1", "my2", "my3", "my4"}, refs
    assert refs["mz2"] == [] and "<polygon" not in charts["mz2"]
    assert all("<polygon" in c for h, c in charts.items() if h != "mz2")
    golden = next(layer for layer in res["layers"] if layer["name"] == "golden")["summary"]
    assert golden["replica_ranks"] == {"4": ["host:my1", "host:my2", "host:my3", "host:my4"], "7": ["host:mz2"],
                                       "8": ["host:mx1", "host:mx2", "host:mx3", "host:mx4", "host:mz1", "host:mz3"]}
    assert {r: c["name"] for r, c in golden["reference_curves"].items()} == {"4": "mock-demo", "8": "mock-8"}


def _loss(scale: float, steps: int = 20) -> list[float]:
    return [scale * (1.0 + 4.0 * math.exp(-s / 6)) for s in range(steps)]


def _fleet(replica_ranks: dict[str, list[str]] | None) -> str:
    """300 replicas, 200 of 8 ranks and 100 of 4, each training to its size's curve (the
    4-rank one 20% above the 8-rank one: far outside its 5% band); host:h0250 (8 ranks)
    drifts out of its band. The report, with and without the summary's per-size keys."""
    eight = [f"host:h{i:04d}" for i in range(1, 201)]
    four = [f"host:h{i:04d}" for i in range(201, 301)]
    rows = []
    for groups, scale in ((eight, 1.0), (four, 1.2)):
        for group in groups:
            for step, ref in enumerate(_loss(scale)):
                drift = 0.03 * max(0, step - 10) if group == "host:h0150" else 0.0
                rows.append({"kind": "golden", "layer": "golden", "group": group, "stage": "group", "step": step,
                             "loss": ref * (1.0 + 0.003 + drift), "step_time_s": 0.1, "comm_share": 0.2})
    band = {"step_rel": 0.05, "final_rel": 0.02}
    summary: dict = {"reference": {"name": "ref-8", "loss": _loss(1.0), "band": band}}
    if replica_ranks is not None:
        summary |= {"references": {"4": "ref-4", "8": "ref-8"}, "replica_ranks": replica_ranks,
                    "reference_curves": {"4": {"name": "ref-4", "loss": _loss(1.2), "band": band},
                                         "8": {"name": "ref-8", "loss": _loss(1.0), "band": band}}}
    results = {"schema": "sncheck.run/1", "run_id": "20261206T160000Z-ab12", "playbook": "g", "backend": "mock",
               "inventory": "mixed", "started": "t0", "finished": "t1", "verdict": "fail", "gate": "critical",
               "topology": {"supernodes": [{"name": "sn0", "hosts": [g[5:] for g in eight + four]}]},
               "layers": [{"name": "golden", "verdict": "fail", "summary": summary}], "findings": []}
    return render_html(from_json(results), pd.DataFrame(rows))


def test_at_fleet_size_one_fleet_chart_per_replica_size_each_against_its_band() -> None:
    eight = [f"host:h{i:04d}" for i in range(1, 201)]
    four = [f"host:h{i:04d}" for i in range(201, 301)]
    page = _fleet({"4": four, "8": eight})
    charts = golden_section(page)
    assert [title(c) for c in charts] == ["golden: 100 groups of 4 ranks", "golden: 200 groups of 8 ranks",
                                          "golden host:h0150"]
    assert "reference ref-4" in charts[0] and "reference ref-8" not in charts[0]
    assert "reference ref-8" in charts[1] and "reference ref-4" not in charts[1]
    assert "reference ref-8" in charts[2]
    # Only the drifting 8-rank replica is outside its band; the 4-rank replicas are on theirs.
    assert "1 outside the band</span>: host:h0150." in page
    # One size's replicas (no per-size keys): one fleet chart, as before.
    uniform = golden_section(_fleet(None))
    assert title(uniform[0]) == "golden: 300 groups"
    assert "101 outside the band" in _fleet(None)  # every 4-rank replica against the 8-rank band
