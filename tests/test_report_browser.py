"""The HTML report in a real browser: headless Chromium through the DevTools protocol.

Checks what a person and Jenkins will see: no network requests beyond the run directory
and no console errors, the first screen at 1366x768, the stylesheet (report.css beside
the page) applied under Jenkins' Content-Security-Policy (computed styles, light and dark
schemes), the page read in full without it (deleted or blocked), every anchor resolving,
hostile host names rendered as text, and print to A4. Screenshots of the first screen
with and without the stylesheet go to $SNCHECK_SCREENSHOTS (tests/screenshots/ holds the
committed ones), else to the test's temporary directory. Skipped with a reason when
Chromium is not installed (scripts/setup.sh installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest
from click.testing import CliRunner

from browser import JENKINS_CSP, Browser, chromium_path, serve
from sncheck.cli.main import main
from sncheck.report.html import write_html
from sncheck.store.results import from_json

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
EVIL = "<script>alert(1)</script>"
SANS = "sans-serif"
# Jenkins' policy with styles refused: what a stricter server (or a blocked file) gives.
NO_STYLE_CSP = "sandbox; default-src 'none'; img-src 'self'; style-src 'none';"

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


def screenshot_path(tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get("SNCHECK_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def test_offline_no_requests_and_no_console_errors(report_dir, browser):
    with serve(report_dir) as base:
        page = browser.open(f"{base}/report.html")
    fetched = [u for u in page.requests if not u.endswith("/favicon.ico")]  # the browser's, not the page's
    assert fetched == [f"{base}/report.html", f"{base}/report.css"]   # the run directory's own files
    assert page.errors == []
    assert page.eval("document.scripts.length") == 0


def test_html_format_writes_the_page_and_its_stylesheet(report_dir):
    page = (report_dir / "report.html").read_text()
    assert '<link rel="stylesheet" href="report.css">' in page
    assert (report_dir / "report.css").read_text() == (ROOT / "reports/templates/report.css").read_text()
    # Nothing inline for a CSP to refuse: no <style>, no style= attribute, no script.
    assert "<style" not in page and not re.search(r"\sstyle=", page) and "<script" not in page


def test_first_screen_shows_verdict_count_and_top_action(report_dir, browser, tmp_path):
    with serve(report_dir, csp=JENKINS_CSP) as base:
        page = browser.open(f"{base}/report.html", width=1366, height=768)
        shot = screenshot_path(tmp_path, "report-styled-1366x768.png")
        page.screenshot(shot)
    assert shot.stat().st_size > 10_000
    assert page.errors == []
    check_first_screen(page, json.loads((report_dir / "results.json").read_text()))


def check_first_screen(page, results: dict) -> None:
    """Verdict, findings count and the top action inside the first 1366x768 screen."""
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


STYLE_PROBE = """(() => { const s = e => getComputedStyle(document.querySelector(e));
    const heat = document.querySelector('svg.heatmap').getBoundingClientRect();
    return {font: s('body').fontFamily, num: s('#actions td.num').textAlign, digits: s('td.num').fontVariantNumeric,
            collapse: s('#findings table').borderCollapse, edge: s('#verdict').borderLeftWidth,
            background: s('html').backgroundColor, text: s('html').color, heat: heat.width,
            sheets: document.styleSheets.length}; })()"""


def test_stylesheet_applies_under_jenkins_csp(report_dir, browser):
    with serve(report_dir, csp=JENKINS_CSP) as base:
        page = browser.open(f"{base}/report.html", width=1366, height=768)
        light = page.eval(STYLE_PROBE)
        page.send("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
        dark = page.eval(STYLE_PROBE)
    assert page.errors == []   # the policy refused nothing
    assert light["sheets"] == 1 and light["font"].endswith(SANS) and "serif" not in light["font"].replace(SANS, "")
    assert (light["num"], light["digits"], light["collapse"]) == ("right", "tabular-nums", "collapse")
    assert light["edge"] == "8px"                          # the verdict banner's coloured edge
    assert 300 <= light["heat"] <= 620                     # heatmaps at a readable size, two to a row
    assert (light["background"], dark["background"]) == ("rgb(255, 255, 255)", "rgb(13, 17, 23)")
    assert dark["text"] == "rgb(230, 237, 243)"


@pytest.mark.parametrize("how", ["deleted", "blocked"])
def test_without_the_stylesheet_the_page_still_reads(report_dir, browser, tmp_path, how):
    results = json.loads((report_dir / "results.json").read_text())
    if how == "deleted":
        served = tmp_path / "run"
        shutil.copytree(report_dir, served)
        (served / "report.css").unlink()
        csp = JENKINS_CSP
    else:
        served, csp = report_dir, NO_STYLE_CSP
    with serve(served, csp=csp) as base:
        page = browser.open(f"{base}/report.html", width=1366, height=768)
        if how == "deleted":
            page.screenshot(screenshot_path(tmp_path, "report-no-css-1366x768.png"))
        probe = page.eval(STYLE_PROBE)
        check_first_screen(page, results)
        text = page.eval("document.body.innerText")
        fills = page.eval("new Set(Array.from(document.querySelectorAll('svg.heatmap rect'))"
                          ".map(r => getComputedStyle(r).fill)).size")
    assert probe["num"] != "right" and not probe["font"].endswith(SANS)   # really unstyled
    assert [e for e in page.errors if "report.css" not in e and "Content Security Policy" not in e] == []
    for f in results["findings"]:
        assert f["entity"] in text and f["rule"] in text
    for heading in ("Top actions", "Fleet overview", "Findings", "Isolation and quarantine", "Host facts",
                    "Provenance"):
        assert heading in text
    assert fills > 3   # the heatmaps keep their colours (SVG presentation attributes)


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
    write_html(tmp_path / "report.html", from_json(results), rows)
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
        overflow = page.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        actions = page.eval("document.querySelector('#actions').innerText")
        findings = page.eval("document.querySelectorAll('#findings tbody tr').length")
    assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
    assert overflow <= 0   # nothing wider than the A4 page
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
