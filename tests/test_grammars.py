"""Every parse view has its written grammar, and its parser reads what the grammar allows (issue 28).

- every view names its grammar beside its parser (:mod:`sncheck.vendors.grammar`), and the
  README's table of views lists each with the tool versions its grammar covers;
- every view with a generator (``tests/grammars/``): each whole output reads to the
  generator's values with the right exit status, delivered any way people deliver it, and
  every cut before its end marker exits 1 (see ``tests/grammars/__init__.py``).

    SNCHECK_GRAMMAR_ALL=1 PYTHONPATH=$PWD python3 -m pytest -q tests/test_grammars.py   # every cut, every delivery
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from grammars import ALL, CUTS, DELIVERIES, Variant, content, cut_points, delivered, load, through_end, variants
from test_conformance import holds, resolve

from sncheck.errors import ParseError
from sncheck.vendors import grammar
from sncheck.vendors.delivery import unwrap
from sncheck.vendors.parsers import failures, parse_text, views

ROOT = Path(__file__).resolve().parents[1]

# Views whose grammar is not written yet, and views with no generator yet: none (the last two,
# ascend-collected and ascend-sweep, have theirs since issue 28). They stay empty: a view is
# added with its written grammar and its generator, or the test below fails.


def outcome(view: str, text: str, v: Variant, expect: int | None = None) -> tuple[int, Any]:
    """(exit status, parsed JSON or None) as ``sncheck parse VIEW FILE [--expect N]`` gives them."""
    try:
        data = parse_text(view, text, expect=expect, **v.hints)
    except ParseError:
        return 1, None
    return (1 if failures(data) else 0), data


def _wrong_values(v: Variant, data: Any) -> list[str]:
    out = []
    for at, value in v.values:
        if isinstance(value, bool):  # holds() reads numbers and strings: a flag is compared as is
            try:
                got = resolve(data, at)
            except KeyError as e:
                got = e
            if got is not value:
                out.append(f"{at} = {value!r}: {got!r}")
            continue
        ok, why = holds(data, at, value)
        if not ok:
            out.append(f"{at} = {value!r}: {why}")
    return out


def check_variant(v: Variant) -> list[str]:
    """Every way ``v`` breaks its view's grammar contract (see the module), one line each."""
    bad: list[str] = []
    want = 1 if v.fails else 0
    code, whole = outcome(v.view, v.text, v)
    if code != want or whole is None:
        bad.append(f"{v.name}: whole output exits {code}, want {want}: "
                   f"{(failures(whole) if whole else 'ParseError')!s:.300}")
        return bad
    bad += [f"{v.name}: {w}" for w in _wrong_values(v, whole)] if whole is not None else []
    said = "\n".join(failures(whole))
    if v.fails and v.finding is not None and v.finding not in said:
        bad.append(f"{v.name}: its failures do not say {v.finding!r}: {said[:300]!r}")
    if v.count is not None and outcome(v.view, v.text, v, v.count)[0] != want:
        bad.append(f"{v.name}: with --expect {v.count}: {failures(outcome(v.view, v.text, v, v.count)[1])}")
    rng = random.Random(f"{v.view}:{v.name}")
    bad += check_cuts(v, v.text, "plain", rng, CUTS)
    for how, text, exact in delivered(v, rng, views()[v.view].stamped):
        got_code, got = outcome(v.view, text, v)
        if got_code != code:
            bad.append(f"{v.name} [{how}]: exits {got_code}, plain exits {code}: {failures(got) if got else 'ParseError'}")
        elif exact and json.dumps(got, sort_keys=True) != json.dumps(whole, sort_keys=True):
            bad.append(f"{v.name} [{how}]: parses other than the plain output: {_diff(whole, got)}")
        elif not exact:
            bad += [f"{v.name} [{how}]: {w}" for w in _wrong_values(v, got)]
        if exact:
            bad += check_cuts(v, text, how, rng, CUTS if ALL else 3)
    return bad


def check_cuts(v: Variant, text: str, how: str, rng: random.Random, n: int) -> list[str]:
    """Cuts of ``text`` (``v`` delivered as ``how``) that read as whole though they lost part
    of the output through its end marker (a stream: though cut inside a line)."""
    bad = []
    need = content(through_end(v))
    head = next((len(d.head) for d in DELIVERIES if d.name == how), 0)  # lines a delivery puts before the output
    points = cut_points(text, rng, tuple(r + head for r in v.records), whole=how == "plain")
    if not ALL and len(points) > n:
        points = sorted(rng.sample(points, n))
    for p in points:
        cut = text[:p]
        got_code, got = outcome(v.view, cut, v, v.count)
        if got_code == 1:
            continue
        # a line lost more than its newline, and what is left of it is more than blanks
        inside = text[p - 1] not in "\r\n" and text[p] not in "\r\n" and bool(cut.rsplit("\n", 1)[-1].strip())
        if v.stream:
            lost = inside and _partial_line_read(v, text, cut, (got_code, got))
        else:
            lost = content(unwrap(cut, stamped=views()[v.view].stamped)) < need
        if lost:  # after the end marker the grammar cannot tell a cut: anything may follow or not
            tail = cut[-60:]
            bad.append(f"{v.name} [{how}] cut at {p}/{len(text)} ({'inside a line' if inside else 'line end'}, "
                       f"ends {tail!r}): exit {got_code}")
    return bad


def _partial_line_read(v: Variant, text: str, cut: str, got: tuple[int, Any]) -> bool:
    """Whether a stream cut inside a line left part of one of the tool's lines that the view
    reads: the delivery undone, what is left of the last line is not a whole line of the
    output (an ANSI code or a CR cut away, a quote mark or a launcher label alone, prose after
    the paste) and the view reads the cut otherwise than the same cut at the line's start."""
    stamped = views()[v.view].stamped
    partial = unwrap(cut, stamped=stamped).rsplit("\n", 1)[-1].strip()
    if not partial or partial in {ln.strip() for ln in unwrap(text, stamped=stamped).split("\n")}:
        return False
    def read(data: Any) -> Any:  # what the view read, its verdict on the cut aside
        return {k: x for k, x in data.items() if k != "errors"} if isinstance(data, dict) else data

    return read(outcome(v.view, cut[: cut.rfind("\n") + 1], v, v.count)[1]) != read(got[1])


def _diff(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _diff(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _diff(x, y, f"{path}[{i}]")
    return f"{path or '(top)'}: {json.dumps(a)[:150]} != {json.dumps(b)[:150]}"


# ----------------------------------------------------------------------------- tests

@pytest.mark.parametrize("view", sorted(load()))
def test_the_parser_reads_what_its_grammar_allows(view: str) -> None:
    bad = [line for v in variants(view) for line in check_variant(v)]
    assert not bad, f"{len(bad)} in all:\n" + "\n".join(bad[:40])


def test_every_view_has_its_grammar_and_generator() -> None:
    written = {name for name, view in views().items() if grammar.of(view.parse, name)}
    assert set(views()) - written == set(), "a view without its written grammar beside its parser"
    assert set(views()) - set(load()) == set(), "a view without its generator in tests/grammars/"
    assert not set(load()) - set(views()), "a generator for no view"


# Views whose generator writes no failing variant, each because its grammar says the tool prints
# no failure of its own (the view's Grammar.failures says why): the set may only shrink.
NO_FAILURE_PRINTED: dict[str, str] = {
    "hccn-conf": "a file: no failure line is ever written into it",
    # sncheck's own read (grep -H 2>/dev/null): no failure line; judged by the rules' growth, --since
    "ib-counters": "no value is a fault by itself",
    # (nccl-inspector prints no failure line either; its failing variant is an edited record: a 1e999, json_numbers)
    "npu-smi-help": "no failure line of its own is known",
    "imex-ctl": "no failure line of its own is known",  # its node states: a platform's run check judges them
}


def test_every_generator_writes_a_failing_variant() -> None:
    """Issue 28: a generator writes every failure line its tool can print, so each view has at
    least one whole variant that exits 1 and names its finding (the tool's line or the fault)."""
    lacking = {view for view in load() if not any(v.fails for v in variants(view))}
    assert lacking == set(NO_FAILURE_PRINTED), f"without a failing variant: {sorted(lacking - set(NO_FAILURE_PRINTED))}; " \
        f"named but have one: {sorted(set(NO_FAILURE_PRINTED) - lacking)}"
    for view, why in NO_FAILURE_PRINTED.items():  # the reason is the grammar's own
        g = grammar.of(views()[view].parse, view)
        assert g is not None and why in g.failures, (view, why)


def test_the_readme_lists_every_view_with_its_versions() -> None:
    """One table (README, "Parse views and the tool versions they cover"), one row per view:
    ``| view | tool | versions |``, the tool and versions its Grammar states."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Parse views: their grammars", 1)[1].split("\n#", 1)[0]
    rows = {m.group(1): (m.group(2).strip(), m.group(3).strip())
            for m in re.finditer(r"^\| `([\w-]+)` \| (.*?) \| (.*?) \|$", section, re.MULTILINE)}
    wrong = [f"{name}: no row" for name in views() if name not in rows]
    wrong += [f"{name}: a row for no view" for name in rows if name not in views()]
    for name, view in views().items():
        g = grammar.of(view.parse, name)
        if g is not None and rows.get(name) != (g.tool, g.versions):
            wrong.append(f"{name}: README {rows.get(name)}, grammar {(g.tool, g.versions)}")
    assert not wrong, "\n".join(wrong)


def test_a_broken_parser_is_caught() -> None:
    """The harness can fail: output whose rows or values are not what the generator wrote is
    reported, whether the parser sees it (a row gone: the banner's loop names its size) or only
    the values do (a number changed in place: the grammar cannot tell)."""
    # a row as common.cu prints it with its redop and root cells (no launcher's labels in it)
    row_line = re.compile(r"^\s+\d+\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s")
    v = next(v for v in variants("nccl-tests") if not v.fails and v.text.startswith("#")
             and any(row_line.match(ln) for ln in v.text.split("\n")))
    lines = v.text.split("\n")
    rows = [i for i, ln in enumerate(lines) if row_line.match(ln)]
    without_row = "\n".join(lines[: rows[-1]] + lines[rows[-1] + 1:])
    assert outcome(v.view, without_row, v)[0] == 1  # the loop's last size missing: cut short
    assert check_variant(Variant(v.view, "row gone", without_row, v.values, end=v.end, count=v.count,
                                 hints=v.hints))
    at, busbw = next((at, x) for at, x in v.values if at.startswith("rows[") and at.endswith("out_of_place.busbw_GBps"))
    row = lines[rows[-1]].split()
    assert f"{busbw:.2f}" == row[7], (at, row)  # the value the generator wrote is that row's busbw
    row[7] = f"{busbw + 5:.2f}"
    changed = "\n".join(lines[: rows[-1]] + ["  ".join(row)] + lines[rows[-1] + 1:])
    assert outcome(v.view, changed, v)[0] == 0  # whole by the grammar ...
    bad = check_variant(Variant(v.view, "value changed", changed, v.values, end=v.end, count=v.count,
                                hints=v.hints))
    assert any(at in b for b in bad), bad  # ... so its value must be found wrong


# ----------------------------------------------------------------------------- delivery

def test_a_prefix_is_removed_only_where_every_line_has_it() -> None:
    table = "1: lo: <LOOPBACK>\n    inet 127.0.0.1\n2: eth0: <UP>\n"
    assert unwrap(table) == table  # "1: " on some lines only: the tool's own text
    assert unwrap("0: a\n0: b\n") == "a\nb\n"
    assert unwrap("[1,0]<stdout>:a\n[1,0]<stdout>:b\n") == "a\nb\n"
    # two tasks interleaved: each task's lines together, in the order the tasks first printed
    assert unwrap("1: x1\n0: y1\n1: x2\n0: y2\n") == "x1\nx2\ny1\ny2\n"
    # a reporter's "..." and a cut last line need not carry the label
    assert unwrap("0: a\n...\n0: b\n0") == "a\n...\nb\n0"
    # a cut last line stays last whatever its task: where the paste stops (harvest 9: an
    # mpirun-tagged NCCL log cut inside rank 2's line, regrouped into the middle, read as whole)
    assert unwrap("[1,2]<stdout>:a\n[1,3]<stdout>:b\n[1,2]<stdout>:c") == "a\nb\nc"
    assert unwrap("0: a\n1: b\n0: c\n1: d\n0: e") == "a\nc\nb\nd\ne"
    # a remote runner's "host out: " (wandb PR 5449's rocm-smi), with or without Fabric's brackets
    assert unwrap("nid005113 out: A\nnid005113 out: B\n") == "A\nB\n"
    assert unwrap("[n1] out: A\n[n2] err: B\n[n1] out: C\n") == "A\nC\nB\n"
    sxid = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20009\nnvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028\n"
    assert unwrap(sxid) == sxid  # a device's own "name: " stays: no stream word
    # Open MPI 5's PRRTE tags '<stdout>: ', 4's ORTE '<stdout>:': a blank after the tag is the
    # tag's only where every tagged line has one (an ORTE line's own leading blank is the line's)
    assert unwrap("[1,0]<stdout>: a\n[1,0]<stdout>:  b\n") == "a\n b\n"
    assert unwrap("[1,0]<stdout>:we\n[1,0]<stdout>: are\n") == "we\n are\n"


def test_a_wrapped_watchdog_log_tagged_by_mpirun_reads_its_numbers() -> None:
    """A watchdog log wrapped at a terminal's width and then tagged line by line by mpirun
    (ORTE: no blank after the tag) at every width from 60 columns: a piece starting with the
    blank the wrap fell on kept it (the tag's optional blank took it: 'we are' read 'weare', the
    timeout's numbers lost at width 66, issue 28). Under PRRTE's tag the same."""
    from grammars.nccl_logs import _PG, _PROGRESS, _glog  # noqa: PLC0415 -- the generator's own lines
    seq, ran = 4242, 600017
    logical = [_glog("2.4", 3, 1709, 0) + _PG["2.4"].format(r=3) + "Watchdog caught collective operation timeout: "
               f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for {ran} "
               "milliseconds before timing out.",
               _glog("2.2", 3, 1709, 1) + _PG["2.4"].format(r=3) + _PROGRESS["2.2"].format(s=seq, e=seq + 12, c=seq - 1)]
    base = Variant("torch-nccl", "tagged", "\n".join(logical) + "\n", (
        ("timeouts[rank=3].seq", seq), ("timeouts[rank=3].ran_ms", ran), ("progress[rank=3].last_enqueued", seq + 12),
        ("progress[rank=3].last_completed", seq - 1)), fails=True, stream=True)
    wrong = []
    for width in range(60, 141):
        pieces = [ln[i:i + width] for ln in logical for i in range(0, len(ln), width)]
        for tag in ("[1,3]<stdout>:", "[1,3]<stdout>: "):
            text = "".join(f"{tag}{p}\n" for p in pieces)
            code, data = outcome("torch-nccl", text, base)
            if code != 1 or data is None or data["errors"] or _wrong_values(base, data):
                wrong.append(f"width {width} {tag!r}: {data and (data['errors'] or _wrong_values(base, data))}")
    assert not wrong, "\n".join(wrong[:5])


def test_fences_quotes_and_stamps() -> None:
    assert unwrap("Here it is:\n\n```text\nA\nB\n```\nthanks\n") == "A\nB\n"
    assert unwrap("intro\n```\nA\nB") == "A\nB"  # an unclosed fence: a paste cut short keeps what it has
    assert unwrap("```\nA\nB\n```") == "A\nB\n"  # a closing fence pasted without its newline
    assert unwrap("intro\n\n```te") == "intro\n\n```te"  # a fence cut in its opener is text: a cut
    # a paste copied from inside a fence, its opener left behind: the first fence closes it
    # (harvest 12's nvlink -e loop read as no GPU at all, exit 0)
    assert unwrap("A\nB\n```\n") == "A\nB\n" and unwrap("A\nB\n```") == "A\nB\n"
    assert unwrap("A\n```text\n") == ""  # an info string only opens: an empty output after it
    assert unwrap("say:\n```\n```\n") == ""  # paired fences around nothing: an empty output
    # a paste cut right after a launcher's label or a stamp: the cut line stays (harvest 9's tagged
    # NCCL log cut after '[1,0]<stdout>:' read as whole once the label was taken)
    assert unwrap("[1,0]<stdout>:A\n[1,0]<stdout>:B\n[1,0]<stdout>:") == "A\nB\n[1,0]<stdout>:"
    assert unwrap("[  1.000000] A\n[  2.000000] B\n[  3.000000] ") == "A\nB\n[  3.000000] "
    assert unwrap("> > A\n> >\n> > B\n") == "A\n\nB\n"
    assert unwrap("> A\nB\n") == "> A\nB\n"
    log = "[Mon Mar  3 12:00:01 2025] NVRM: Xid (PCI:0000:3b:00): 79\n"
    assert unwrap(log) == "NVRM: Xid (PCI:0000:3b:00): 79\n" and unwrap(log, stamped=True) == log
    journal = "Mar 03 12:00:01 node7 kernel: A\nMar 03 12:00:02 node7 kernel: B\n"
    assert unwrap(journal) == "A\nB\n"
    # short-iso with its host and unit only where every line has them; "# error:" is no host
    iso = "2025-03-03T12:00:01,000001+00:00 # error: X\n2025-03-03T12:00:02,000002+00:00 # done\n"
    assert unwrap(iso) == "# error: X\n# done\n"
    assert unwrap("\x1b[1;32mPASS\x1b[0m\r\nok\r\n") == "PASS\nok\n"
    # a whole line in markdown inline code is that line (nccl-issue296's WARN); other backticks stay
    assert unwrap("NCCL version 2.4.8\n\n`init.cc:1247 NCCL WARN x`\n") == "NCCL version 2.4.8\n\ninit.cc:1247 NCCL WARN x\n"
    assert unwrap("run `ls` now\n`a` and `b`\n") == "run `ls` now\n`a` and `b`\n"


def test_an_iso_stamp_takes_a_host_and_unit_only_as_the_journal_prints_them() -> None:
    """journalctl -o short-iso prints 'host unit[pid]:' (the kernel's entries: 'host kernel:');
    two words and a colon after an ISO stamp are otherwise the line's own ('link status: UP'
    lost its key and was a ParseError). Every stamp the generators deliver, on every one-line view."""
    assert unwrap("2026-03-03T12:00:00+0000 node7 kernel: A\n") == "A\n"
    assert unwrap("2026-03-03T12:00:00.123456+0100 node7 sncheck[42]: link status: UP\n") == "link status: UP\n"
    assert unwrap("2026-03-03T12:00:00.123456789Z fec mode: rs FEC mode\n") == "fec mode: rs FEC mode\n"
    rng = random.Random(28)
    for view in ("hccn-link", "hccn-fec", "hccn-net-health"):
        for v in variants(view):
            for d in (d for d in DELIVERIES if d.stamp):
                assert outcome(view, d.apply(v, rng), v) == outcome(view, v.text, v), (view, v.name, d.name)


def test_a_stream_cut_inside_a_line_the_view_reads_is_reported() -> None:
    """The stream check can fail: a torch-nccl log cut inside its watchdog line reads a partial
    record, so it must exit 1; the same log cut inside the next line's launcher label, or with
    only an ANSI code after the last whole line cut away, lost nothing of the tool's."""
    v = next(v for v in variants("torch-nccl"))
    line = v.text.split("\n")[0]
    inside = v.text[: v.text.index(" milliseconds")]
    assert _partial_line_read(v, v.text, inside, outcome(v.view, inside, v))
    labelled = "".join(f"[1,0]<stdout>:{ln}\n" for ln in v.text.splitlines())
    label_cut = labelled[: labelled.index("\n") + 1] + "[1,0]"
    assert not _partial_line_read(v, labelled, label_cut, outcome(v.view, label_cut, v))
    coloured = f"\x1b[1;31m{line}\x1b[0m\x1b[K\n"
    assert not _partial_line_read(v, coloured, coloured[:-4], outcome(v.view, coloured[:-4], v))


def test_nvlink_errors_variants_name_every_counter_the_parser_reads() -> None:
    """The counters the parser reads from nvlink-errors' generated outputs are exactly the names
    a rule may give (nvidia_smi.NVLINK_COUNTERS): a name the grammar prints that the tuple lacks,
    or one in the tuple no output prints, shows here."""
    from sncheck.vendors.nvidia import nvidia_smi
    read = {name for v in variants("nvlink-errors") for g in nvidia_smi.parse_nvlink_errors(v.text)["gpus"] for link in g["links"]
            for name in link["counters"]}
    assert read == set(nvidia_smi.NVLINK_COUNTERS)
