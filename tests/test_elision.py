"""A reporter's ``...`` (issue 28's deliveries): a line that is only ``...`` left lines of the
output out. Where a view's own grammar reads it (a log is a shorter log; a rank list or a
device list carries no value: ``listing.READS_ELISION``) its generator says so; every other
view's output holds values on every line, so an elided one is not whole: ``sncheck parse``
exits 1 and a run's fact on it is never a pass. Before, 38 of 69 views read round the
``...`` and exited 0 with a value gone (ibv_devinfo without its board_id, nvidia-smi a GPU
short, ibstat a CA short)."""

from __future__ import annotations

from grammars import load, variants
from test_grammars import outcome

from sncheck.vendors import listing
from sncheck.vendors.facts import Expect, outcome as fact_outcome
from sncheck.vendors.hostjudge import bind
from sncheck.vendors.nvidia.checks import COMMANDS
from sncheck.vendors.parsers import views


def _elide_middle(text: str, end: int | None) -> str:
    """``text`` with the middle line of its output (through its end marker) replaced by ``...``."""
    lines = text.split("\n")
    if len(lines) < 4:  # a one-line answer (hccn_tool -ip -g): the reporter's '...' after it
        return "\n".join(lines[:1] + ["..."] + lines[1:])
    last = (end if end is not None else len(lines) - 1) - 1
    k = max(1, last // 2)
    return "\n".join(lines[:k] + ["..."] + lines[k + 1:])


def test_every_view_that_does_not_read_an_elision_exits_1_on_one() -> None:
    wrong = []
    for view in sorted(set(views()) - listing.READS_ELISION - listing.ELISION_OPEN):
        v = max(variants(view), key=lambda v: (not v.fails, min(len(v.text.split("\n")), 4)))
        for mark in ("...", "…", "[...]"):
            code, data = outcome(view, _elide_middle(v.text, v.end).replace("\n...\n", f"\n{mark}\n", 1), v)
            said = data is None or any("lines of the output were left out" in str(e) for e in data.get("errors", []))
            if code != 1 or not said:  # a failing variant exits 1 anyway: the elision must be named
                wrong.append(f"{view} ({v.name}) with {mark!r}: exit {code}")
    assert not wrong, "\n".join(wrong)


def test_a_view_reads_an_elision_only_where_its_grammar_says_so() -> None:
    """Each view left to read ``...`` itself is a log (every variant a stream) or has variants
    whose ``...`` stands for lines that carry no value (``elide``), tested in test_grammars."""
    assert listing.READS_ELISION <= set(views()) & set(load())  # each a view with its generator
    for view in listing.READS_ELISION:
        vs = list(variants(view))
        assert all(v.stream for v in vs) or any(v.elide for v in vs), view


def test_an_elided_line_alone_is_the_mark_not_dots_in_a_line() -> None:
    assert listing.elided("ibstat", "CA 'mlx5_0'\n\t...\n") != []
    assert listing.elided("ibstat", "CA 'mlx5_0'\n  [snip]  \n") != []
    # a tool's own dots: a process list cut at 2048 bytes, asys's '......' row past five codes
    assert listing.elided("ibstat", "node0 device 1 [0000:1b:00] NVIDIA H100 ...\n") == []
    assert listing.elided("asys", "| ...... |\n......\n") == []
    assert listing.elided("kernel-log", "a\n...\nb\n") == []  # a log: a shorter log


def test_every_elision_is_said_once_with_its_line() -> None:
    """Two '...' in an output: each named once, by its line, and nothing else says them (issue
    28: listing.elided named the first alone; the amd-smi views said each again as 'output
    truncated or elided', dcgmi as 'rows elided', iblinkinfo and ibnetdiscover as a line the
    grammar does not hold, --query-gpu as a row of 1 value)."""
    wrong = []
    for view in sorted(set(views()) - listing.READS_ELISION):
        whole = [v for v in variants(view) if not v.fails and "\n..." not in v.text]
        if not whole:
            continue
        v = max(whole, key=lambda v: len(v.text.split("\n")))
        lines = v.text.split("\n")
        end = v.end if v.end is not None else len(lines) - 1
        if end < 6:
            continue
        a, b = end // 3, 2 * end // 3
        text = "\n".join(lines[:a] + ["..."] + lines[a + 1:b] + ["…"] + lines[b + 1:])
        code, data = outcome(view, text, v)
        if data is None:
            continue  # a parse error: exit 1, one message
        said = [str(e) for e in data.get("errors", []) if "'...'" in str(e) or "'…'" in str(e) or "elided" in str(e)]
        want = [f"line {a + 1} is a reporter's '...'", f"line {b + 1} is a reporter's '…'"]
        if code != 1 or len(said) != 2 or not all(any(s.startswith(w) for s in said) for w in want):
            wrong.append(f"{view} ({v.name}): exit {code}, {said}")
    assert not wrong, "\n".join(wrong)


def test_many_elisions_are_counted_past_twenty() -> None:
    body = "CA 'mlx5_0'\n" + "\tx\n...\n" * 25
    said = listing.elided("ibstat", body)
    assert len(said) == 21 and said[0].startswith("line 3 ") and said[19].startswith("line 41 ")
    assert said[20].startswith("5 more reporter's elision lines (lines 43 to 51)"), said[20]


def test_a_runs_fact_on_an_elided_listing_is_not_a_pass() -> None:
    """One judgement: the run reads the output as ``sncheck parse`` does, so a host whose
    ``ibstat`` came back with a '...' (a wrapper that elides) has no passing ib fact."""
    v = next(v for v in variants("ibstat") if not v.fails and v.count and v.count > 1)
    lines = v.text.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Rate:"))  # before: every fact passed
    text = "\n".join(lines[:k] + ["..."] + lines[k + 1:])
    assert outcome("ibstat", text, v)[0] == 1
    _, rows = fact_outcome("n1", bind(COMMANDS["ibstat"]), Expect(cards=8), exit_code=0, stdout=text)
    assert rows and not any(r["ok"] for r in rows), [(r["fact"], r["ok"], r["message"][:120]) for r in rows]


def test_nvbandwidth_keeps_a_tests_name_or_says_it_is_lost() -> None:
    """nvbandwidth reads '...' itself: over the device list it loses nothing; over a test's
    'Running' line before v0.5 (no SUM line names the matrix) the test is unknown: exit 1."""
    v = next(v for v in variants("nvbandwidth") if v.name.startswith("v0.4") and not v.fails)
    lines = v.text.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("Running "))
    code, data = outcome("nvbandwidth", "\n".join(lines[:k] + ["..."] + lines[k + 1:]), v)
    assert code == 1 and any("'Running' line a '...' left out" in e for e in data["errors"]), data["errors"]


def test_no_view_is_left_open() -> None:
    """Every view reads a reporter's '...' over values as not whole (nvlink-errors and
    nvidia-smi-q were the last two): the set stays empty."""
    assert listing.ELISION_OPEN == frozenset()


def test_an_elision_in_a_collected_log_is_its_sections_once() -> None:
    """ascend-collected judges a reporter's '...' by the section it stands in: once (it was
    reported by the section's view and again over the whole log), an error only where that
    section's view does not read it (an hccn_tool -stat list may be elided; it failed the log)."""
    v = next(v for v in variants("ascend-collected") if v.name == "1 NPUs x 1")
    lines = v.text.split("\n")

    def elided_after(command: str, k: int) -> list[str]:
        at = lines.index(command) + k
        data = outcome("ascend-collected", "\n".join(lines[:at] + ["..."] + lines[at + 1:]), v)[1]
        return [e for e in data["errors"] if "..." in e or "elided" in e or "left out" in e]

    hccn = "/usr/local/Ascend/driver/tools/hccn_tool -i 0"
    for command, k in (("/usr/local/bin/npu-smi info", 3), (f"{hccn} -optical -g", 3),
                       ("/usr/local/bin/npu-smi info -i 0 -c 0 -t health", 3), ("/usr/local/bin/npu-smi info -m", 1)):
        said = elided_after(command, k)
        assert len(said) == 1 and said[0].startswith(f"`{command}`"), (command, said)
    assert elided_after(f"{hccn} -stat -g", 2) == []  # hccn-stat reads it: a shorter list
    assert elided_after("lspci | grep acce", 1) == []  # no view reads the section: no value lost


_ROW = r"^\s*\d+\s+\d+\s+(?:float|double|half|bfloat16|int8|uint8|int32|uint32|int64|uint64|fp8_e4m3|fp8_e5m2)\s"


def _row_lines(text: str) -> list[int]:
    import re  # noqa: PLC0415 -- this helper alone needs it
    return [i for i, line in enumerate(text.split("\n")) if re.match(_ROW, line)]


def test_a_reporters_dots_for_result_rows_are_not_whole_where_the_size_sequence_breaks() -> None:
    """nccl-tests and rccl-tests read a '...' themselves (a device list carries no value), but a
    '...' for result rows breaks the sizes the loop prints (minBytes to maxBytes by its step,
    one row each, common.cu): not whole, exit 1. A '...' for other lines between two adjacent
    rows (NCCL INFO) breaks nothing: the rows read, exit 0."""
    checked = 0
    for view in ("nccl-tests", "rccl-tests"):
        for v in variants(view):
            rows = _row_lines(v.text)
            if len(rows) < 3:
                continue
            lines = v.text.split("\n")
            for k in (0, len(rows) // 2, len(rows) - 1):  # the first, a middle and the last row left out
                text = "\n".join(lines[:rows[k]] + ["..."] + lines[rows[k] + 1:])
                code, data = outcome(view, text, v)
                said = data is not None and any("were left out" in str(e) for e in data["errors"])
                # (a failing variant, a run cut short by its failure, may not reach the footer: its end unjudged)
                assert code == 1 and (said or v.fails and k == len(rows) - 1), (view, v.name, k, data and data["errors"])
            text = "\n".join(lines[:rows[1]] + ["..."] + lines[rows[1]:])  # between two rows, none missing
            code, data = outcome(view, text, v)
            assert data is not None and len(data["rows"]) == len(rows), (view, v.name, data)
            assert not any("were left out" in str(e) for e in data["errors"]) and code == int(v.fails), (view, v.name)
            checked += 1
    assert checked >= 10, checked


def test_a_reporters_dots_for_a_transferbench_test_or_transfer_are_not_whole() -> None:
    """TransferBench numbers its Tests ('Test %d:', one more each) and a Test's Transfers
    ('Transfer %02d'): a '...' where a number skips left blocks out, exit 1."""
    import re  # noqa: PLC0415 -- this helper alone needs it
    checked = 0
    for v in variants("transferbench"):
        lines = v.text.split("\n")
        heads = [i for i, line in enumerate(lines) if re.match(r"^\s*Test \d+:\s*$", line)]
        if v.fails or len(heads) < 3:
            continue
        text = "\n".join(lines[:heads[1]] + ["..."] + lines[heads[2]:])  # Test 2 left out
        code, data = outcome("transferbench", text, v)
        assert code == 1 and any("Tests before Test" in e for e in data["errors"]), (v.name, data["errors"])
        transfers = [i for i, line in enumerate(lines[:heads[1]]) if re.match(r"^\s*\|?\s*Transfer \d+ ", line)]
        if len(transfers) >= 3:  # Test 1's second Transfer left out, with its iteration rows
            text = "\n".join(lines[:transfers[1]] + ["..."] + lines[transfers[2]:])
            checked += 1
            code, data = outcome("transferbench", text, v)
            assert code == 1 and any("Transfers before" in e for e in data["errors"]), (v.name, data["errors"])
        checked += 1
    assert checked >= 3, checked  # two runs of three Tests or more, one with its Transfers checked too


def test_a_reporters_dots_in_an_ascend_view_are_said_once() -> None:
    """``sncheck parse`` of npu-smi, npu-smi-fields, hccn-optical and hccn-status with one '...'
    said it twice (the parser's own 'output elided' and listing.elided's): once now, by listing."""
    for view in ("npu-smi", "npu-smi-fields", "hccn-optical", "hccn-status"):
        v = next(v for v in variants(view) if not v.fails and v.text.count("\n") >= 4)
        code, data = outcome(view, _elide_middle(v.text, v.end), v)
        said = [e for e in (data or {}).get("errors", []) if "..." in str(e) or "elided" in str(e) or "left out" in str(e)]
        assert code == 1 and len(said) == 1 and "lines of the output were left out" in said[0], (view, v.name, said)
