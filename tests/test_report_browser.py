"""The HTML report in a real browser: headless Chromium through the DevTools protocol.

Checks what a person and Jenkins will see: no network requests and no console errors,
the first screen at 1366x768, rendering under Jenkins' Content-Security-Policy (no inline
style), every anchor resolving, hostile host names rendered as text, and print to A4.
Skipped with a reason when Chromium is not installed (scripts/setup.sh installs it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest
from click.testing import CliRunner

from browser import JENKINS_CSP, Browser, chromium_path, serve
from sncheck.cli.main import main
from sncheck.report.html import write_html

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
EVIL = "<script>alert(1)</script>"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (scripts/setup.sh installs it)"),
]
pytest.importorskip("websocket", reason="websocket-client is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    """Two nights with a state dir: a clean one, then one with the demo's faults."""
    tmp = tmp_path_factory.mktemp("browser")
    state = tmp / "state"
    for n, faults in ((1, None), (2, ROOT / "fixtures/faults/demo-mixed.yaml")):
        args = ["run", "pre-upgrade-gate", "-i", DEMO, "--backend", "mock", "--seed", str(n), "-q",
                "--out", str(tmp / f"run{n}"), "--state-dir", str(state)]
        if faults:
            args += ["--faults", str(faults)]
        CliRunner().invoke(main, args)
    out = tmp / "run2"
    assert (out / "report.html").is_file()
    return out


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


def test_offline_no_requests_and_no_console_errors(report_dir, browser):
    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html")
    fetched = [u for u in page.requests if not u.endswith("/favicon.ico")]  # the browser's, not the page's
    assert fetched == [f"{base}/report.html"]
    assert page.errors == []
    assert page.eval("document.scripts.length") == 0


def test_first_screen_shows_verdict_count_and_top_action(report_dir, browser, tmp_path):
    results = json.loads((report_dir / "results.json").read_text())
    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html", width=1366, height=768)
        shot = Path(os.environ.get("SNCHECK_SCREENSHOT", tmp_path / "first-screen.png"))
        page.screenshot(shot)
    assert shot.stat().st_size > 10_000

    def visible(selector: str) -> dict:
        return page.eval(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; const r = e.getBoundingClientRect();
            return {{top: r.top, bottom: r.bottom, text: e.innerText}}; }})()""")

    h1 = visible("#verdict h1")
    assert h1 and h1["bottom"] <= 768
    assert "FAIL" in h1["text"] and f"{len(results['findings'])} findings" in h1["text"]
    first = visible("#actions tbody tr")
    assert first and first["bottom"] <= 768, first
    top = sorted(results["findings"], key=lambda f: {"critical": 0, "warning": 1}.get(f["severity"], 2))[0]
    assert top["entity"] in first["text"] and "critical" in first["text"]
    assert "measured" in visible("#actions thead")["text"] and "action" in visible("#actions thead")["text"]


def test_under_jenkins_csp_the_verdict_and_colours_remain(report_dir, browser):
    with serve(report_dir, csp=JENKINS_CSP) as base:
        page = browser.open(f"{base}/report.html")
    assert page.errors == []  # nothing was refused: no inline style, no script
    assert "FAIL" in page.eval("document.querySelector('#verdict h1').innerText")
    banner = page.eval("getComputedStyle(document.querySelector('#verdict svg rect')).fill")
    assert banner == "rgb(198, 40, 40)"
    fills = page.eval("""Array.from(document.querySelectorAll('svg.heatmap rect'))
        .map(r => getComputedStyle(r).fill)""")
    assert len(fills) > 100
    assert len(set(fills)) > 3  # the heatmap keeps its colours (SVG presentation attributes)
    tables = page.eval("document.querySelectorAll('table').length")
    assert tables >= 5


def test_every_anchor_resolves(report_dir, browser):
    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html")
        links = page.eval("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        ids = set(page.eval("Array.from(document.querySelectorAll('[id]')).map(e => e.id)"))
    assert links
    evidence = 0
    for href in links:
        url = urlparse(href)
        assert url.netloc == urlparse(base).netloc, href  # nothing outside the run directory
        if url.fragment:
            assert url.fragment in ids, href
        else:
            target = report_dir / unquote(url.path).lstrip("/")
            assert target.is_file(), href
            evidence += "/evidence/" in url.path
    assert evidence > 0


def test_a_host_named_script_renders_as_text(tmp_path, browser):
    host = f"node{EVIL}"
    results = {"run_id": "evil", "verdict": "fail", "playbook": "p", "backend": "mock", "inventory": "i",
               "layers": [{"name": "connectivity", "verdict": "fail", "summary": {}}],
               "findings": [{"entity": f"{host}/gpu0", "entity_kind": "card", "layer": "connectivity",
                             "rule": "p2p-bandwidth-below-design", "severity": "critical", "message": EVIL,
                             "evidence": {"measured": 1.0, "expected": 2.0, "unit": "GB/s"}}],
               "isolation": [], "topology": {"supernodes": [{"name": "sn0", "hosts": [host, "node2"]}]}}
    rows = pd.DataFrame([{"kind": "p2p", "layer": "connectivity", "src": f"{host}/gpu0", "dst": "node2/gpu0",
                          "tier": "scale_up", "bw_GBps": 100.0, "lat_us": 3.0, "status": "ok"}])
    write_html(tmp_path / "report.html", results, rows)
    with serve(tmp_path) as base:
        page = browser.open(f"{base}/report.html")
    assert page.dialogs == [] and page.errors == []
    assert page.eval("document.scripts.length") == 0
    assert EVIL in page.eval("document.querySelector('#actions').innerText")
    assert EVIL in page.eval("document.body.innerText")


def test_print_to_a4_loses_nothing(report_dir, browser):
    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html", width=794, height=1123)  # A4 at 96 dpi
        page.send("Emulation.setEmulatedMedia", media="print")
        assert page.eval("document.querySelectorAll('details:not([open])').length") == 0
        pdf = page.pdf()
        actions = page.eval("document.querySelector('#actions').innerText")
        findings = page.eval("document.querySelectorAll('#findings tbody tr').length")
    assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    results = json.loads((report_dir / "results.json").read_text())
    assert findings == len(results["findings"])
    assert all(f["entity"] in actions for f in results["findings"][:3])


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) is not installed")
def test_printed_pdf_has_the_verdict(report_dir, browser, tmp_path):
    import subprocess

    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html", width=794, height=1123)
        (tmp_path / "r.pdf").write_bytes(page.pdf())
    text = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True).stdout
    assert "FAIL" in text and "Top actions" in text
