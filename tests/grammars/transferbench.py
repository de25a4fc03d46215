"""TransferBench, from its grammar (sncheck/vendors/amd/transferbench.py: TransferBench.cpp and
EnvVars.hpp @ v1.52, the v1.6x client's AllToAll.hpp and PrintResults): the env listing (or
HIDE_ENV), a config run's Tests (Executor / Transfer / Iter / StandardDev / Aggregate rows,
v1.52's and v1.62's route and width, the pre-v1.51 rows without Executor lines), the p2p tables
(P2P_MODE, CPUs, SHOW_ITERATIONS' min/max/sd rows, remote read, DMA), the a2a summary (v1.52,
v1.62 with its Test 1 block and optional NIC column, direct or all pairs) and the scaling sweep,
on 1 to 72 GPUs; the bordered and SHOW_BORDERS=0 Test tables of releases after v1.62
(Utilities.hpp's TableHelper, ported below: multi-rank, SHOW_ITERATIONS, '# Iters Run'); the
[ERROR], 'Parsing error:' and [WARN] lines."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from grammars import ALL, Variant, generator

_ENV = (("ALWAYS_VALIDATE", 0, "Validating after all iterations"), ("BLOCK_BYTES", 256, "Each CU gets a multiple "
        "of 256 bytes to copy"), ("CONTINUE_ON_ERROR", 0, "Stop after first error"), ("GFX_UNROLL", 4, "Using GFX "
        "unroll factor of 4"), ("NUM_ITERATIONS", 10, "Running 10  timed iteration(s)"), ("NUM_WARMUPS", 3,
        "Running 3 warmup iteration(s) per Test"), ("SHOW_ITERATIONS", 0, "Hiding per-iteration timing"),
        ("USE_SINGLE_STREAM", 1, "Using single stream per device"))


def _env(version: str, hide: bool, extra: tuple[tuple[str, Any, str], ...] = (), section: str = "") -> list[str]:
    """DisplayEnvVars: the version and its rule, then (unless HIDE_ENV) '[Common]' and a
    '%-20s = %12d : %s' line per variable, a blank; a preset's own section after it."""
    out = [f"TransferBench {version}", "=" * 63]
    if hide:
        return out
    out.append("[Common]                              (Suppress by setting HIDE_ENV=1)")
    out += [f"{n:<20} = {v:>12} : {d}" for n, v, d in _ENV] + [""]
    if section:
        out += [f"[{section}]"] + [f"{n:<20} = {v:>12} : {d}" for n, v, d in extra] + [""]
    return out


def _route(v152: bool, exe: str, idx: int, cus: int, src: str, dst: str, sub: str = "") -> str:
    """'SRC -> EXE:CUs -> DST': v1.52 prints the executor's name ('GPU00', 'DMA00.*'), v1.6x its
    letter and three digits ('G000', 'D000.1')."""
    name = f"{exe}{idx:02d}" if v152 else f"{exe[0]}{idx:03d}"
    return f"{src} -> {name}{sub}:{cus:03d} -> {dst}"


def _test(rng: random.Random, num: int, v152: bool, old: bool, iters: bool, ngpu: int) -> tuple[list[str], dict]:
    """One Test block (ReportResults / PrintResults) and the values it carries."""
    lines = [f"Test {num}:"]
    width = 7 if v152 else 8
    executors = rng.sample(range(ngpu), k=min(ngpu, rng.randint(1, 3)))
    t_idx, total_bytes = 0, 0
    first: dict[str, Any] = {}
    for e in executors:
        kind = rng.choice(("GPU", "GPU", "DMA", "CPU"))
        nbytes = rng.choice((1 << 20, 1 << 26, 1 << 28))
        n = rng.randint(1, 2)
        bws = [round(rng.uniform(10, 1500), 3) for _ in range(n)]
        if not old:
            lines.append(f" Executor: {kind:>3} {e:02d} | {min(bws):{width}.3f} GB/s | {nbytes / min(bws) / 1e6:8.3f} ms"
                         f" | {nbytes * n:12d} bytes | {sum(bws):<7.3f} GB/s (sum)")
        for bw in bws:
            sub = (".*" if v152 else ".1") if kind == "DMA" and rng.random() < 0.5 else ""
            dst = rng.choice(("G1", "N", "G0G1", "C0"))
            route = _route(v152, kind, e, rng.choice((1, 4, 8, 32)), f"G{e}" if kind != "CPU" else f"C{e}", dst, sub)
            lines.append(f"     Transfer {t_idx:02d}  | {bw:{width}.3f} GB/s | {nbytes / bw / 1e6:8.3f} ms | "
                         f"{nbytes:12d} bytes | {route}")
            first = first or {"GBps": bw, "route": route}
            if iters:
                for it in rng.sample(range(1, 11), 3):
                    cus = "" if old else " CUs: 00:01 00:02"
                    lines.append(f"      Iter {it:03d}    | {bw * 1.01:{width}.3f} GB/s | {nbytes / bw / 1e6:8.3f} ms |"
                                 + (f"{cus} XCCs: 00" if not old else ""))
                lines.append("      StandardDev |    4.887e-03 |" if old else
                             f"      StandardDev | {0.123:{width}.3f} GB/s | {0.002:8.3f} ms |")
            t_idx += 1
            total_bytes += nbytes
    agg = round(rng.uniform(10, 1500), 3)
    lines.append(f" Aggregate (CPU)  | {agg:{width}.3f} GB/s | {total_bytes / agg / 1e6:8.3f} ms | {total_bytes:12d} "
                 f"bytes | Overhead: {rng.uniform(0, 1):.3f} ms")
    return lines, {"agg": agg, "bytes": total_bytes, "transfers": t_idx, **first}


# TableHelper::PrintTable (src/client/Utilities.hpp, releases after v1.62): borders[mask], mask =
# TOP 1 | BOT 2 | LEFT 4 | RIGHT 8 of the rules meeting there; rules are '-', columns '\u2502'
_BORDERS = (" ", "\u2502", "\u2502", "\u2502", "-", "\u2518", "\u2510", "\u2524", "-", "\u2514", "\u250c", "\u251c", "-",
            "\u2534", "\u252c", "\u253c")


def _print_table(cells: list[list[str]], left: set[tuple[int, int]], rows: dict[int, set[int]],
                 cols: dict[int, set[int]], borders: bool, center: frozenset[int] = frozenset()) -> list[str]:
    """PrintTable: a rule above each row that has one (when SHOW_BORDERS), then the row's cells
    (right-aligned but those in ``left``), '\u2502' or ' ' before each column and after the last."""
    n, k = len(cells), len(cells[0])
    width = [max(len(r[c]) for r in cells) for c in range(k)]
    out = []
    for r in range(n + 1):
        if borders and rows.get(r):
            line = ""
            for c in range(k + 1):
                mask = ((r - 1 in cols.get(c, ())) | (r in cols.get(c, ())) << 1 | (c - 1 in rows[r]) << 2
                        | (c in rows[r]) << 3)
                line += _BORDERS[mask] + (("-" if c in rows[r] else " ") * width[c] if c < k else "")
            out.append(line)
        if r == n:
            break
        line = ""
        for c in range(k + 1):
            line += "\u2502" if borders and r in cols.get(c, ()) else " "
            if c < k:
                gap = width[c] - len(cells[r][c])
                lgap = 0 if (r, c) in left else gap // 2 if c in center else gap  # SetColAlignment(ALIGN_CENTER)
                line += " " * lgap + cells[r][c] + " " * (gap - lgap)
        out.append(line)
    return out


def _table_test(rng: random.Random, num: int, ngpu: int, borders: bool, ranks: int, iters: bool,
                timed: bool) -> tuple[list[str], dict]:
    """PrintResults of a release after v1.62: 'Test N:' then one TableHelper table of 5 columns
    (rules under each executor's row, after each Transfer's iterations and around the Aggregate
    row; '# Iters Run:' under it when NUM_ITERATIONS < 0), ``ranks`` > 1 naming each rank."""
    cells: list[list[str]] = []
    left: set[tuple[int, int]] = set()
    rows: dict[int, set[int]] = {}
    rule = lambda r: rows.setdefault(r, set()).update(range(5))  # noqa: E731 -- DrawRowBorder
    first: dict[str, Any] = {}
    total, t_idx, hosts = 0, 0, {}
    for e in sorted(rng.sample(range(ngpu), k=min(ngpu, rng.randint(1, 3)))):
        kind, letter = rng.choice((("GPU", "G"), ("GPU", "G"), ("DMA", "D"), ("CPU", "C")))
        rank = rng.randrange(ranks)
        nbytes = rng.choice((1 << 20, 1 << 26, 1 << 28))
        # SHOW_ITERATIONS: the version read sizes its table for one Transfer per executor (rows past it
        # are dropped, the Aggregate row among them): one here
        bws = [round(rng.uniform(10, 1500), 3) for _ in range(1 if iters else rng.randint(1, 2))]
        rule(len(cells))
        host = f"node{rank:03d}"
        if ranks > 1:
            cells.append([f" Executor: Rank {rank} {kind:>3} {e:02d} ", "", "", "", f" {sum(bws):7.3f} GB/s (sum) [{host}]"])
            hosts[f"Rank {rank} {kind} {e:02d}"] = host
        else:
            cells.append([f" Executor: {kind:>3} {e:02d} ", "", "", "", f" {sum(bws):7.3f} GB/s (sum)"])
        cells[-1][1:4] = [f"{min(bws):8.3f} GB/s ", f"{nbytes / min(bws) / 1e6:8.3f} ms ", f"{nbytes * len(bws):12d} bytes "]
        left.add((len(cells) - 1, 4))
        rule(len(cells))
        for bw in bws:
            sub = f".{rng.randrange(4)}" if kind == "DMA" and rng.random() < 0.5 else ""
            src, dst = (f"R{rank}", f"R{(rank + 1) % ranks}") if ranks > 1 else ("", "")
            exe = f"R{rank}{letter}{e}" if ranks > 1 else f"{letter}{e}"
            route = f"{src}{'C' if kind == 'CPU' else 'G'}{e} -> {exe}{sub}:{rng.choice((1, 4, 8, 32))} -> {dst}G{(e + 1) % ngpu}"
            cells.append([f"Transfer {t_idx:<4d} ", f"{bw:8.3f} GB/s ", f"{nbytes / bw / 1e6:8.3f} ms ",
                          f"{nbytes:12d} bytes ", f" {route}"])
            left.add((len(cells) - 1, 4))
            first = first or {"GBps": bw, "route": route}
            if iters:
                for it in rng.sample(range(1, 11), 3):
                    cus = " CUs: 0:01 1:02 " if kind == "GPU" else ""
                    cells.append([f"Iter {it:03d}    ", f"{bw * 1.01:8.3f} GB/s ", f"{nbytes / bw / 1e6:8.3f} ms ", cus,
                                  " XCCs: 0 1" if cus else ""])
                cells.append(["StandardDev ", f"{0.123:8.3f} GB/s ", f"{0.002:8.3f} ms ", "", ""])
                rule(len(cells))
            t_idx += 1
            total += nbytes
    agg = round(rng.uniform(10, 1500), 3)
    rule(len(cells))
    cells.append(["Aggregate (CPU) ", f"{agg:8.3f} GB/s ", f"{total / agg / 1e6:8.3f} ms ", f"{total:12d} bytes ",
                  f" Overhead {rng.uniform(0, 1):.3f} ms"])
    left.add((len(cells) - 1, 4))
    rule(len(cells))
    cols = {c: set(range(len(cells))) for c in range(1, 5)}  # DrawColBorder(1..4)
    ran = rng.randint(50, 5000)
    if timed:  # '# Iters Run:' with no column rules (SetCellBorder(.., 0)), a rule above and below it
        cells.append(["# Iters Run:", f"{ran} ", "", "", ""])
        left.add((len(cells) - 1, 1))
        for c in cols.values():
            c.discard(len(cells) - 1)
        rule(len(cells))
    lines = [f"Test {num}:"] + _print_table(cells, left, rows, cols, borders)
    end = len(lines) - (borders + (1 + borders if timed else 0))  # through the Aggregate row
    return lines, {"agg": agg, "bytes": total, "transfers": t_idx, "end": end, "ran": ran if timed else None,
                   "hosts": hosts, **first}


@generator("transferbench")
def bordered_run(rng: random.Random) -> Iterator[Variant]:
    """A config run of a release after v1.62 (its version string stands in: the tag is not read)."""
    shapes = ((True, 1, False, False), (False, 1, True, True), (True, 4, False, True), (True, 1, True, False))
    for borders, ranks, iters, timed in shapes if ALL else rng.sample(shapes, 2):
        version = rng.choice(("v1.64.00", "v1.66.00"))
        ngpu = rng.choice((1, 8, 72))
        lines = _env(version, True)
        values: list[tuple[str, Any]] = [("version", version), ("mode", "config")]
        ntests = rng.randint(1, 3)
        end = 0
        for k in range(1, ntests + 1):
            start = len(lines)
            block, vals = _table_test(rng, k, ngpu, borders, ranks, iters, timed)
            lines += block
            end = start + vals["end"]
            values += [(f"tests[test={k}].aggregate_GBps", vals["agg"]),
                       (f"tests[test={k}].aggregate_bytes", vals["bytes"]),
                       (f"len(tests[test={k}].transfers)", vals["transfers"]),
                       (f"tests[test={k}].transfers[0].GBps", vals["GBps"]),
                       (f"tests[test={k}].transfers[0].route", vals["route"])]
            if vals["ran"] is not None:
                values.append((f"tests[test={k}].iterations_run", vals["ran"]))
            for exe, host in vals["hosts"].items():
                values.append((f"tests[test={k}].executors[executor={exe}].host", host))
        values.append(("len(tests)", ntests))
        yield Variant("transferbench", f"config {version} {'bordered' if borders else 'SHOW_BORDERS=0'} {ranks} "
                      f"rank(s) {ngpu} GPUs {ntests} tests{' iters' if iters else ''}{' timed' if timed else ''}",
                      "\n".join(lines) + "\n", tuple(values), count=ntests, end=end)

@generator("transferbench")
def config_run(rng: random.Random) -> Iterator[Variant]:
    for version in ("v1.50", "v1.52", "v1.62.00"):
        v152, old = version != "v1.62.00", version == "v1.50"
        for hide, iters in ((False, False), (True, True)) if ALL else (rng.choice(((False, False), (True, True))),):
            ngpu = rng.choice((1, 8, 72))
            lines = _env(version, hide)
            values: list[tuple[str, Any]] = [("version", version), ("mode", "config")]
            ntests = rng.randint(1, 4)
            for k in range(1, ntests + 1):
                if rng.random() < 0.5:
                    lines.append(f"## Test {k}: a copy between GPUs, none failed")  # a comment, echoed
                if rng.random() < 0.2:
                    lines.append(f"[WARN] GFX executor 0 requesting {k * 80} total subexecutors, however only has "
                                 "64.  Some Transfers may be serialized")
                block, vals = _test(rng, k, v152, old, iters, ngpu)
                lines += block
                values += [(f"tests[test={k}].aggregate_GBps", vals["agg"]),
                           (f"tests[test={k}].aggregate_bytes", vals["bytes"]),
                           (f"len(tests[test={k}].transfers)", vals["transfers"]),
                           (f"tests[test={k}].transfers[0].GBps", vals["GBps"]),
                           (f"tests[test={k}].transfers[0].route", vals["route"])]
            values.append(("len(tests)", ntests))
            name = f"config {version} {ngpu} GPUs {ntests} tests{' hide-env' if hide else ''}{' iters' if iters else ''}"
            yield Variant("transferbench", name, "\n".join(lines) + "\n", tuple(values), count=ntests,
                          elide=(2, len(_env(version, hide)) - 1) if not hide else None)
    # failures: a Transfer that cannot be parsed (v1.52), a HIP error mid-run, a data mismatch
    head = _env("v1.52", True)
    yield Variant("transferbench", "parsing error", "\n".join(head + [
        "Parsing error: Unable to read valid Transfer 1 (SRC EXE DST) triplet"]) + "\n",
        (("len(tests)", 0),), fails=True)
    block, vals = _test(rng, 1, False, False, False, 8)
    lines = _env("v1.62.00", False) + block  # PrintErrors after the Test's results: the run is whole before it
    yield Variant("transferbench", "HIP error after a Test", "\n".join(lines + [
        "[ERROR] HIP Error: invalid resource handle"]) + "\n",
        (("tests[test=1].aggregate_GBps", vals["agg"]),), fails=True, count=1, end=len(lines))
    yield Variant("transferbench", "mismatch", "\n".join(_env("v1.52", True) + ["Test 1:", "",
        "[ERROR] Unexpected mismatch at index 1024 of destination array 0:",
        "[ERROR] EXPECTED value:   31.00000 [41F80000]", "[ERROR] DST 00   value:    0.00000 [00000000]",
        "[ERROR] Failed Transfer details: #0: G0 -> [G0:4] -> G1",
        "[ERROR] Possible cause is misconfigured IOMMU (AMD Instinct cards require amd_iommu=on and iommu=pt)"]) + "\n",
        (("len(tests)", 1),), fails=True)


def _p2p_table(rng: random.Random, ncpu: int, ngpu: int, bidir: bool, iters: bool, read: str, exe: str,
               title_case: int) -> tuple[list[str], dict[str, dict[str, float | None]]]:
    """RunPeerToPeerBenchmarks' table: title, header, rows (CPU rows, a blank, GPU rows), keys, Averages."""
    devs = [("CPU", i) for i in range(ncpu)] + [("GPU", i) for i in range(ngpu)]
    name = "Bi" if bidir else "Uni"
    lines = [f"{name}directional copy peak bandwidth GB/s [{read} read / {'Remote' if read == 'Local' else 'Local'} "
             f"write] (GPU-Executor: {exe})"]
    head = "SRC\\DST" if bidir else ("SRC\\EXE+DST" if read == "Remote" else "SRC+EXE\\DST")
    cols = "".join(f"{t:>7} {i:02d}" + ("   " if t == "CPU" and i == ncpu - 1 else "") for t, i in devs)
    lines.append(f"{head:>12}{cols}")
    rows: dict[str, dict[str, float | None]] = {}

    def row(values: list[float | None]) -> str:  # '%10.2f' or N/A, three blanks before the first GPU
        return "".join(("   " if k == ncpu and k else "") + (f"{v:10.2f}" if v is not None else f"{'N/A':>10}")
                       for k, v in enumerate(values))
    for s, (st, si) in enumerate(devs):
        if s == ncpu and s:
            lines.append("")
        for d, arrow in enumerate(("->", "<-") if bidir else ("->",)):
            cells = {f"{t} {i:02d}": (None if bidir and (st, si) == (t, i) else round(rng.uniform(20, 1700), 2))
                     for t, i in devs}
            lines.append(f"{st:>5} {si:02d} {'<- ' if arrow == '<-' else ' ->'}{row(list(cells.values()))}")
            rows[f"{st} {si:02d}" + (" <-" if arrow == "<-" else "")] = cells
            if iters:
                for stat in ("min", "max", " sd"):
                    lines.append(f"{st:>5} {si:02d} {stat}" + row([1.0] * len(devs)))
        if bidir:
            lines.append(f"{st:>5} {si:02d} <->" + row([None if bidir and k == s else 10.0 for k in range(len(devs))]))
            if s < len(devs) - 1:
                lines.append("")
    lines.append(" " * 25 + "".join(f"  {a}PU->{b}PU" for a in "CG" for b in "CG"))
    avg = ["N/A" if ncpu == 0 and "C" in (a, b) else f"{rng.uniform(20, 60):.2f}" for a in "CG" for b in "CG"]
    lines.append(f"Averages (During {' BiDir' if bidir else 'UniDir'}):" + "".join(f"{x:>10}" for x in avg))
    lines += [""] if title_case else ["", ""]
    return lines, rows


@generator("transferbench")
def p2p(rng: random.Random) -> Iterator[Variant]:
    # 72 GPUs (a 74-column table) in the sweep only: the plain run's time is shared by every view
    for ncpu, ngpu, mode, hide, iters in ((2, 4, 0, False, False), (0, 1, 1, False, True), (1, 4, 2, True, False),
                                          (0, 4, 0, True, True)) + (((2, 72, 1, False, False),) if ALL else ()):
        read, exe = rng.choice((("Local", "GFX"), ("Remote", "GFX"), ("Local", "DMA")))
        lines = _env("v1.52", hide, (("NUM_CPU_SE", 4, "Using 4 CPU subexecutors"), ("NUM_GPU_SE", 80, "Using 80 "
                     "GPU subexecutors"), ("P2P_MODE", mode, "Running Unidirectional + Bidirectional"),
                     ("USE_FINE_GRAIN", 0, "Using coarse-grained memory")), "P2P Related")
        nbytes = rng.choice((1 << 26, 1 << 28))
        lines.append(f"Bytes Per Direction {nbytes}")
        values: list[tuple[str, Any]] = [("mode", "p2p"), ("p2p_bytes", nbytes)]
        tables = [False, True] if mode == 0 else [mode == 2]
        end = 0
        for k, bidir in enumerate(tables):
            table, rows = _p2p_table(rng, ncpu, ngpu, bidir, iters, read, exe, k)
            lines += table
            src = rng.choice(sorted(rows))
            dst = rng.choice(sorted(rows[src]))
            values += [(f"matrices[{k}].rows.{src}.{dst}", rows[src][dst]),
                       (f"len(matrices[{k}].rows)", len(rows) + (ncpu + ngpu if bidir else 0))]  # and '<->' rows
            if k == 0 or not hide:  # under HIDE_ENV the first table may be all P2P_MODE asked for
                end = len(lines) - (1 if k else 2)
        values.append(("len(matrices)", len(tables)))
        if not hide:
            values.append(("p2p_mode", mode))
        yield Variant("transferbench", f"p2p {ncpu} CPUs {ngpu} GPUs mode {mode}{' hide-env' if hide else ''}"
                      f"{' iters' if iters else ''} {read} {exe}", "\n".join(lines) + "\n", tuple(values), end=end,
                      elide=(2, 10) if not hide else None)


@generator("transferbench")
def a2a(rng: random.Random) -> Iterator[Variant]:
    for version, n, direct, nic, hide in (("v1.52", 4, True, 0, False), ("v1.62.00", 8, False, 0, False),
                                          ("v1.62.00", 4, True, 2, True), ("v1.52", 1, True, 0, True),
                                          ("v1.62.00", 2, False, 8, False)) + ((("v1.62.00", 72, True, 0, True),) if ALL else ()):
        v152 = version == "v1.52"
        cus = rng.choice((4, 8))
        nbytes = 1 << 28
        lines = _env(version, hide)
        if not v152 and not hide:
            lines += ["[AllToAll Related]", f"{'A2A_DIRECT':<20} = {int(direct):>12} : Only using direct links", ""]
        cells = {(s, d): None if s == d or (direct and (s + d) % 3 == 0) else round(rng.uniform(30, 60), 3)
                 for s in range(n) for d in range(n)}
        count = sum(v is not None for v in cells.values())
        lines += [f"GPU-{'GFX'} All-To-All benchmark:", "=" * 26, f"- Copying {nbytes} bytes between "
                  f"{'directly connected' if direct else 'all'} pairs of GPUs using {cus} CUs ({count} Transfers)"]
        if not count:  # no pair to copy between: the preset returns there, nothing measured
            yield Variant("transferbench", f"a2a {version} {n} GPUs no Transfers", "\n".join(lines) + "\n",
                          (("mode", "a2a"), ("a2a.transfers", 0)), fails=True)
            continue
        start = len(lines)
        tested = not v152 or not hide
        block = []
        if tested:  # v1.52 prints Test 0 unless HIDE_ENV, v1.6x Test 1
            block, _ = _test(rng, 0 if v152 else 1, v152, False, False, n)
            lines += block
        lines.append("")
        lines += ["Summary:" if v152 else f"Summary: [{nbytes} bytes per Transfer] [GFX:{cus}] [1 Read(s) 1 Write(s)]"]
        lines.append("=" * (58 if v152 else 75))
        lines.append("SRC\\DST " + "".join(f" GPU {d:02d}    " for d in range(n)) + (f" NIC({nic:02d} QP)" if nic else "")
                     + "    STotal      Actual")
        nics = [round(rng.uniform(20, 40), 3) for _ in range(n)]
        totals = []
        for s in range(n):
            row = [cells[s, d] for d in range(n)] + ([nics[s]] if nic else [])
            stotal = round(sum(v for v in row if v is not None), 3)
            got = [v for v in row if v is not None]
            actual = round(min(got) * len(got), 3) if got else 0.0
            totals.append(actual)
            lines.append(f"GPU {s:02d}" + "".join(f" {v:8.3f}  " if v is not None else f" {'N/A':>8}  " for v in row)
                         + f"    {stotal:8.3f}    {actual:8.3f}")
        cols = [round(sum(cells[s, d] or 0 for s in range(n)), 3) for d in range(n)] + ([round(sum(nics), 3)] if nic else [])
        total = round(sum(cols), 3)
        lines += ["", "RTotal" + "".join(f" {v:8.3f}  " for v in cols) + f"    {total:8.3f}    {min(totals):8.3f}"
                  f"    {max(totals):8.3f}", ""]
        avg, agg_cpu = round(total / max(count, 1), 3), round(total * 0.93, 3)
        lines += [f"Average   bandwidth (GPU Timed): {avg:8.3f} GB/s", f"Aggregate bandwidth (GPU Timed): {total:8.3f} GB/s",
                  f"Aggregate bandwidth (CPU Timed): {agg_cpu:8.3f} GB/s"]
        s, d = rng.choice(sorted(cells))
        values: list[tuple[str, Any]] = [("mode", "a2a"), ("a2a.transfers", count), ("a2a.num_cus", cus),
                                         (f"matrices[0].rows.GPU {s:02d}.GPU {d:02d}", cells[s, d]),
                                         ("matrices[0].totals.RTotal", total), ("aggregate_GBps", total),
                                         ("aggregate_cpu_GBps", agg_cpu), ("len(matrices[0].rows)", n)]
        if nic:
            values.append(("matrices[0].row_totals.GPU 00.NIC", nics[0]))
        fails = rng.random() < 0.3
        end = len(lines)
        if fails:  # PrintErrors after the summary (a data mismatch found in the last validation)
            lines.append("[ERROR] Unexpected mismatch at index 0 of destination array 0:")
        yield Variant("transferbench", f"a2a {version} {n} GPUs{' direct' if direct else ''}{' NIC' if nic else ''}"
                      f"{' hide-env' if hide else ''}{' then an error' if fails else ''}",
                      "\n".join(lines) + "\n", tuple(values), fails=fails, end=end, count=1 if tested else 0,
                      elide=(start, start + len(block)) if block else None)


@generator("transferbench")
def a2a_table(rng: random.Random) -> Iterator[Variant]:
    """The a2a preset after v1.62 (src/client/Presets/AllToAll.hpp): 'GPU-GFX|DMA All-To-All benchmark:', a
    30 '=' rule, the bracketed settings line, then one TableHelper table (SRC\\DST, a column per GPU [and the
    NIC's], STotal, Actual; a row per GPU, RTotal with STotal's and Actual's column totals, the 'CPU Timed:'
    cell under the last two columns), the three bandwidth lines, PrintErrors' [WARN] lines (DMA queues)."""
    for n, exe, borders, warn in ((8, "DMA", True, True), (4, "GFX", False, False), (2, "GFX", True, False)):
        cus, nbytes = rng.choice((4, 8)), 1 << 28
        lines = ["TransferBench v1.66.00", "=" * 75, "", f"GPU-{exe} All-To-All benchmark:", "=" * 30,
                 f"[{nbytes} bytes per Transfer] [{exe}:{cus}] [1 Read(s) 1 Write(s)] [MemType:uncached GPU] "
                 "[NIC QueuePairs:0] [#Ranks:1]"]
        bw = {(a, b): None if a == b else round(rng.uniform(55, 62), 2) for a in range(n) for b in range(n)}
        k = n + 3  # SRC\DST, a column per GPU, STotal, Actual
        cells = [[" SRC\\DST "] + [f" GPU {d:02d} " for d in range(n)] + [" STotal ", " Actual "]]
        stotals, actuals = [], []
        for a in range(n):
            got = [v for b in range(n) if (v := bw[a, b]) is not None]
            stotals.append(round(sum(got), 2))
            actuals.append(round(min(got) * len(got), 2) if got else 0.0)
            cells.append([f" GPU {a:02d} "] + [f" {bw[a, b]:.2f} " if bw[a, b] is not None else " N/A "
                                                for b in range(n)] + [f" {stotals[a]:.2f} ", f" {actuals[a]:.2f} "])
        cols = [round(sum(bw[a, b] or 0 for a in range(n)), 2) for b in range(n)]
        total, cpu = round(sum(stotals), 2), round(sum(stotals) * rng.uniform(0.4, 0.9), 2)
        cells.append([" RTotal "] + [f" {v:.2f} " for v in cols] + [f" {total:.2f} ", f" {round(sum(actuals), 2):.2f} "])
        cells.append([""] * (k - 2) + [" CPU Timed: ", f" {cpu:.2f} "])
        body = set(range(n + 2))  # the header, the GPUs and RTotal: bars before SRC\DST, the GPUs, STotal, Actual
        bars = {0: body, 1: body, k - 2: body | {n + 2}, k - 1: body | {n + 2}, k: body | {n + 2}}
        rules = {0: set(range(k)), 1: set(range(k)), n + 1: set(range(k)), n + 2: set(range(k)), n + 3: {k - 2, k - 1}}
        lines += _print_table(cells, {(r, 0) for r in range(n + 2)}, rules, bars, borders)
        lines += ["", f"Average   bandwidth (GPU Timed): {total / (n * n - n):8.3f} GB/s",
                  f"Aggregate bandwidth (GPU Timed): {total:8.3f} GB/s", f"Aggregate bandwidth (CPU Timed): {cpu:8.3f} GB/s"]
        end = len(lines)
        if warn:  # PrintErrors: each DMA engine's queue warning after the lines (TransferBench's FAQ)
            lines += [f"[WARN] DMA {d} attempting {n - 1} parallel transfers, however GPU_MAX_HW_QUEUES only set to 4"
                      for d in range(n)]
        a, b = rng.choice([ab for ab in sorted(bw) if bw[ab] is not None])
        values: list[tuple[str, Any]] = [("mode", "a2a"), ("a2a.bytes", nbytes), ("a2a.num_cus", cus),
                                         ("len(matrices[0].rows)", n), (f"matrices[0].rows.GPU {a:02d}.GPU {b:02d}", bw[a, b]),
                                         ("matrices[0].row_totals.GPU 00.Actual", actuals[0]),
                                         ("matrices[0].totals.RTotal", total), ("aggregate_GBps", total),
                                         ("aggregate_cpu_GBps", cpu)] + ([("len(warnings)", n)] if warn else [])
        yield Variant("transferbench", f"a2a after v1.62 {exe} {n} GPUs{' borders' if borders else ''}",
                      "\n".join(lines) + "\n", tuple(values), end=end, count=0)


@generator("transferbench")
def a2a_ranks(rng: random.Random) -> Iterator[Variant]:
    """The a2a preset over several ranks (AllToAll.hpp after v1.62; NUM_RESULTS defaults to 1 there): each column
    a centred '(Rnk)' after it; per GPU and RTotal NUM_RESULTS MAX rows (labelled on the first), an AVG row,
    NUM_RESULTS MIN rows (labelled on the last); a MAX/MIN cell ' %.2f ' with its rank '%d ', an AVG cell alone,
    the diagonal ' N/A ' in AVG and empty in MAX/MIN (see sncheck/vendors/amd/transferbench_ranks.py)."""
    for n, nranks, res in ((2, 4, 1), (3, 4, 2)):
        nbytes, cus = 1 << 28, 8
        lines = ["TransferBench v1.66.00", "=" * 75, "", "GPU-GFX All-To-All benchmark:", "=" * 30,
                 f"[{nbytes} bytes per Transfer] [GFX:{cus}] [1 Read(s) 1 Write(s)] [MemType:uncached GPU] "
                 f"[NIC QueuePairs:0] [#Ranks:{nranks}]"]
        bw = {(r, a, b): round(rng.uniform(40, 62), 3) for r in range(nranks) for a in range(n) for b in range(n) if a != b}
        k = 1 + (n + 2) * 2
        head = [" SRC\\DST "] + [x for d in range(n) for x in (f" GPU {d:02d} ", "(Rnk)")]
        cells = [head + [" STotal ", "(Rnk)", " Actual ", "(Rnk)"]]
        rowtot = {(r, a): sum(bw[r, a, b] for b in range(n) if b != a) for r in range(nranks) for a in range(n)}
        actual = {(r, a): (n - 1) * min(bw[r, a, b] for b in range(n) if b != a) for r in range(nranks) for a in range(n)}

        def block(label: str, per_rank: list[list[float | None]]) -> list[list[str]]:
            """A GPU's (or RTotal's) rows: per_rank[c] the column's value on each rank (None: not run)."""
            out = []
            order = [sorted((v, r) for r, v in enumerate(col)) if col[0] is not None else None for col in per_rank]
            for i in range(res):  # MAX
                out.append([f" {label} MAX " if i == 0 else ""] + [x for o in order for x in (
                    (f" {o[-1 - i][0]:.2f} ", f"{o[-1 - i][1]} ") if o else ("", ""))])
            out.append([f" {label} AVG "] + [x for o in order for x in (
                (f" {sum(v for v, _ in o) / len(o):.2f} ", "") if o else (" N/A ", ""))])
            for i in range(res):  # MIN: bws[numResults-1-i]
                out.append([f" {label} MIN " if i == res - 1 else ""] + [x for o in order for x in (
                    (f" {o[res - 1 - i][0]:.2f} ", f"{o[res - 1 - i][1]} ") if o else ("", ""))])
            return out

        for a in range(n):
            cols = [[bw[r, a, b] if a != b else None for r in range(nranks)] for b in range(n)]
            cells += block(f"GPU {a:02d}", cols + [[rowtot[r, a] for r in range(nranks)],
                                                    [actual[r, a] for r in range(nranks)]])
        coltot = [[sum(bw[r, a, b] for a in range(n) if a != b) for r in range(nranks)] for b in range(n)]
        coltot += [[sum(rowtot[r, a] for a in range(n)) for r in range(nranks)],
                   [sum(actual[r, a] for a in range(n)) for r in range(nranks)]]
        cells += block("RTotal", coltot)
        cpu = round(sum(rowtot.values()) * 0.8, 2)
        cells.append([""] * (k - 2) + [" CPU Timed: ", f" {cpu:.2f} "])
        nrows = len(cells)  # 2 + (n + 1) * (1 + 2 * res)
        body = set(range(nrows - 1))
        # DrawColBorder before each GPU column, STotal, Actual and after the last; the 'CPU Timed:' cell and its value
        # sit in Actual's two columns, each with BORDER_ALL (a bar between them on that row alone)
        bars = {c: set(body) for c in [0] + [1 + 2 * d for d in range(n)] + [1 + 2 * n]}
        bars.update({k - 2: body | {nrows - 1}, k - 1: {nrows - 1}, k: body | {nrows - 1}})
        rules = {r: set(range(k)) for r in [0, 1] + [1 + (g + 1) * (1 + 2 * res) for g in range(n + 1)]}
        rules[nrows] = {k - 2, k - 1}
        lines += _print_table(cells, {(r, 0) for r in range(nrows - 1)}, rules, bars, True,
                              frozenset(range(2, k, 2)))
        total = sum(bw.values())
        lines += ["", f"Average   bandwidth (GPU Timed): {total / len(bw):8.3f} GB/s",
                  f"Aggregate bandwidth (GPU Timed): {total:8.3f} GB/s", f"Aggregate bandwidth (CPU Timed): {cpu:8.3f} GB/s"]
        avg01 = float(f"{sum(bw[r, 0, 1] for r in range(nranks)) / nranks:.2f}")
        top = max((bw[r, 1, 0], r) for r in range(nranks))
        values: list[tuple[str, Any]] = [
            ("mode", "a2a"), ("a2a.ranks", nranks), ("matrices[0].results", res), ("len(matrices[0].rows)", n),
            ("matrices[0].rows.GPU 00.GPU 01", avg01), ("matrices[0].rows.GPU 00.GPU 00", None),
            ("matrices[0].extrema.GPU 01.MAX[0].GPU 00.rank", top[1]),
            ("matrices[0].extrema.GPU 01.MAX[0].GPU 00.GBps", float(f"{top[0]:.2f}")),
            ("len(matrices[0].extrema.RTotal.MIN)", res), ("aggregate_cpu_GBps", cpu)]
        yield Variant("transferbench", f"a2a {nranks} ranks {n} GPUs NUM_RESULTS {res}", "\n".join(lines) + "\n",
                      tuple(values), count=0)


@generator("transferbench")
def scaling(rng: random.Random) -> Iterator[Variant]:
    for ncpu, ngpu, top in ((2, 4, 12), (0, 1, 3), (2, 72, 4)):
        exe = rng.randrange(ngpu)
        nbytes = 1 << 26
        cols = [f"CPU{i:02d}" for i in range(ncpu)] + [f"GPU{i:02d}" for i in range(ngpu)]
        lines = _env("v1.52", rng.random() < 0.5)
        lines += ["GPU-GFX Scaling benchmark:", "=" * 26, f"- Copying {nbytes} bytes from GPU {exe} to other devices",
                  "- All numbers reported as GB/sec", "", "NumCUs" + "".join(f"   {c}     " for c in cols)]
        best = {c: (0.0, 0) for c in cols}
        want = 0.0
        pick = (rng.randint(1, top), rng.choice(cols))
        for cu in range(1, top + 1):
            row = {c: round(rng.uniform(10, 200), 2) for c in cols}
            for c, v in row.items():
                if v > best[c][0]:
                    best[c] = (v, cu)
            lines.append(f"{cu:4d}  " + "".join(f" {v:7.2f}     " for v in row.values()))
            if (cu, pick[1]) == pick:
                want = row[pick[1]]
        lines.append(" Best " + "".join(f" {v:7.2f}({k:3d})" for v, k in best.values()))
        values = (("mode", "scaling"), ("scaling.exe", f"GPU {exe:02d}"), ("len(scaling.rows)", top),
                  (f"scaling.rows[num_cus={pick[0]}].GBps.{pick[1]}", want),
                  (f"scaling.best.{cols[-1]}.GBps", best[cols[-1]][0]))
        yield Variant("transferbench", f"scaling {ncpu} CPUs {ngpu} GPUs to {top} CUs", "\n".join(lines) + "\n", values)
