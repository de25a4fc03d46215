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
from corpora import CORPORA, ROOT, named
from test_vendor_captures import VIEW

from sncheck.errors import ParseError
from sncheck.vendors import listing
from sncheck.vendors.parsers import failures, listings, parse_text, parsers, strip_source_header

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
        views = dict(named(corpus))  # (real-r4's "none-yet", a format sncheck had no view for, left out)
        for path in sorted(corpus.rglob("*.txt")):
            if path.name.startswith("00_"):
                continue
            rel = str(path.relative_to(corpus))
            tool = views.get(path.resolve()) or _by_directory(rel)
            if tool in listings() or tool in parsers():  # "none-yet": a format no view reads yet
                out[path.resolve()] = (f"{corpus.name}/{rel}", path, tool)
    return sorted(out.values())


def outcome(tool: str, text: str, path: str, expect: int | None = None) -> tuple[int, str | None]:
    """(exit status, the parsed JSON) as ``sncheck parse TOOL FILE [--expect N]`` gives them."""
    hints: dict = {"path": path} if tool in ("nccl-tests", "rccl-tests") else {}
    try:
        data = parse_text(tool, text, expect=expect, **hints)
    except ParseError:
        return 1, None
    except (ValueError, IndexError, RecursionError) as e:  # exit 2 in the CLI: never right for a cut
        return 2, repr(e)
    return (1 if failures(data) else 0), json.dumps(data, sort_keys=True, default=str)


def expectation(tool: str, raw: str, path: str) -> int | None:
    """The record count a judge expects of this output: what the whole capture lists (in a
    run, the inventory's cards of the host; the sweep the command asked for)."""
    hints: dict = {"path": path} if tool in ("nccl-tests", "rccl-tests") else {}
    try:
        return listing.count(listings().get(tool), parse_text(tool, raw, **hints))
    except ParseError:
        return None


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


# What no format states and no judge knows, so a cut there reads as a whole, shorter output.
# Every other cut that changes the result must exit 1 (with the expectation, below).
STREAMS = {"kernel-log", "nccl-debug"}  # a log has no end and no count: a read in a run appends its own end
# line; NCCL_DEBUG output is the job's log, cut anywhere a shorter log (a cut before the WARN: INFO lines)
# One-record listings made of entries that each version and option set prints differently: a
# cut between two whole entries of the only device (amd-smi's sections, the Fabric block,
# perfquery's counters, an npu-smi -t view's fields) is a shorter listing
# of that device. With two devices or more the last one is checked against the others.
# (amd-smi's sections that are one version's fixed dict are told cut: amd_smi_records; the rest vary by
# option, version and device. nvidia-smi's Fabric block is closed: four forms from 550 to 610, no record)
SECTIONED = {"amd-smi", "nvidia-smi-fabric", "perfquery", "npu-smi-fields", "amd-smi-topology",
             "asys",
             "nvidia-smi-q",  # -d's sections of one GPU: the option chose them, the output names none
             # one port's counters: en_stats.c's set varies by driver version, queues and options, and ethtool.c's
             # do_gstats prints 'NIC statistics:' then its n_stats lines, never n_stats (pastes grep out the zeros)
             "ethtool-mlx5",
             "ibstatus"}  # one CA's ports: the ibstatus script prints each port of /sys, no count (harvest17's 2014 log)
_EXCERPT = re.compile(r"\s*(?:\.\.\.|\[\.\.\.\]|\[output truncated\])\s*(?:\n|$)")


_BORDER = re.compile(r"^\+=+(?:\+=+)*\+\s*$")
_NVB_CLOSING = re.compile(r"^\s*(?:Waived:|NOTE: The reported|Performance can vary)")
_LINK_RECORD = re.compile(r"LINK (?:UP|DOWN)\s*$")
_CHIP_ROW = re.compile(r"^\|\s*\d+(?:\s+\d+)?\s+\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s")


def why_not_judged(tool: str, body: str, off: int, expect: int | None, several: bool,
                   after_the_output: bool = False) -> str | None:
    """The class of a changing cut that exits 0 when no format or judge can tell it, or None."""
    if tool in STREAMS:
        return "a log: no end, no count"
    kept = [ln for ln in body[:off].splitlines() if ln.strip()]
    if tool == "npu-smi" and kept and _BORDER.match(kept[-1].strip()) and "Process id" not in body[:off]:
        # npu-smi info always ends with its process table, but users paste the NPU table
        # alone (real-r3 holds such a fragment as whole); in a run the table feeds no fact
        # and the inventory's count of NPUs catches one missing
        return "npu-smi's NPU table alone, cut at its closing border: what users paste"
    if tool == "npu-smi" and kept and _CHIP_ROW.match(kept[-1].strip()) and "Process id" not in body[:off]:
        # the same, ending on a chip's Bus-Id row without the border: real-r3's
        # 02_npu-smi_26.0.rc2_A3 fragment is such a paste, hand-read as whole
        return "npu-smi's NPU table alone, ending on a chip's row: what users paste"
    if tool == "ascend-collected" and kept and _LINK_RECORD.search(kept[-1]) and \
            "-link_stat" in next((ln for ln in reversed(kept) if "hccn_tool" in ln), ""):
        # newest first, and 'link up count' counts every link-up since boot, more than the
        # records kept (the capture's own: 2, with one LINK UP record)
        return "hccn_tool -link_stat's change records: a history of a length the tool does not state"
    if tool == "nvbandwidth" and all(_NVB_CLOSING.match(ln) for ln in body[off:].splitlines() if ln.strip()):
        # v0.6+ closes with printInfo()'s NOTE, but users paste without it (r3's issue-50
        # capture ends at its SUM, hand-read as whole): the cut drops a waived test's line only
        return "nvbandwidth's closing lines alone ('Waived:', the NOTE): what users leave out"
    if tool == "ibportstate" and re.search(r"^\s*PortInfo:\s*$", body[:off], re.M) and \
            body[off:].lstrip().startswith("Peer PortInfo:"):
        # before infiniband-diags 1.5 the block's line is 'PortInfo:' alone (exadata-issue2): it names
        # no node type, and a CA port's whole block is the same fields a switch port prints before its peer
        # (1.4.3's ibportstate.c prints is_switch nowhere; kept after reading it in harvest 12:
        # test_parse_job_logs' test_ibportstate_before_1_5_cannot_tell_a_switch_port_cut_before_its_peer)
        return "ibportstate's old 'PortInfo:' names no node type: a switch port cut before its peer reads as a CA's"
    if tool == "amd-smi-topology" and "amd-smi topology" not in body and \
            re.match(r"\s*(?:[A-Z][A-Z -]+ TABLE:|Legend:)", body[off:]):
        # topology() prints the tables its options ask for and the output names no option: without the
        # command line, whole tables cut before the next (or before 6.3+'s Legend) are a shorter whole
        # output (harvest 20's ROCm issue 6074 block, nine tables and the Legend, no command line)
        return "amd-smi topology without its command line, cut between whole tables: the options chose them"
    if several:
        return "two whole outputs in one capture: the cut leaves the first"
    if after_the_output:
        # ibstat's "ibpanic: ... 'mlx5_8' failed" after 8 whole CAs: the cut reads as those 8; TransferBench's
        # '[WARN]' lines after a whole a2a summary (nothing states how many PrintErrors prints)
        return "a failure or warning line printed after a whole output: the cut drops only that line"
    if _EXCERPT.match(body[off:]):
        return "the capture's author elided the rest ('...', '[output truncated]'): the cut drops only that"
    if tool in SECTIONED and (expect or 0) <= 1:
        return "one device's entries: nothing states how many it has"
    return None


def _only_errors_differ(full: str | None, got: str | None) -> bool:
    """The cut parses to the whole capture's values, its errors, faults and warnings aside (and
    another tool's lines pasted after the output: PyTorch's watchdog after an NCCL RAS report;
    TransferBench's PrintErrors '[WARN] DMA n attempting ...' lines after the a2a summary, harvest26)."""
    if not full or not got:
        return False
    strip = ("errors", "faults", "torch", "warnings")
    a, b = json.loads(full), json.loads(got)
    return {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}


def at_line_boundary(body: str, off: int) -> bool:
    """Whether the cut falls between lines or between two words of a line (``N/A`` | `` mV``),
    not inside a word or number: the text up to it is a shorter output made of whole words."""
    return off >= len(body) or body[off - 1].isspace() or body[off].isspace()


def run_cuts(n: int = CUTS) -> dict[str, list]:
    """Every cut made, sorted: "same" (parses as the whole), "caught" (changed, exit 1),
    "missed_inside" (changed, cut inside a word, not exit 1), "missed_boundary" (changed,
    cut between lines or words, not exit 1); each a list of one-line descriptions."""
    rng = random.Random(SEED)
    out: dict[str, list] = {"same": [], "caught": [], "missed_inside": [], "missed_boundary": [],
                            "not_judgeable": []}
    for cid, path, tool in CAPTURES:
        raw = path.read_text(encoding="utf-8", errors="replace")
        header = len(raw) - len(strip_source_header(raw))
        body = raw[header:]
        full_code, full = outcome(tool, raw, str(path))
        expect = expectation(tool, raw, str(path))
        several = "more than one run" in (full or "") or "the next test began" in (full or "")
        for off in cut_offsets(body, n, rng):
            code, got = outcome(tool, raw[: header + off], str(path), expect)
            line = f"{cid} [{tool}] cut at {off}: exit {code} (last line {body[:off].rsplit(chr(10), 1)[-1][-40:]!r})"
            if got == full and code == full_code:
                out["same"].append(line)
            elif code == 1:
                out["caught"].append(line)
            elif at_line_boundary(body, off) and (why := why_not_judged(tool, body, off, expect, several,
                                                                       "\n" in (body[off - 1], body[off])
                                                                       and _only_errors_differ(full, got))):
                out["not_judgeable"].append((why, line))
            else:
                kind = "missed_boundary" if at_line_boundary(body, off) else "missed_inside"
                out[kind].append((tool, line))
    return out


def test_the_corpus_is_found() -> None:
    assert len([c for c in CAPTURES if c[0].startswith("real/")]) >= 100
    tools = {t for _, _, t in CAPTURES}
    assert {"nccl-tests", "nvidia-smi-q", "dcgmi-diag", "ibstat", "nvbandwidth", "rocm-smi", "transferbench"} <= tools


# Cuts still open, by view: each reads as a whole output today, and the reason. None now:
# npu-smi's cut at the process table's opening border, amd-smi topology's between two
# tables (its command line names the tables), an ascend-collected section whose own view
# finds it cut (npu-smi health without its Error Code line) exit 1; the rest are classes
# of why_not_judged (amd-smi topology without its command line, cut between whole tables: the
# options choose the tables and the output names none; harvest 20's ROCm issue 6074 block is one).
OPEN: dict[str, str] = {}


def test_every_cut_that_changes_the_result_exits_1() -> None:
    cuts = run_cuts()
    made = sum(len(v) for v in cuts.values())
    changed = made - len(cuts["same"])
    missed = cuts["missed_inside"] + cuts["missed_boundary"]
    still_open = [line for tool, line in missed if tool in OPEN]
    classes: dict[str, int] = {}
    for why, _ in cuts["not_judgeable"]:
        classes[why] = classes.get(why, 0) + 1
    print(f"\nrandom cuts (seed {SEED}, {CUTS} a capture, expectation = the whole capture's record count): "
          f"{made} cuts of {len(CAPTURES)} captures, {changed} changed the result, {len(cuts['caught'])} of those "
          f"exit 1; {len(cuts['not_judgeable'])} no format or judge can tell ("
          + "; ".join(f"{n}: {why}" for why, n in sorted(classes.items(), key=lambda kv: -kv[1]))
          + f"); {len(still_open)} open ({', '.join(sorted({t for t, _ in missed if t in OPEN}))})")
    assert made > 0 and changed > 0
    bad = [line for tool, line in missed if tool not in OPEN]
    assert not bad, "\n".join(bad[:60]) + (f"\n... {len(bad)} in all" if len(bad) > 60 else "")


# The views whose values have a vocabulary or form a cut line falls outside (cuts15, reviews15 #2/#3)
NEWLINE_VIEWS = ("ibv-devinfo", "ibstat", "ibstatus", "mlxlink", "nvlink-status", "amd-smi-monitor")


def test_a_cut_inside_a_line_then_a_newline_exits_1() -> None:
    """The same seeded cuts of these views' captures, those inside a line (between its words too), with the
    newline a reporter's fence or editor puts after a paste: the "ends mid-line" check cannot see them, the
    values' vocabulary does (seconds: these views' few captures)."""
    rng = random.Random(SEED)
    made, missed = 0, []
    for cid, path, tool in (c for c in CAPTURES if c[2] in NEWLINE_VIEWS):
        raw = path.read_text(encoding="utf-8", errors="replace")
        header = len(raw) - len(strip_source_header(raw))
        body = raw[header:]
        full_code, full = outcome(tool, raw, str(path))
        expect = expectation(tool, raw, str(path))
        for off in cut_offsets(body, CUTS, rng):
            if "\n" in body[off - 1: off + 1]:
                continue  # between lines: the tests above
            made += 1
            code, got = outcome(tool, raw[: header + off] + "\n", str(path), expect)
            if not (got == full and code == full_code) and code != 1:
                missed.append(f"{cid} [{tool}] cut at {off} + newline: exit {code} "
                              f"(last line {body[:off].rsplit(chr(10), 1)[-1][-40:]!r})")
    print(f"\nrandom cuts inside a line + newline ({', '.join(NEWLINE_VIEWS)}): {made} cuts, {len(missed)} read as whole")
    assert made > 0
    assert not missed, "\n".join(missed[:40])


def test_a_cut_is_caught_on_a_known_capture() -> None:
    """The check above can fail: a cut nccl-tests table (footer gone) changes the result and exits 1."""
    cid, path, tool = next(c for c in CAPTURES if c[2] == "nccl-tests" and "newcols" in c[0])
    raw = path.read_text(encoding="utf-8")
    cut = raw[: raw.index("# Out of bounds")]
    assert outcome(tool, cut, str(path))[0] == 1 and outcome(tool, raw, str(path))[0] == 0


@pytest.mark.parametrize("tool", ["nvidia-smi-q", "dcgmi-diag", "nccl-tests", "amd-smi-monitor", "ibstat",
                                  "nvlink-errors", "rocm-smi-showtopo", "nvidia-smi-topo"])
def test_line_boundaries_of_a_capture(tool: str) -> None:
    """Line boundaries of the largest capture of these views (the last 15, and 45 seeded
    others), with the expectation the inventory gives: each cut that changes the result exits 1."""
    cid, path, _ = max((c for c in CAPTURES if c[2] == tool), key=lambda c: c[1].stat().st_size)
    raw = path.read_text(encoding="utf-8")
    full_code, full = outcome(tool, raw, str(path))
    expect = expectation(tool, raw, str(path))
    ends = [m.end() for m in re.finditer("\n", raw)][:-1]
    picks = sorted(set(ends[-15:] + random.Random(SEED).sample(ends, min(45, len(ends)))))
    for end in picks:
        code, got = outcome(tool, raw[:end], str(path), expect)
        assert (got == full and code == full_code) or code == 1, (cid, end, raw[:end][-80:])


def _records_text(tool: str, raw: str) -> tuple[str, list[str]]:
    """A capture's body split at its record starts (the header before the first)."""
    starts = {"amd-smi-monitor": r"^\s*\d+\s", "ibstat": r"^CA '", "nvlink-errors": r"^GPU \d+:",
              "amd-smi": r"^GPU: \d+"}[tool]
    body = strip_source_header(raw)
    at = [m.start() for m in re.finditer(starts, body, re.MULTILINE)]
    return body[: at[0]], [body[i:j] for i, j in zip(at, at[1:] + [len(body)])]


@pytest.mark.parametrize("tool", ["amd-smi-monitor", "ibstat", "nvlink-errors", "amd-smi"])
def test_a_record_dropped_or_duplicated_is_not_judged(tool: str) -> None:
    """The last record dropped, or a record listed twice, at record boundaries: the output is
    whole by its grammar, so the expectation decides: with the count the inventory gives it is
    "not judged", exit 1; a device listed twice (in place of the dropped one) is a splice."""
    cid, path, _ = max(((c for c in CAPTURES if c[2] == tool and expectation(tool, c[1].read_text(), str(c[1])) > 1)
                        ), key=lambda c: c[1].stat().st_size)
    raw = path.read_text(encoding="utf-8")
    head, recs = _records_text(tool, raw)
    n = expectation(tool, raw, str(path))
    assert n == len(recs), (cid, n, len(recs))
    for text in (head + "".join(recs[:-1]), head + "".join(recs) + recs[-1], head + "".join(recs[:1] + recs[:-1])):
        code, got = outcome(tool, text, str(path), n)
        assert code == 1 and ("not judged: listing has" in (got or "") or "listed twice" in (got or "")), \
            (cid, got and got[:300])


def test_parse_takes_the_expectation(tmp_path: Path) -> None:
    """``sncheck parse --expect N`` says the count it found against the one expected and exits 1."""
    import subprocess
    import sys

    cid, path, tool = next(c for c in CAPTURES if c[2] == "amd-smi-monitor")
    n = expectation(tool, path.read_text(), str(path))
    base = [sys.executable, "-m", "sncheck", "parse", tool, str(path)]
    ok = subprocess.run(base + ["--expect", str(n)], capture_output=True, text=True)
    short = subprocess.run(base + ["--expect", str(n + 1)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert short.returncode == 1 and f"not judged: listing has {n} GPU records, expected {n + 1}" in short.stderr


def test_an_expectation_no_view_can_count_is_not_judged() -> None:
    """``--expect N`` on a view that lists no records (a kernel log is a stream) is said to
    be unchecked, an error (exit 1), never silently ignored (shape's trial: a new view
    without its listing entry took --expect 3 for 2 GPUs and exited 0)."""
    from sncheck.vendors.parsers import parse_text

    text = "[  1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.86.15\n"
    assert "kernel-log" not in listings()
    data = parse_text("kernel-log", text)
    assert not [e for e in data["errors"] if "--expect" in e]
    data = parse_text("kernel-log", text, expect=3)
    assert any(e.startswith("not judged: the kernel-log view has no records to count") for e in data["errors"]), data


@pytest.mark.parametrize("rel, tool, upto, why", [
    # npu-smi info: the process table's opening border, and no header under it
    ("ascend/10_npu-smi_info_A3_910C_16chips_vllm-ascend-issue3002.txt", "npu-smi",
     "| NPU     Chip              | Process id", "process table's opening border"),
    # amd-smi topology with its command line: no option, so every table; WEIGHT cut away
    ("amd/06_amd-smi_topology_access_weight_mi300x_8gpu_blog_truncated.txt", "amd-smi-topology",
     "WEIGHT TABLE:", "prints the WEIGHT, HOPS, LINK TYPE, NUMA BW tables: missing"),
    # a collected log's npu-smi health section cut before its Error Code line
    ("ascend/12_npu-smi_info_health_ecc_board_usages_mindcluster_doc.txt", "ascend-collected",
     "         Error Code                     : NA\n         Error Information              : NA\n        ...",
     "no 'Error Code' line"),
])
def test_the_cuts_that_were_open_exit_1(rel: str, tool: str, upto: str, why: str) -> None:
    """The three views of the former OPEN table, cut where the seeded cuts found them exit 0."""
    raw = strip_source_header((ROOT / "fixtures" / "real" / rel).read_text(encoding="utf-8"))
    cut = raw[: raw.rindex(upto)]
    code, got = outcome(tool, cut, rel)
    assert code == 1 and why in (got or ""), got and got[-400:]


def test_a_pasted_npu_table_alone_stays_whole() -> None:
    """The same capture cut at the NPU table's own closing border reads as the NPU table a
    user pastes (real-r3 holds one whole): no error, and the class is named, not open."""
    raw = strip_source_header((ROOT / "fixtures/real/ascend/10_npu-smi_info_A3_910C_16chips_vllm-ascend-issue3002.txt"
                               ).read_text(encoding="utf-8"))
    at = raw.index("| NPU     Chip              | Process id")
    body = raw[: raw.rindex("\n+---", 0, at) + 1]
    assert outcome("npu-smi", body, "x")[0] == 0
    assert why_not_judged("npu-smi", body + "rest", len(body), 16, False).startswith("npu-smi's NPU table alone")
