"""A capture cut short always exits 1 (issue 18 item 4): every view knows its end marker.

For every real capture under fixtures/real/ (and /work/shared/fixtures/real*/ when that
exists), cut at seeded random byte offsets. A cut whose parsed result differs from the full
capture's must make ``sncheck parse`` exit 1 (a ParseError counts: it exits 1 too). A cut
that parses to the same result (trailing blank lines, a footer line the view ignores) may
exit as the whole capture does.

The exit status is computed as the CLI computes it (parsers.parse_text + parsers.failures),
in-process: a subprocess per cut would not fit the CPU budget.

    PYTHONPATH=$PWD python3 -m pytest -q tests/test_random_cuts.py -s   # prints the figures
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest
import yaml
from test_vendor_captures import VIEW

from sncheck.errors import ParseError
from sncheck.vendors.parsers import failures, parse_text, strip_source_header

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "fixtures" / "real"] + sorted(Path("/work/shared/fixtures").glob("real*"))
CUTS = int(os.environ.get("SNCHECK_CUTS", "20"))  # per capture: 20 x ~280 captures take ~6 s of CPU
SEED = 20261201


def _by_directory(rel: str) -> str | None:
    family, _, name = rel.partition("/")
    key = f"{family}/{name.split('_')[0]}"
    if key in VIEW:
        return VIEW[key]
    low = name.lower()
    if family == "dcgmi-diag":
        return "dcgmi-diag"
    if family == "ib":
        return "ibstatus" if "ibstatus" in low else "ibstat" if "ibstat" in low else None
    if family == "nccl-tests" or rel.startswith("nccl-tests/"):
        return "nccl-tests"
    if family == "rccl-tests":
        return "rccl-tests"
    if family == "nvidia-smi-q":
        return "nvidia-smi-q"
    if family == "nvidia-smi-topo":
        return "nvidia-smi-topo"
    if family == "nvidia-smi-nvlink":
        return "nvlink-errors" if re.search(r"(^|_)(e|errors?)_", low) else "nvlink-status"
    if family == "perftest":
        return "ib-write-lat" if "lat" in low else "ib-write-bw"
    return None


def captures() -> list[tuple[str, Path, str]]:
    """(id, file, tool) for every capture a view is named for; expect.yaml names win."""
    out: dict[Path, tuple[str, Path, str]] = {}
    for corpus in CORPORA:
        if not corpus.is_dir():
            continue
        named = {}
        for expect in corpus.rglob("expect.yaml"):
            for e in yaml.safe_load(expect.read_text(encoding="utf-8")) or []:
                named[(expect.parent / e["file"]).resolve()] = e["tool"]
        for path in sorted(corpus.rglob("*.txt")):
            if path.name.startswith("00_"):
                continue
            rel = str(path.relative_to(corpus))
            tool = named.get(path.resolve()) or _by_directory(rel)
            if tool:
                out[path.resolve()] = (f"{corpus.name}/{rel}", path, tool)
    return sorted(out.values())


def outcome(tool: str, text: str, path: str) -> tuple[int, str | None]:
    """(exit status, the parsed JSON) as ``sncheck parse TOOL FILE`` gives them."""
    hints = {"path": path} if tool in ("nccl-tests", "rccl-tests") else {}
    try:
        data = parse_text(tool, text, **hints)
    except ParseError:
        return 1, None
    except (ValueError, IndexError, RecursionError) as e:  # exit 2 in the CLI: never right for a cut
        return 2, repr(e)
    return (1 if failures(data) else 0), json.dumps(data, sort_keys=True, default=str)


def cut_offsets(text: str, n: int, rng: random.Random) -> list[int]:
    """``n`` byte offsets inside the body: half anywhere, half just after a newline (a cut at a
    line boundary leaves no partial line for the view to notice)."""
    if len(text) < 2:
        return []
    ends = [m.end() for m in re.finditer("\n", text)][:-1]
    picks = [rng.randrange(1, len(text)) for _ in range(n - n // 2)]
    picks += [rng.choice(ends) for _ in range(n // 2)] if ends else []
    return sorted(set(picks))


CAPTURES = captures()


# Views whose format ends with a marker or states its own size (a footer, a closing border, an
# "End of" banner, a count of GPUs): every cut that changes the result exits 1, at a line
# boundary too, except in a capture that holds two whole outputs (a log of two nccl-tests
# runs), where a cut between them is one whole output. The other views' formats can end after any record (amd-smi, npu-smi,
# hccn_tool, the Ascend collections, TransferBench p2p/a2a, ...): a cut exactly between two
# records reads as a shorter, whole output. For them a cut inside a word or number must exit 1.
END_MARKED = {"nccl-tests", "rccl-tests", "dcgmi-diag", "nvidia-smi-q", "nvidia-smi-qx", "rocm-smi"}


def at_line_boundary(body: str, off: int) -> bool:
    """Whether the cut falls between lines or between two words of a line (``N/A`` | `` mV``),
    not inside a word or number: the text up to it is a shorter output made of whole words."""
    return off >= len(body) or body[off - 1].isspace() or body[off].isspace()


def run_cuts(n: int = CUTS) -> dict[str, list]:
    """Every cut made, sorted: "same" (parses as the whole), "caught" (changed, exit 1),
    "missed_inside" (changed, cut inside a word, not exit 1), "missed_boundary" (changed,
    cut between lines or words, not exit 1); each a list of one-line descriptions."""
    rng = random.Random(SEED)
    out: dict[str, list] = {"same": [], "caught": [], "missed_inside": [], "missed_boundary": []}
    for cid, path, tool in CAPTURES:
        raw = path.read_text(encoding="utf-8", errors="replace")
        header = len(raw) - len(strip_source_header(raw))
        body = raw[header:]
        full_code, full = outcome(tool, raw, str(path))
        several = "more than one run" in (full or "")
        for off in cut_offsets(body, n, rng):
            code, got = outcome(tool, raw[: header + off], str(path))
            line = f"{cid} [{tool}] cut at {off}: exit {code} (last line {body[:off].rsplit(chr(10), 1)[-1][-40:]!r})"
            if got == full and code == full_code:
                out["same"].append(line)
            elif code == 1:
                out["caught"].append(line)
            else:
                kind = "missed_boundary" if at_line_boundary(body, off) else "missed_inside"
                out[kind].append((f"{tool} (several outputs)" if several else tool, line))
    return out


def test_the_corpus_is_found() -> None:
    assert len([c for c in CAPTURES if c[0].startswith("real/")]) >= 100
    tools = {t for _, _, t in CAPTURES}
    assert {"nccl-tests", "nvidia-smi-q", "dcgmi-diag", "ibstat", "nvbandwidth", "rocm-smi", "transferbench"} <= tools


def test_every_cut_that_changes_the_result_exits_1() -> None:
    cuts = run_cuts()
    made = sum(len(v) for v in cuts.values())
    changed = made - len(cuts["same"])
    boundary = [line for tool, line in cuts["missed_boundary"] if tool in END_MARKED]
    other = sorted({tool for tool, _ in cuts["missed_boundary"] if tool not in END_MARKED})
    print(f"\nrandom cuts (seed {SEED}, {CUTS} a capture): {made} cuts of {len(CAPTURES)} captures, "
          f"{changed} changed the result, {len(cuts['caught'])} of those exit 1; not exit 1: "
          f"{len(cuts['missed_inside'])} inside a word, {len(cuts['missed_boundary'])} between lines or words "
          f"({len(boundary)} in end-marked views; the rest in {', '.join(other)})")
    assert made > 0 and changed > 0
    bad = [line for _, line in cuts["missed_inside"]] + boundary
    assert not bad, "\n".join(bad[:60]) + (f"\n... {len(bad)} in all" if len(bad) > 60 else "")


def test_a_cut_is_caught_on_a_known_capture() -> None:
    """The check above can fail: a cut nccl-tests table (footer gone) changes the result and exits 1."""
    cid, path, tool = next(c for c in CAPTURES if c[2] == "nccl-tests" and "newcols" in c[0])
    raw = path.read_text(encoding="utf-8")
    cut = raw[: raw.index("# Out of bounds")]
    assert outcome(tool, cut, str(path))[0] == 1 and outcome(tool, raw, str(path))[0] == 0


@pytest.mark.parametrize("tool", ["nvidia-smi-q", "dcgmi-diag", "nccl-tests"])
def test_the_views_with_end_markers_catch_line_cuts(tool: str) -> None:
    """Every line boundary of one capture of these views: each cut that changes the result exits 1."""
    cid, path, _ = next(c for c in CAPTURES if c[2] == tool)
    raw = path.read_text(encoding="utf-8")
    full_code, full = outcome(tool, raw, str(path))
    for m in list(re.finditer("\n", raw))[:-1]:
        code, got = outcome(tool, raw[: m.end()], str(path))
        assert got == full or code == 1, (cid, m.end())
