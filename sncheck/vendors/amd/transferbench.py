"""Parse TransferBench output: the ``p2p`` peak tables, the ``a2a`` summary matrix, the
``scaling`` sweep, and the per-Test rows of a config file (or ``cmdline``) run.

``parse_transferbench`` (``transferbench``)::

    {"tool": "transferbench", "version": "v1.62.00", "mode": "p2p",  # p2p, a2a, scaling, config or null
     "matrices": [{"title": "Unidirectional copy peak bandwidth GB/s ...", "columns": ["CPU 00", ...],
                   "rows": {"GPU 00": {"GPU 01": 48.46, ...}, "GPU 00 <-": {...}, "GPU 00 <->": {...}},
                   "stats": {"min": {"GPU 00": {...}}, "max": ..., "sd": ...},  # p2p SHOW_ITERATIONS
                   "row_totals": {"GPU 00": {"STotal": 359.1, "Actual": 354.8}},  # a2a (NIC too, its column)
                   "column_totals": {"GPU 00": 359.786, ...}, "totals": {"RTotal": 2879.354,  # a2a RTotal
                                                                      "min_actual": 354.785, "max_actual": 357.285},
                   "closed": true}],                                  # p2p: its Averages line came
     "averages": {"UniDir": {"GPU->GPU": 48.44, ...}, "BiDir": {...}},  # the p2p 'Averages' lines
     "p2p_bytes": 67108864, "p2p_mode": 0,                              # 'Bytes Per Direction', P2P_MODE
     "a2a": {"bytes": 268435456, "num_cus": 8, "transfers": 56, "direct": true},  # its '- Copying' line;
            # after v1.62 its settings line: also "executor": "DMA", "ranks": 1, "layout": "table"
     "tests": [{"test": 1, "executors": [{"executor": "GPU 00", "GBps": 56.299, "ms": 4.768,  # multi-rank:
                                          "bytes": 268435456, "sum_GBps": 56.309}],  # "host": "node0"
                "transfers": [{"transfer": 0, "GBps": 33.52, "ms": 2.002, "bytes": 67108864,
                               "route": "G0 -> GPU00:004 -> G1",
                               "iterations": [{"iter": 6, "GBps": 33.616, "ms": 1.996}]}],  # SHOW_ITERATIONS
                "aggregate_GBps": 55.015, "aggregate_ms": 4.879, "aggregate_bytes": 268435456,
                "overhead_ms": 0.111, "iterations_run": 2517}],  # ends with "Aggregate (CPU)"; '# Iters Run:'
     "scaling": {"exe": "GPU 00", "bytes": 67108864, "columns": ["CPU00", ..., "GPU03"],  # the scaling
                 "rows": [{"num_cus": 1, "GBps": {"CPU00": 14.11, ...}}],               # preset; null
                 "best": {"CPU00": {"GBps": 14.11, "num_cus": 1}, ...}},               # without it
     "aggregate_GBps": 2879.354, "average_GBps": 51.417, "aggregate_cpu_GBps": 2671.564,  # a2a's last lines
     "warnings": ["[WARN] ..."], "errors": ["[ERROR] HIP Error: ..."]}

What says each output is whole (the grammar below): a Test block ends with its ``Aggregate
(CPU)`` line, a p2p table with its ``Averages`` line (and the run with the tables P2P_MODE
names), the a2a summary with its ``Aggregate bandwidth (CPU Timed)`` line, the scaling sweep
with its ``Best`` line; every matrix row holds a cell per column, and is printed once (a row label
read twice is another copy spliced in: an error). Self-copy cells (the
diagonal, N/A or a local copy rate) are kept as printed; checks read GPU->GPU cells off the
diagonal.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end, listing
from sncheck.vendors.amd import transferbench_ranks as ranks
from sncheck.vendors.delivery import ELISION
from sncheck.vendors.grammar import Grammar

GRAMMAR = {"transferbench": Grammar(
    tool="TransferBench (p2p, a2a and scaling presets, a config file or cmdline run)",
    versions="v1.52 and v1.62 (source), the bordered tables of releases after v1.62 (source); the v1.2x-v1.50 "
             "per-Transfer rows of a config run (captures)",
    sources=(
        "ROCm/TransferBench src/TransferBench.cpp @ v1.52 (tag v1.52): RunPeerToPeerBenchmarks (the p2p tables, "
        "'Averages (During UniDir|BiDir)'), RunScalingBenchmark, RunAllToAllBenchmark (v1.52 a2a summary), "
        "ReportResults (Executor / Transfer / Iter / StandardDev / Aggregate (CPU) rows), the [ERROR]/[WARN] and "
        "'Parsing error:' prints",
        "ROCm/TransferBench src/include/EnvVars.hpp @ v1.52: DisplayEnvVars ('TransferBench v1.52', the rule, "
        "'[Common]', 'NAME = VALUE : description' lines, HIDE_ENV), DisplayP2PBenchmarkEnvVars ('[P2P Related]', "
        "P2P_MODE)",
        "ROCm/TransferBench src/client/Presets/AllToAll.hpp (v1.6x client, as indexed): 'Test 1:' results then "
        "'Summary: [N bytes per Transfer] [GFX|DMA:CUs] [R Read(s) W Write(s)]', the 75 '=' rule, the "
        "optional 'NIC(QQ QP)' column, RTotal with min/max Actual, the three bandwidth lines; a failed "
        "RunTransfers prints its messages bare and exits 0",
        "the v1.6x client's PrintResults (a fork of src/client/Client.cpp as indexed, same printf as v1.62): "
        "'Executor: %3s %02d | %8.3f GB/s | %8.3f ms | %12lu bytes | %-7.3f GB/s (sum)', 'Transfer %02d | ... | "
        "SRC -> E%03d[.sub]:%03d -> DST', 'Aggregate (CPU) | ... | Overhead: %.3f ms'; PrintErrors '[ERROR]/[WARN]'",
        "ROCm/TransferBench src/client/Utilities.hpp (a release after v1.62, as indexed at commit 01fc7c2): "
        "TableHelper::PrintTable (borders[16] by TOP/BOT/LEFT/RIGHT mask: '\u2502' columns, '-' rules joined by "
        "\u250c\u252c\u2510\u251c\u253c\u2524\u2514\u2534\u2518; cells right-aligned, SHOW_BORDERS=0: blanks only) and "
        "PrintResults ('Test %d:', then one 5-column table: ' Executor: %3s %02d ' or ' Executor: Rank %d %3s %02d ', "
        "'%8.3f GB/s ', '%8.3f ms ', '%12lu bytes ', ' %7.3f GB/s (sum)[ [host]]'; 'Transfer %-4d ' with ' SRC -> "
        "[Rr]Xn[.s]:CUs -> DST'; 'Iter %03d    ' with ' CUs: x:yy' and ' XCCs: x'; 'StandardDev '; 'Aggregate (CPU) ' "
        "with ' Overhead %.3f ms'; '# Iters Run:' when NUM_ITERATIONS < 0); src/client/EnvVars.hpp (SHOW_BORDERS, "
        "default 1); src/client/Presets/PeerToPeer.hpp as indexed (the p2p printf tables unchanged, CPU_MEM_TYPE / "
        "GPU_MEM_TYPE lines, '[ERROR] Peer-to-peer preset currently not supported for multi-node')",
        "ROCm/TransferBench src/client/Presets/AllToAll.hpp after v1.62 (as indexed, code corpus file id "
        "60787445114): 'GPU-%s All-To-All benchmark:' (GFX or DMA), a 30 '=' rule, '[%lu bytes per Transfer] [%s:%d] "
        "[%d Read(s) %d Write(s)] [MemType:%s] [NIC QueuePairs:%d] [#Ranks:%d]', then one TableHelper table: ' SRC\\DST ', "
        "' GPU %02d ' per column (a ' NIC ' column with QueuePairs), ' STotal ', ' Actual '; a row ' GPU %02d ' per "
        "GPU (' %.2f ' or ' N/A ' cells, its STotal and Actual), ' RTotal ' (each column's total, STotal's and "
        "Actual's), then ' CPU Timed: ' and ' %.2f ' under the last two columns; bars only before SRC\\DST, the GPU "
        "columns, STotal and Actual; then 'Average   bandwidth (GPU Timed): %8.3f GB/s', the two 'Aggregate' lines, "
        "PrintErrors ('[WARN] DMA n attempting k parallel transfers, however GPU_MAX_HW_QUEUES only set to 4': "
        "TransferBench's FAQ, harvest26). With NUM_RESULTS > 0 (default 1 where #Ranks > 1) each column a "
        "centred '(Rnk)' after it and each GPU and RTotal NUM_RESULTS MAX rows, an AVG row, NUM_RESULTS MIN rows "
        "(AllToAll.hpp as indexed, code corpus id 60787445114; transferbench_ranks: read bordered, the AVG rows as "
        "the single rank's, MAX/MIN with their ranks; SHOW_BORDERS=0 not read: its empty cells cannot be placed)",
        "captures only: fixtures/real/amd 18/20/21/22 (v1.62 a2a, HIP error, example.cfg; the MI300X acceptance "
        "guide's p2p, whitespace collapsed) and real-r3 transferbench 01/02 (PR 50's pre-Executor config rows "
        "with 'StandardDev | 4.887e-03 |', PR 45's scaling); harvest7: PR 50's p2p table with its min/max/sd rows "
        "pasted alone (the 'copy peak bandwidth' title names the p2p mode without 'Bytes Per Direction')",
    ),
    lines=("config run: 'TransferBench vX[.YY]', a '=' rule, '[Common]' and 'NAME = VALUE : text' env lines unless "
           "HIDE_ENV; per config line its '## comment' echoed; 'Test N:'; per executor 'Executor: TYPE NN | GB/s | "
           "ms | bytes | GB/s (sum)' (v1.51 on) and its 'Transfer NN | GB/s | ms | bytes | route' rows, with "
           "SHOW_ITERATIONS 'Iter NNN | GB/s | ms | [CUs: xx:yy ...] XCCs: ...' rows and 'StandardDev | GB/s | ms |'; "
           "'Aggregate (CPU) | GB/s | ms | bytes | Overhead: X ms'. p2p: env ([P2P Related] P2P_MODE), 'Bytes Per "
           "Direction N', per direction a title '{Uni|Bi}directional copy peak bandwidth GB/s [...] (GPU-Executor: "
           "GFX|DMA)', a 'SRC+EXE\\DST' / 'SRC\\EXE+DST' / 'SRC\\DST' header naming 'CPU NN' then 'GPU NN' columns, "
           "a row per device ('->'; bidirectional '->', '<-', '<->'; SHOW_ITERATIONS 'min', 'max', ' sd' rows), "
           "cells %10.2f or N/A, the 'CPU->CPU CPU->GPU GPU->CPU GPU->GPU' keys and 'Averages (During UniDir|BiDir):' "
           "four %10.2f or N/A. a2a: 'GPU-GFX All-To-All benchmark:', '- Copying N bytes between directly connected|"
           "all pairs of GPUs using K CUs (T Transfers)', the Test block (v1.52 'Test 0:' unless HIDE_ENV, v1.6x "
           "'Test 1:'), 'Summary:' (v1.6x with its bracketed settings), the rule, 'SRC\\DST GPU NN ... [NIC(QQ QP)] "
           "STotal Actual', a row per GPU (%8.3f or N/A cells, then STotal and Actual), 'RTotal' (column totals, "
           "the total, min and max Actual), 'Average   bandwidth (GPU Timed): X GB/s', 'Aggregate bandwidth (GPU "
           "Timed): X GB/s', 'Aggregate bandwidth (CPU Timed): X GB/s'; after v1.62 the bracketed settings under "
           "the banner and the summary as one table (RTotal's last two cells: STotal's and Actual's totals; a 'CPU "
           "Timed:' cell). scaling: 'GPU-GFX Scaling benchmark:', the "
           "rule, '- Copying N bytes from GPU g to other devices', '- All numbers reported as GB/sec', 'NumCUs' and a "
           "column per CPUnn/GPUnn, a row per CU count (%7.2f cells), ' Best ' with '%7.2f(%3d)' per column. After "
           "v1.62 a Test's rows are one TableHelper table (same cells; '\u2502' or, SHOW_BORDERS=0, blanks between "
           "them; '-' rules with box-drawing joints under each Executor row, after each Transfer's StandardDev, "
           "around Aggregate (CPU); Transfer numbers unpadded, routes 'G0 -> G0:4 -> G1', multi-rank 'R0G0 -> "
           "R0G0:4 -> R1G1' and ' [host]' after the executor's sum; '# Iters Run: N' under it when NUM_ITERATIONS "
           "< 0). Its SHOW_ITERATIONS table is sized for one Transfer per executor: with more, the rows past it "
           "(the Aggregate row among them) are not printed, and the Test reads as cut short. Not read: "
           "OUTPUT_TO_CSV, the topology listing"),
    end=("a Test ends with its 'Aggregate (CPU)' line (the run's Tests against the judge's count, --expect N); a p2p "
         "table with its Averages line, and the run with the tables P2P_MODE names (0: both; unknown under "
         "HIDE_ENV: at least one); the a2a preset with its 'Aggregate bandwidth (CPU Timed)' line after a square "
         "summary and RTotal (after v1.62: its table's RTotal row); the scaling preset with a Best cell per column; every matrix row a cell per column. "
         "A reporter's '...' is read over the env block (its lines carry no value read but P2P_MODE: a p2p run "
         "without it is not whole) and over the a2a preset's Test block or whole preamble before 'Summary:' or the "
         "a2a banner (the "
         "Summary holds each pair again; v1.6x's its bytes and CUs too); "
         "anywhere else it left values out (a Test, a Transfer, an iteration row, a matrix row): not whole"),
    failures=("'[ERROR] ...' (PrintErrors, CheckForError, the presets' checks, data mismatches), 'Parsing error: ...' "
              "(ParseTransfers), 'HIP Error'/'failed'/'Segmentation fault'/'Aborted' lines: errors. '[WARN] ...' is a "
              "warning (kept, not a failure). An a2a run that printed no summary (its bare RunTransfers errors) and any "
              "end above missing: cut short"),
    values=("version, mode, matrices[{title, columns, rows{row: {column: GB/s or null}}, stats, row_totals, "
            "column_totals, totals (a2a: RTotal and min_actual/max_actual, or after v1.62 RTotal and actual), closed; multi-rank: "
            "ranked, results (NUM_RESULTS), extrema{GPU nn|RTotal: {MAX|MIN: [{column: {GBps, rank}}]}}}], "
            "averages{UniDir|BiDir: {CPU->GPU: GB/s}}, p2p_bytes, p2p_mode, a2a{bytes, num_cus, transfers, direct; after "
            "v1.62 executor, ranks, layout}, tests[{test, executors[{executor, GBps, ms, bytes, sum_GBps, host (multi-rank)}], "
            "transfers[{..., iterations[]}], aggregate_GBps, aggregate_ms, aggregate_bytes, overhead_ms, "
            "iterations_run (NUM_ITERATIONS < 0)}], scaling{exe, bytes, columns, rows[], best}, aggregate_GBps, "
            "average_GBps, aggregate_cpu_GBps, warnings, errors"),
)}

_DEV = r"(?:CPU|GPU|NIC) \d+"
_NUM = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_EXECUTOR = re.compile(rf"^Executor:\s*((?:Rank \d+ )?[A-Z]+ \d+)\s*\|\s*({_NUM}) GB/s\s*\|\s*({_NUM}) ms\s*\|\s*(\d+) bytes\s*\|"
                       rf"\s*({_NUM})\s+GB/s \(sum\)(?: \[([^\]]*)\])?$")  # multi-rank: ' [hostname]'
# a PrintResults row: its first cell names it (TableHelper pads it right-aligned)
_ROW_HEAD = r"Executor: (?:Rank \d+ )?[A-Z]+ \d+|Transfer \d+|Iter \d+|StandardDev|Aggregate \(CPU\)"
_CELLED = re.compile(rf"^(?:{_ROW_HEAD})\s*[|\u2502]")
# SHOW_BORDERS=0: the same cells, blanks between them (every cell after the first starts with a digit,
# 'CUs:' or a word: no backtracking across the blanks)
_BARE_ROW = re.compile(rf"^({_ROW_HEAD})\s+({_NUM} GB/s)\s+({_NUM} ms)(?:\s+(\d+ bytes|CUs:(?: \d+:\d+)*))?"
                       r"(?:\s+(\S.*))?$")
# a TableHelper rule: '-' runs joined by box-drawing corners and tees (PrintTable's borders[])
_RULE_CHARS = frozenset("-+|\u2500\u2502\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u253c")
_ITERS_RUN = re.compile(r"^# Iters Run:\s*(\d+)$")
# " Transfer 00 |  33.520 GB/s |  2.002 ms |  67108864 bytes | G0 -> GPU00:004 -> G1"
_TRANSFER = re.compile(rf"^Transfer (\d+)\s*\|\s*({_NUM}) GB/s\s*\|\s*({_NUM}) ms\s*\|\s*(\d+) bytes\s*\|\s*"
                       r"(\S+ -> \S+ -> \S+)$")
_ITER = re.compile(rf"^Iter (\d+)\s*\|\s*({_NUM}) GB/s\s*\|\s*({_NUM}) ms\s*\|")
_AGGREGATE = re.compile(rf"^Aggregate \(CPU\)\s*\|\s*({_NUM}) GB/s\s*\|\s*({_NUM}) ms\s*\|\s*(\d+) bytes\s*\|"
                        rf"\s*Overhead:?\s*({_NUM}) ms$")
_ENV = re.compile(r"^([A-Z][A-Z0-9_]+)\s*=\s*(\S+)\s*:")
_SECTION = re.compile(r"^\[(?:Common|[A-Za-z0-9 ]+ Related)\]")
_FAILURE = re.compile(r"\[ERROR\]|^Parsing error:|(?i:hip error|\bfailed\b|segmentation fault|^aborted\b)")
_BANDWIDTH = re.compile(rf"^(Average|Aggregate)\s+bandwidth \((GPU|CPU) Timed\):\s*({_NUM}) GB/s$")
_AVG_KEY = re.compile(r"[A-Z]+->[A-Z]+")
_P2P_CELL = re.compile(r"\d+\.\d\d|N/A")  # %10.2f or N/A: a cell cut inside its decimals is not one


def _rule(line: str) -> bool:
    return line.count("-") + line.count("\u2500") >= 3 and set(line) <= _RULE_CHARS


def _row(line: str) -> str:
    """A PrintResults row as 'HEAD | GB/s | ms | bytes | rest': the v1.5x-v1.62 printf rows
    ('|' between cells) as they are, TableHelper's bordered ('\u2502') and borderless
    (SHOW_BORDERS=0) rows of later releases made like them; any other line unchanged."""
    if _CELLED.match(line):
        return " | ".join(c.strip() for c in re.split("[|\u2502]", line)).strip()
    if m := _BARE_ROW.match(line):
        return " | ".join(g or "" for g in m.groups()).strip()
    return line


def _cell(c: str) -> float | None:
    return None if c == "N/A" else float(c)


def parse_transferbench(text: str) -> dict[str, Any]:
    version = None
    matrices: list[dict[str, Any]] = []
    averages: dict[str, dict[str, float | None]] = {}
    tests: list[dict[str, Any]] = []
    errors: list[str] = []
    warnings: list[str] = []
    cur: dict[str, Any] | None = None
    title = None
    avg_keys: list[str] = []
    last_row = ""
    env: dict[str, str] = {}
    out: dict[str, Any] = {"aggregate_GBps": None, "average_GBps": None, "aggregate_cpu_GBps": None}
    scaling: dict[str, Any] | None = None
    a2a: dict[str, Any] | None = None
    mode = None
    p2p_bytes = None
    saw = False
    env_gaps: list[str] = []  # a reporter's '...' read in the env block (P2P_MODE may be behind it)
    elided: list[str] = []    # one it cannot read: lines left out (said after the cuts, which the tool's failures hide)
    ranked_at: list[Any] = [None]  # a multi-rank table's last row read (its unlabelled MAX/MIN rows)
    lines = after_end.numbered(text)
    for k, (at, raw) in enumerate(lines):
        line = raw.strip().replace("\\\\", "\\")
        if not line or line.startswith("##") or _rule(line):  # '##' comments echoed; a table's rules
            continue
        if ELISION.match(line):  # a reporter's '...': read over the env block or a2a's Test block alone
            if not matrices and (a2a is not None and a2a["bytes"] is not None or
                                 listing.beside(lines, k)[1].startswith("Summary:") or
                                 _A2A_BANNER.match(listing.beside(lines, k)[1])):
                pass  # a2a's Test block (or its whole preamble): the Summary holds each pair's bandwidth again
            elif not (tests or matrices or mode or scaling) and _in_env(lines, k):
                env_gaps.append(listing.elision(at, line))
            else:
                elided.append(listing.elision(at, line))
            continue
        if a2a is not None and line.startswith("\u2502"):
            groups = [c.strip() for c in line.strip("\u2502").split("\u2502")]
            if (ranked := ranks.header(groups)) is not None:  # a multi-rank run's table (transferbench_ranks)
                cur, mode, saw, ranked_at = ranked, "a2a", True, [None]
                matrices.append(cur)
                a2a["layout"] = "table"
                continue
            if cur is not None and cur.get("ranked") and ranks.row(cur, groups, ranked_at, errors):
                continue
            # after v1.62 the summary is one TableHelper table: '\u2502 SRC\\DST \u2502 GPU 00 ... \u2502 STotal \u2502
            # Actual \u2502', a row per GPU, 'RTotal', then the 'CPU Timed:' cell: read as the printf rows
            line = " ".join(c.strip() for c in line.strip("\u2502").split("\u2502")).strip()
            a2a["layout"] = "table"
        if a2a is not None and re.match(rf"^CPU Timed:\s*({_NUM})$", line):  # SHOW_BORDERS=0: no bars
            continue  # the table's 'CPU Timed:' cell: the 'Aggregate bandwidth (CPU Timed)' line again
        line = _row(line)
        if tests and (m := _ITERS_RUN.match(line)):  # NUM_ITERATIONS < 0: how many the time allowed
            tests[-1]["iterations_run"] = int(m.group(1))
            continue
        if m := re.match(r"^TransferBench (v[\d.]+)", line):
            version, saw = m.group(1), True
            continue
        if line.startswith("TransferBench"):
            saw = True
        if line.startswith("[WARN]"):
            warnings.append(line)
            continue
        if _SECTION.match(line):
            continue
        if m := _ENV.match(line):  # 'NAME = VALUE : description' (its text may say "error")
            env[m.group(1)] = m.group(2)
            continue
        if _FAILURE.search(line):
            errors.append(line)
            continue
        if m := re.match(r"^Bytes Per Direction[\s,]+(\d+)$", line):
            mode, p2p_bytes, saw = "p2p", int(m.group(1)), True
            continue
        if "bandwidth GB/s" in line:
            title, saw = line, True
            if "copy peak bandwidth GB/s" in line:  # RunPeerToPeerBenchmarks' tables: a p2p run even when
                mode = mode or "p2p"                # pasted without its 'Bytes Per Direction' line (PR 50)
            continue
        if m := re.match(r"^(SRC\S*DST)\s+(.*)$", line):
            cols = re.findall(_DEV, m.group(2))
            extra = ["NIC" if t.startswith("NIC(") else t
                     for t in re.findall(r"NIC\(\d+ QP\)|STotal|Actual", m.group(2))]
            cur = {"title": title or "a2a", "columns": cols, "extra": extra, "rows": {}}
            if "STotal" in extra:  # the a2a summary (its preamble may be elided): its own ends apply
                mode = "a2a"
            title = None
            matrices.append(cur)
            saw = True
            continue
        if cur is not None and (m := re.match(rf"^({_DEV})\s*(->|<->|<-|min|max|sd)?(?:\s+(.*))?$", line)):
            cells = (m.group(3) or "").split()
            want = len(cur["columns"]) + len(cur["extra"])
            cell = _P2P_CELL if cur["title"] != "a2a" else re.compile(rf"{_NUM}|N/A")
            if len(cells) != want or not all(cell.fullmatch(c) for c in cells):
                errors.append(f"matrix row '{line[:40]}': {len(cells)} cells for {want} columns (cut short)")
                continue
            vals = [_cell(c) for c in cells]
            row = dict(zip(cur["columns"], vals))
            kind = m.group(2)
            if kind in ("min", "max", "sd"):
                cur.setdefault("stats", {}).setdefault(kind, {})[last_row] = row
                continue
            last_row = m.group(1) + (f" {kind}" if kind and kind != "->" else "")
            if last_row in cur["rows"]:  # each row printed once (PrintResults): another copy spliced in (review18 #7)
                errors.append(f"matrix row '{last_row}' printed twice: the output is not as printed")
                continue
            cur["rows"][last_row] = row
            if cur["extra"]:
                cur.setdefault("row_totals", {})[last_row] = dict(zip(cur["extra"], vals[len(cur["columns"]):]))
            continue
        if cur is not None and cur["extra"] and (m := re.match(r"^RTotal\s+(.*)$", line)):
            cells = m.group(1).split()
            n = len(cur["columns"]) + len(cur["extra"]) - 2  # the devices' and the NIC's columns
            want = n + 2 if a2a is not None and a2a.get("layout") == "table" else n + 3
            if len(cells) != want or not all(re.fullmatch(_NUM, c) for c in cells):
                errors.append(f"a2a RTotal: {len(cells)} cells for {want} (cut short)")
                continue
            vals = [float(c) for c in cells]
            cur["column_totals"] = dict(zip(cur["columns"] + cur["extra"][:-2], vals[:n]))
            # v1.6x: the total, the min and max Actual; the table: STotal's and Actual's column totals
            keys = ("RTotal", "actual") if want == n + 2 else ("RTotal", "min_actual", "max_actual")
            cur["totals"] = dict(zip(keys, vals[n:]))
            continue
        if all(_AVG_KEY.fullmatch(k) for k in line.split()):  # 'CPU->CPU CPU->GPU GPU->CPU GPU->GPU'
            avg_keys = line.split()
            continue
        if avg_keys and (m := re.match(r"^Averages(?: \(During\s*(\w+)\))?:\s*(.*)$", line)):
            cells = m.group(2).split()
            if len(cells) != len(avg_keys) or not all(_P2P_CELL.fullmatch(c) for c in cells):
                errors.append(f"p2p Averages: {len(cells)} values for {len(avg_keys)} (cut short)")
                continue
            averages[m.group(1) or "all"] = dict(zip(avg_keys, (_cell(v) for v in cells)))
            if cur is not None:
                cur["closed"] = True
            continue
        if m := re.match(r"^Test (\d+):$", line):
            tests.append({"test": int(m.group(1)), "executors": [], "transfers": [], "aggregate_GBps": None})
            saw = True
            continue
        if tests and (m := _EXECUTOR.match(line)):
            tests[-1]["executors"].append({"executor": m.group(1), "GBps": float(m.group(2)), "ms": float(m.group(3)),
                                           "bytes": int(m.group(4)), "sum_GBps": float(m.group(5)),
                                           **({"host": m.group(6)} if m.group(6) is not None else {})})
            continue
        if tests and (m := _TRANSFER.match(line)):
            tests[-1]["transfers"].append({"transfer": int(m.group(1)), "GBps": float(m.group(2)),
                                           "ms": float(m.group(3)), "bytes": int(m.group(4)),
                                           "route": m.group(5).strip(), "iterations": []})
            continue
        if tests and tests[-1]["transfers"] and (m := _ITER.match(line)):
            tests[-1]["transfers"][-1]["iterations"].append(
                {"iter": int(m.group(1)), "GBps": float(m.group(2)), "ms": float(m.group(3))})
            continue
        if tests and (m := _AGGREGATE.match(line)):
            tests[-1].update(aggregate_GBps=float(m.group(1)), aggregate_ms=float(m.group(2)),
                             aggregate_bytes=int(m.group(3)), overhead_ms=float(m.group(4)))
            continue
        if m := _A2A_BANNER.match(line):
            mode, a2a, saw = "a2a", {"bytes": None, "num_cus": None, "transfers": None, "direct": None}, True
            continue
        if a2a is not None and (m := _A2A_SETTINGS.match(line)):  # after v1.62: the settings on one line
            a2a.update(bytes=int(m.group(1)), executor=m.group(2), num_cus=int(m.group(3)), layout="table",
                       ranks=int(m.group(4)) if m.group(4) else None)
            continue
        if a2a is not None and (m := re.match(r"^- Copying (\d+) bytes between (directly connected|all) pairs of "
                                              r"GPUs using (\d+) CUs \((\d+) Transfers\)$", line)):
            a2a.update(bytes=int(m.group(1)), direct=m.group(2) != "all", num_cus=int(m.group(3)),
                       transfers=int(m.group(4)))
            continue
        if re.match(r"^GPU-GFX Scaling benchmark:$", line):
            mode, scaling, saw = "scaling", {"exe": None, "bytes": None, "columns": [], "rows": [], "best": None}, True
            continue
        if scaling is not None and (m := re.match(r"^- Copying (\d+) bytes from GPU (\d+)", line)):
            scaling["bytes"], scaling["exe"] = int(m.group(1)), f"GPU {int(m.group(2)):02d}"
            continue
        if scaling is not None and (m := re.match(r"^NumCUs[\s,]+(.*)$", line)):
            scaling["columns"] = re.split(r"[\s,]+", m.group(1).strip())
            continue
        if scaling is not None and scaling["columns"] and (m := re.match(r"^(\d+)[\s,]+(\d[\d.\s,]*)$", line)):
            cells = [c for c in re.split(r"[\s,]+", m.group(2).strip()) if c]
            if len(cells) != len(scaling["columns"]) or not all(re.fullmatch(r"\d+\.\d\d", c) for c in cells):
                errors.append(f"scaling: NumCUs {m.group(1)}: {len(cells)} cells for "
                              f"{len(scaling['columns'])} devices (cut short)")
                continue
            scaling["rows"].append({"num_cus": int(m.group(1)), "GBps": dict(zip(scaling["columns"], map(float, cells)))})
            continue
        if scaling is not None and (m := re.match(r"^Best[\s,]+(.*)$", line)):
            best = re.findall(r"(\d+\.\d\d)\(\s*(\d+)\)", m.group(1))
            if len(best) != len(scaling["columns"]) or not m.group(1).rstrip(", ").endswith(")"):
                errors.append(f"scaling: Best has {len(best)} of {len(scaling['columns'])} cells (cut short)")
                continue
            scaling["best"] = {c: {"GBps": float(b), "num_cus": int(n)} for c, (b, n) in zip(scaling["columns"], best)}
            continue
        if m := _BANDWIDTH.match(line):
            key = {("Average", "GPU"): "average_GBps", ("Aggregate", "GPU"): "aggregate_GBps",
                   ("Aggregate", "CPU"): "aggregate_cpu_GBps"}.get((m.group(1), m.group(2)))
            if key:
                out[key] = float(m.group(3))
    if not saw:
        raise ParseError("no TransferBench header, matrix or Test rows", tool="transferbench")
    if mode is None and tests:
        mode = "config"
    p2p_mode = int(env["P2P_MODE"]) if env.get("P2P_MODE", "").isdecimal() else None
    if title is not None and not errors:  # a p2p table's title line is followed by its header and rows
        errors.append(f"'{title[:40]}' without its table (cut short)")
    if mode == "p2p" and p2p_mode is None:  # the env block's '...' may stand for P2P_MODE: its tables unknown
        elided = env_gaps + elided
    errors += _cut_short(mode, matrices, tests, scaling, out, p2p_mode, errors) + elided
    for table in matrices:
        table.pop("extra")
    return {"tool": "transferbench", "version": version, "mode": mode, "matrices": matrices, "averages": averages,
            "p2p_bytes": p2p_bytes, "p2p_mode": p2p_mode, "a2a": a2a, "tests": tests, "scaling": scaling, **out,
            "warnings": warnings, "errors": errors}


# AllToAll.hpp after v1.62: 'GPU-%s All-To-All benchmark:', a 30 '=' rule, then '[%lu bytes per Transfer] [%s:%d]
# [%d Read(s) %d Write(s)] [MemType:%s] [NIC QueuePairs:%d] [#Ranks:%d]' (v1.6x's Summary line carried the first ones)
_A2A_BANNER = re.compile(r"^GPU-(?:GFX|DMA) All-To-All benchmark:$")
_A2A_SETTINGS = re.compile(r"^\[(\d+) bytes per Transfer\] \[(GFX|DMA):(\d+)\].*?(?:\[#Ranks:(\d+)\])?$")


def _in_env(lines: list[tuple[int, str]], k: int) -> bool:
    """Whether the '...' on ``lines[k]`` stood in DisplayEnvVars' block, whose lines carry no value
    read but P2P_MODE (the caller's check): between the version line, its rule, a section or an env
    line and an env line, a section, or the first line after the block (a Test, a preset's banner)."""
    prev, nxt = listing.beside(lines, k)
    return bool(prev.startswith("TransferBench") or set(prev) == {"="} or _SECTION.match(prev) or _ENV.match(prev)) and \
        bool(_ENV.match(nxt) or _SECTION.match(nxt) or nxt.startswith("##") or
             re.match(r"^(?:Test \d+:|Bytes Per Direction|GPU-(?:GFX|DMA) (?:All-To-All|Scaling) benchmark:)", nxt))


def _cut_short(mode: str | None, matrices: list[dict[str, Any]], tests: list[dict[str, Any]],
               scaling: dict[str, Any] | None, out: dict[str, Any], p2p_mode: int | None,
               errors: list[str]) -> list[str]:
    """The ends the grammar names that the output lacks (see the module): one line each."""
    if errors:  # the tool stopped on its failure: what follows it was never printed
        return []
    found = []
    if not matrices and not tests and not (scaling and scaling["rows"]):
        found.append("no results (truncated output?)")
    for t in tests:  # a Test block ends with its "Aggregate (CPU)" line
        if t["aggregate_GBps"] is None:
            found.append(f"Test {t['test']}: no 'Aggregate (CPU)' line (cut short)")
    if scaling is not None and scaling["best"] is None:
        found.append("scaling: no 'Best' line after the NumCUs rows (cut short)")
    if mode == "p2p":
        found += [f"p2p: '{(m['title'] or '')[:40]}' has no Averages line (cut short)"
                  for m in matrices if not m.get("closed")]
        want = {0: 2, 1: 1, 2: 1}.get(p2p_mode if p2p_mode is not None else -1)
        if want is not None and len(matrices) < want:
            found.append(f"p2p: {len(matrices)} of the {want} tables P2P_MODE={p2p_mode} prints (cut short)")
    if mode == "a2a":
        m = matrices[-1] if matrices else None
        if m is not None and m.get("ranked"):
            found += ranks.not_whole(m)
        if m is None or "totals" not in m or len(m["rows"]) != len(m["columns"]):
            found.append("a2a: the summary matrix and its RTotal line are not whole (cut short)")
        elif out["aggregate_cpu_GBps"] is None:
            found.append("a2a: no 'Aggregate bandwidth (CPU Timed)' line (cut short)")
    return found
