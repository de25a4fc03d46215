"""A reporter's ``...`` (issue 28's deliveries): a line that is only ``...`` left lines of the
output out. Where a view's own grammar reads it (a log is a shorter log; a rank list or a
device list carries no value: ``listing.READS_ELISION``) its generator says so; every other
view's output holds values on every line, so an elided one is not whole: ``sncheck parse``
exits 1 and a run's fact on it is never a pass. Before, 38 of 69 views read round the
``...`` and exited 0 with a value gone (ibv_devinfo without its board_id, nvidia-smi a GPU
short, ibstat a CA short)."""

from __future__ import annotations

from grammars import load, variants
from grammars.delivery import TRANSFORMS, judge, samples
from test_grammars import outcome

from sncheck.vendors import listing
from sncheck.vendors.facts import Expect, outcome as fact_outcome
from sncheck.vendors.hostjudge import bind
from sncheck.vendors.nvidia.checks import COMMANDS
from sncheck.vendors.parsers import parse_text, views


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
    """nvbandwidth reads '...' itself: over the device list it loses nothing; over the device list
    and a test's 'Running' line the matrix keeps the name its SUM line gives (every version prints
    one); with that SUM gone too the test is unknown: exit 1. Over a 'Running' line after others (a
    Waived line, another test) lines were left out."""
    v = next(v for v in variants("nvbandwidth") if v.name.startswith("v0.4 4 GPUs") and not v.fails)
    lines = v.text.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("Running "))
    a = next(i for i, ln in enumerate(lines) if ln.startswith("Device "))
    name = lines[k].split()[1].rstrip(".")
    code, data = outcome("nvbandwidth", "\n".join(lines[:a] + ["..."] + lines[k + 1:]), v)
    assert code == 0 and name in data["tests"], (data["errors"], sorted(data["tests"]))
    s = next(i for i, ln in enumerate(lines) if ln.startswith(f"SUM {name} "))
    code, data = outcome("nvbandwidth", "\n".join(lines[:a] + ["..."] + lines[k + 1:s] + lines[s + 1:]), v)
    assert code == 1 and any("'Running' line a '...' left out" in e for e in data["errors"]), data["errors"]
    v = next(v for v in variants("nvbandwidth") if v.name.startswith("v0.4 1 GPUs") and not v.fails)
    lines = v.text.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("Running "))
    assert lines[k - 1].startswith("Waived")
    code, data = outcome("nvbandwidth", "\n".join(lines[:k] + ["..."] + lines[k + 1:]), v)
    assert code == 1 and data["errors"] == [listing.elision(k + 1, "...")], data["errors"]


def test_a_dots_in_nvbandwidth_is_read_over_the_device_list_alone() -> None:
    """Before: a '...' over the header's 'Driver Version' line, a matrix row or a whole test read
    as whole (exit 0, the value gone: the delivery matrix's nvbandwidth cell)."""
    v = next(v for v in variants("nvbandwidth") if v.name.startswith("v0.8 2 GPUs") and not v.fails)
    lines = v.text.split("\n")
    for what, k in (("Driver Version", next(i for i, ln in enumerate(lines) if ln.startswith("Driver Version"))),
                    ("a matrix row", next(i for i, ln in enumerate(lines) if ln.strip().startswith("1 "))),
                    ("a test", [i for i, ln in enumerate(lines) if ln.startswith("Running ")][1])):
        code, data = outcome("nvbandwidth", "\n".join(lines[:k] + ["..."] + lines[k + 1:]), v)
        assert code == 1 and listing.elision(k + 1, "...") in data["errors"], (what, data["errors"])
    a, b = v.elide  # the device list: no value read from it
    code, data = outcome("nvbandwidth", "\n".join(lines[:a] + ["..."] + lines[b:]), v)
    assert code == 0 and data["errors"] == [], data["errors"]


def test_no_view_is_left_open() -> None:
    """Every view reads a reporter's '...' over values as not whole (nvlink-errors and
    nvidia-smi-q were the last two): the set stays empty."""
    assert listing.ELISION_OPEN == frozenset()


def test_an_elision_in_a_collected_log_is_its_sections_once() -> None:
    """ascend-collected judges a reporter's '...' by the section it stands in: once (it was
    reported by the section's view and again over the whole log), an error only where that
    section's view does not read it (none of the views below reads one over values: an hccn_tool
    -stat list read a '...' as a shorter list, exit 0, until issue 28's last cells)."""
    v = next(v for v in variants("ascend-collected") if v.name == "1 NPUs x 1")

    def elided_after(command: str, k: int, lines: list[str] = v.text.split("\n")) -> list[str]:
        at = lines.index(command) + k
        data = outcome("ascend-collected", "\n".join(lines[:at] + ["..."] + lines[at + 1:]), v)[1]
        return [e for e in data["errors"] if "..." in e or "elided" in e or "left out" in e]

    hccn = "/usr/local/Ascend/driver/tools/hccn_tool -i 0"
    for command, k in (("/usr/local/bin/npu-smi info", 3), (f"{hccn} -optical -g", 3),
                       ("/usr/local/bin/npu-smi info -i 0 -c 0 -t health", 3), ("/usr/local/bin/npu-smi info -m", 1)):
        said = elided_after(command, k)
        assert len(said) == 1 and said[0].startswith(f"`{command}`"), (command, said)
    assert elided_after("lspci | grep acce", 1) == []  # no view reads the section: no value lost
    # a counter on every line (the first variant's -stat section is DCMI's failure: this one's lists them)
    said = elided_after(f"{hccn} -stat -g", 2, next(v for v in variants("ascend-collected") if v.name == "1 NPUs x 2")
                        .text.split("\n"))
    assert len(said) == 1 and said[0].startswith(f"`{hccn} -stat -g`: line 2 is a reporter's"), said


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


def test_a_reporters_dots_for_a_transferbench_test_transfer_or_iteration_are_not_whole() -> None:
    """TransferBench's '...' is read over its env block alone (and a2a's Test block, which its
    Summary repeats): one for a Test, a Transfer or a SHOW_ITERATIONS row left values out, exit 1
    with its line. Before, an 'Iter' row (their numbers are not in order: nothing skips) or a Test
    whose number did not skip read as whole."""
    import re  # noqa: PLC0415 -- this helper alone needs it
    checked = 0
    for v in variants("transferbench"):
        lines = v.text.split("\n")
        heads = [i for i, line in enumerate(lines) if re.match(r"^\s*Test \d+:\s*$", line)]
        iters = [i for i, line in enumerate(lines) if re.match(r"^\s*[|\u2502]?\s*Iter \d+ ", line)]
        transfers = [i for i, line in enumerate(lines[:heads[1]] if len(heads) > 1 else [])
                     if re.match(r"^\s*[|\u2502]?\s*Transfer \d+ ", line)]
        if v.fails or len(heads) < 2:
            continue
        cases = [("a Test", heads[1], heads[2] if len(heads) > 2 else len(lines) - 1)]
        cases += [("a Transfer", transfers[1], transfers[2])] if len(transfers) >= 3 else []
        cases += [("an iteration", iters[1], iters[1] + 1)] if len(iters) >= 2 else []
        for what, a, b in cases:
            code, data = outcome("transferbench", "\n".join(lines[:a] + ["..."] + lines[b:]), v)
            assert code == 1 and listing.elision(a + 1, "...") in data["errors"], (v.name, what, data["errors"])
            checked += 1
    assert checked >= 6, checked


def test_a_reporters_dots_over_transferbenchs_env_block_is_read_unless_p2p_mode_is_behind_it() -> None:
    """DisplayEnvVars' lines carry no value read but P2P_MODE (the tables a p2p run prints): a '...'
    over them reads as whole, except in a p2p run whose P2P_MODE it may stand for."""
    for v in variants("transferbench"):
        if v.fails or v.elide is None or "P2P_MODE" not in v.text:
            continue
        lines = v.text.split("\n")
        a, b = v.elide
        assert outcome("transferbench", "\n".join(lines[:a] + ["..."] + lines[b:]), v)[0] == 0, v.name
        k = next(i for i, ln in enumerate(lines) if ln.startswith("P2P_MODE"))
        code, data = outcome("transferbench", "\n".join(lines[:k] + ["..."] + lines[k + 1:]), v)
        assert code == 1 and data["errors"] == [listing.elision(k + 1, "...")], (v.name, data["errors"])
        return
    raise AssertionError("no p2p variant with its env block")


def test_a_reporters_dots_in_an_ascend_view_are_said_once() -> None:
    """``sncheck parse`` of npu-smi, npu-smi-fields, hccn-optical and hccn-status with one '...'
    said it twice (the parser's own 'output elided' and listing.elided's): once now, by listing."""
    for view in ("npu-smi", "npu-smi-fields", "hccn-optical", "hccn-status"):
        v = next(v for v in variants(view) if not v.fails and v.text.count("\n") >= 4)
        code, data = outcome(view, _elide_middle(v.text, v.end), v)
        said = [e for e in (data or {}).get("errors", []) if "..." in str(e) or "elided" in str(e) or "left out" in str(e)]
        assert code == 1 and len(said) == 1 and "lines of the output were left out" in said[0], (view, v.name, said)


# The views whose grammar reads some '...' and read one over value lines as whole (the delivery
# matrix's last 16 cells: a reporter's '...' and '[snip]' over two lines a third into the output)
_READ_OVER_VALUES = ("ethtool-mlx5", "hccn-conf", "hccn-stat", "imex-ctl", "nccl-mnnvl", "nvbandwidth",
                     "rccl-tests", "transferbench")


def test_a_dots_over_value_lines_is_not_whole_in_the_delivery_matrix() -> None:
    wrong = [f"{view} | {t.name} | {name}: {why}" for view, texts in samples(3).items() if view in _READ_OVER_VALUES
             for name, text in texts for t in TRANSFORMS if t.name.startswith("a reporter's")
             if (why := judge(view, text, t)) is not None]
    assert not wrong, "\n".join(wrong)


def test_a_dots_over_values_is_said_with_its_line_where_every_line_is_a_value() -> None:
    """ethtool -S and hccn_tool -stat print a counter on every line, hccn.conf a device's key, an
    NCCL INFO log's every line may be a rank's MNNVL evidence: a '...' there is listing.elided's."""
    for view in ("ethtool-mlx5", "hccn-conf", "hccn-stat", "nccl-mnnvl"):
        v = max((v for v in variants(view) if not v.fails), key=lambda v: len(v.text.split("\n")))
        lines = v.text.split("\n")
        k = len(lines) // 2
        code, data = outcome(view, "\n".join(lines[:k] + ["..."] + lines[k + 1:]), v)
        assert code == 1 and data["errors"] == [listing.elision(k + 1, "...")], (view, v.name, data["errors"])


def test_imex_ctl_reads_a_dots_in_its_legend_alone() -> None:
    v = next(v for v in variants("imex-ctl") if not v.fails and v.count and v.count > 2)
    lines = v.text.split("\n")
    a, b = v.elide
    assert outcome("imex-ctl", "\n".join(lines[:a] + ["..."] + lines[b:]), v)[0] == 0  # the legend: no value
    for what, k in (("a node", next(i for i, ln in enumerate(lines) if ln.startswith("Node #1 "))),
                    ("Nodes: and the first node", lines.index("Nodes:")),
                    ("a matrix row", next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["1"])),
                    ("the domain state", next(i for i, ln in enumerate(lines) if ln.startswith("Domain State")))):
        text = "\n".join(lines[:k] + ["..."] + lines[k + (2 if what.startswith("Nodes:") else 1):])
        code, data = outcome("imex-ctl", text, v)
        assert code == 1 and listing.elision(k + 1, "...") in data["errors"], (what, data["errors"])
    # the line named is the file's: after a '# source:' header, in a fence
    data = parse_text("imex-ctl", "# source: a paste\n```\n" + text)
    assert listing.elision(k + 3, "...") in data["errors"], data["errors"]


def test_rccl_tests_dots_before_the_footer_with_no_maxbytes_is_not_whole() -> None:
    """A '...' after the last row and before the footer, in a log that names no maxBytes (its
    header not pasted): rows may be among what it left out (it read as a whole run, exit 0)."""
    v = next(v for v in variants("rccl-tests") if not v.fails and len(_row_lines(v.text)) >= 3)
    lines = [ln for ln in v.text.split("\n") if "maxBytes" not in ln]
    rows = _row_lines("\n".join(lines))
    assert outcome("rccl-tests", "\n".join(lines), v)[0] == 0
    text = "\n".join(lines[:rows[-1]] + ["..."] + lines[rows[-1] + 1:])
    code, data = outcome("rccl-tests", text, v)
    assert code == 1 and any("names no maxBytes" in e and "were left out" in e for e in data["errors"]), data["errors"]
