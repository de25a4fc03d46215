"""nccl-tests and rccl-tests logs, from the grammar in sncheck/vendors/nccltests/parse.py.

Layouts by version (each line's format string is the source's, see the grammar): 2.0-2.11
(per-collective columns, ``error`` as %5.0le), 2.13 (``Group``, ``#wrong``, redop and root
always), 2.14 (``[dddd:bb:dd]``), 2.16 (``Collective test starting/concluded``), 2.18
(version line, ``%-20s`` footer, memory line, ``# error:``, timestamps), 2.19 (per-iteration
columns), rccl-tests (``[0000:03:00.0]`` rank lines, ``*`` over the threshold, in-place only,
stress cycles), and the ``-J`` JSON document.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator

from grammars import Variant, generator

COLLECTIVES = {  # collective -> (redop column in the old layouts, root column in the old layouts)
    "all_reduce": (True, False), "all_gather": (False, False), "broadcast": (False, True),
    "reduce_scatter": (True, False), "alltoall": (False, False), "reduce": (True, True),
    "sendrecv": (False, False),
}
NCCL_LAYOUTS = ("2.10", "2.13", "2.14", "2.16", "2.18", "2.18-timestamps", "2.19", "2.19-per-iteration")
RCCL_LAYOUTS = ("rccl", "rccl-in-place-only", "rccl-cycles")


def _time(us: float, new: bool) -> str:
    """The time cell: 2.18's getFloatStr(…, 7), else 2.13's three precisions."""
    if new:
        for fmt in ("%7.2f", "%7.1f", "%7.0f"):
            if len(fmt % us) <= 7:
                return fmt % us
        return "%7.1e" % us
    return "%7.0f" % us if us >= 10000 else "%7.1f" % us if us >= 100 else "%7.2f" % us


def _bw(x: float, new: bool) -> str:
    if new:
        for fmt in ("%6.2f", "%6.1f", "%6.0f"):
            if len(fmt % x) <= 6:
                return fmt % x
    return "%6.2f" % x


class _Run:
    """One run's numbers, chosen from the rng; ``text()`` prints them in a layout."""

    def __init__(self, rng: random.Random, layout: str, ranks: int, collective: str, fail: str | None) -> None:
        self.rng, self.layout, self.ranks, self.collective, self.fail = rng, layout, ranks, collective, fail
        self.rccl_version: str | None = None  # rocm-systems' '# rccl-tests version' line, when lines() prints it
        self.nccl_release: str | None = None  # NCCL's own 'NCCL version X+cudaY' banner, when lines() prints it
        self.ngpus = rng.choice([g for g in (1, 2, 4, 8) if ranks % g == 0])
        self.nprocs = ranks // self.ngpus
        lo = rng.choice((8, 1024, 1 << 20))
        self.sizes = [lo << (2 * i) for i in range(rng.randint(3, 9))]
        self.peak = rng.uniform(20, 480)
        self.rows = []
        for size in self.sizes:
            halves = []
            for _ in range(2):
                busbw = round(self.peak * size / (size + (4 << 20)) + rng.uniform(0.01, 0.5), 2)
                algbw = round(busbw * rng.uniform(0.5, 1.0), 2)
                time = max(size / (algbw * 1e3) if algbw > 0 else rng.uniform(10, 90), rng.uniform(9, 40))
                halves.append({"time": time, "algbw": algbw, "busbw": busbw, "wrong": 0})
            self.rows.append(halves)
        if fail == "wrong":
            self.rows[-1][1]["wrong"] = rng.randint(1, 4096)
        self.avg = float("%g" % (sum(h[1]["busbw"] for h in self.rows) / len(self.rows)))

    @property
    def new(self) -> bool:
        return self.layout.startswith(("2.18", "2.19"))

    def devices(self) -> list[str]:
        out = []
        for r in range(self.ranks):
            host, dev = f"node{r // 8:03d}", r % 8
            bus = f"{0x1b + 0x20 * dev:02x}"
            if self.layout == "2.10":
                out.append(f"#   Rank {r:2d} Pid {4000 + r:6d} on {host:>10s} device {dev:2d} [0x{bus}] NVIDIA A100-SXM4-80GB")
            elif self.layout.startswith("rccl"):
                out.append(f"#   Rank {r:2d} Pid {4000 + r:6d} on {host:>10s} device {dev:2d} [0000:{bus}:00.0] AMD Instinct MI300X")
            elif self.layout == "2.13":
                out.append(f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on {host:>10s} device {dev:2d} [0x{bus}] NVIDIA H100 80GB HBM3")
            else:
                out.append(f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on {host:>10s} device {dev:2d} [0000:{bus}:00] "
                           "NVIDIA H100 80GB HBM3")
        return out

    def lines(self) -> tuple[list[str], int]:
        """The log's lines, and how many run through its end marker."""
        lay, prog = self.layout, f"{self.collective}_perf"
        out: list[str] = []
        if self.new:
            out.append(f"# nccl-tests version {lay[:4]}.{self.rng.randint(0, 6)} nccl-headers=22703 nccl-library=22703")
        if lay.startswith("rccl") and self.rng.random() < 0.5:
            # rocm-systems' rccl-tests (2.17.x) print nccl-tests' version line under their own name
            self.rccl_version = f"2.17.{self.rng.randint(0, 9)}-develop:f220897c9b"
            out.append(f"# rccl-tests version {self.rccl_version} rccl-headers=22803 rccl-library=22803")
        if lay >= "2.16" and not lay.startswith("rccl"):
            out.append(f"# Collective test starting: {prog}")
        common = (f"# nThread 1 nGpus {self.ngpus} minBytes {self.sizes[0]} maxBytes {self.sizes[-1]} step: 4(factor) "
                  f"warmup iters: 5 iters: 20")
        if lay == "2.10":
            out.append(common + " validation: 1 ")
        elif lay.startswith("2.19"):
            out.append(common + " agg iters: 1 validation: 1 graph: 0 unalign: 0")
        else:
            out.append(common + " agg iters: 1 validation: 1 graph: 0")
        if lay == "2.19-per-iteration":
            out.append("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ")
        out += ["#", "# Using devices", *self.devices()]
        if not lay.startswith("rccl") and self.rng.random() < 0.5:
            # NCCL's banner on rank 0 (init.cc showVersion), between the device list and the table
            self.nccl_release = f"2.{self.rng.randint(9, 29)}.{self.rng.randint(1, 9)}"
            banner = f"NCCL version {self.nccl_release}+cuda12.{self.rng.randint(0, 9)}"
            # under NCCL_DEBUG=INFO showVersion prints it as an INFO line of NCCL's log (harvest 21)
            out.append(banner if self.rng.random() < 0.5 else f"node1:21:21 [0] NCCL INFO {banner}")
        out.append("#")
        redop, root = COLLECTIVES[self.collective]
        op = "sum" if redop else "none"
        ts = lay == "2.18-timestamps"
        if lay == "2.10":
            cols = ["size", "count", "type"] + (["redop"] if redop else []) + (["root"] if root else [])
            out.append("# " + "  ".join(f"{c:>10s}" for c in cols) + "    out-of-place    in-place")
            out.append("# " + "  ".join(f"{c:>10s}" for c in cols) + "     time   algbw   busbw  error     time   algbw   busbw  error")
            out.append("#        (B)    (elements)     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
        elif lay == "2.19-per-iteration":
            out.append("#                                                        out-of-place (+ per-iteration)     in-place (+ per-iteration)")
            out.append("#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99"
                       "    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%")
            out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)"
                       "      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)")
        elif lay == "rccl-in-place-only":
            out.append("#                                                          in-place          ")
            out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong")
            out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       ")
        else:
            out.append("#                                                              out-of-place                       in-place          ")
            out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
                       + ("           timestamp" if ts else ""))
            out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "
                       + ("   %Y-%m-%d %H:%M:%S" if ts else ""))
        cycles = 2 if lay == "rccl-cycles" else 1
        for cycle in range(cycles):
            if cycle:
                out.append(f"# Testing {cycle + 1} cycle.")
            for i, (size, halves) in enumerate(zip(self.sizes, self.rows)):
                if self.fail in ("nccl-failure", "timeout") and i == len(self.sizes) - 1:
                    host = "node000"
                    out.append(f"{host}: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO "
                               "for details) / '" if self.fail == "nccl-failure" else f"{host}: Test timeout (300s) common.cu:523")
                    out.append(f" .. {host} pid 4000: Test failure common.cu:391")
                    return out, len(out)
                out.append(self.row(size, halves, op, redop, root, ts))
        if lay.startswith("rccl"):
            out.append("# Errors with asterisks indicate errors that have exceeded the maximum threshold.")
        # 2.10 prints no #wrong count: its wrong results are counted in the footer's 'Out of bounds values'
        oob = self.rng.randint(1, 9) if self.fail == "oob" or (self.fail == "wrong" and lay == "2.10") else 0
        verdict = "FAILED" if oob else "OK"
        bw_check = " FAILED" if self.fail == "min-bw" else (" OK" if self.rng.random() < 0.2 else " ")
        if self.new:
            out.append(f"# {'Out of bounds values':<20s} : {oob} {verdict}")
            out.append(f"# {'Avg bus bandwidth':<20s} : {self.avg:g}{bw_check}")
        else:
            out.append(f"# Out of bounds values : {oob} {verdict}")
            out.append(f"# Avg bus bandwidth    : {self.avg:g}{bw_check}")
        end = len(out)  # the footer ends the run; the "#" after it carries nothing
        out.append("#")
        if lay >= "2.16" and not lay.startswith("rccl"):
            out.append(f"# Collective test concluded: {prog}")
            end = len(out)
        if self.new:
            if self.rng.random() < 0.5:
                out.append("# GPU memory usage     : Initialization 1.03 GB | User-Allocated 512 MB | Collective 2.00 MB | "
                           "Total  1.53 GB")
            out.append("#")
            if self.fail == "error-line":
                # after "concluded", where a blank line says "no error": a cut before it cannot be told
                out.append("# error: NET/IB : Got completion from peer 10.0.0.2<36338> with status=12 opcode=0 len=0 "
                           "vendor err 129 (Recv)")
            else:
                out.append("")
        return out, end

    def row(self, size: int, halves: list[dict], op: str, redop: bool, root: bool, ts: bool) -> str:
        lay, new = self.layout, self.new
        count = size // 4
        if lay == "2.10":
            head = f"{size:12d}  {count:12d}  {'float':>8s}" + (f"  {op:>6s}" if redop else "") + ("  {:6d}".format(0) if root
                                                                                                   else "")
        else:
            head = f"{size:12d}  {count:12d}  {'float':>8s}  {op:>6s}  {(0 if root else -1):6d}"
        cells = ""
        for k, h in enumerate(halves):
            if lay == "rccl-in-place-only" and k == 0:
                continue
            t, a, b = _time(h["time"], new), _bw(h["algbw"], new), _bw(h["busbw"], new)
            # 2.10's 'error' column is the max error, not a count: a wrong result prints a nonzero one (1e+00)
            check = ("%5.0e" % (1.0 if h["wrong"] else 0.0) if lay == "2.10"
                     else ("%6g" % h["wrong"] if new else "%5g" % h["wrong"]))
            cells += f"  {t}  {a}  {b}  {check}"
            if lay == "2.19-per-iteration":
                cells += "  " + "  ".join(_time(h["time"] * f, True) for f in (0.9, 1.3, 1.2)) + "  " + "%7.2f" % 3.5
        if ts:
            cells += "  2025-03-03 12:00:01"
        return head + cells

    def values(self, layout_rows: bool = True) -> list[tuple[str, object]]:
        v: list[tuple[str, object]] = [("collective", self.collective), ("ranks", self.ranks)]
        # the last rank's device line: its Pid, and its Group where the layout prints one (issue 28's spot-check)
        last_rank = self.ranks - 1
        v += [(f"devices[rank={last_rank}].pid", 4000 + last_rank),
              (f"devices[rank={last_rank}].group", None if self.layout == "2.10" or self.layout.startswith("rccl") else 0)]
        if self.rccl_version:
            v += [("version", self.rccl_version), ("nccl_version", 22803)]
        if self.nccl_release:
            v.append(("nccl_release", self.nccl_release))
        if self.fail in ("nccl-failure", "timeout"):
            v.append(("len(rows)", len(self.sizes) - 1))
            return v
        n = len(self.sizes) * (2 if self.layout == "rccl-cycles" else 1)
        v += [("len(rows)", n), ("avg_busbw_GBps", self.avg)]
        last, halves = self.sizes[-1], self.rows[-1]
        if self.layout != "rccl-in-place-only":
            v.append((f"rows[size_bytes={last}].out_of_place.busbw_GBps", float(_bw(halves[0]["busbw"], self.new))))
        v.append((f"rows[size_bytes={last}].in_place.busbw_GBps", float(_bw(halves[1]["busbw"], self.new))))
        if self.layout != "2.10":
            v.append((f"rows[size_bytes={last}].in_place.wrong", halves[1]["wrong"]))
        return v


FAILURES = (None, None, None, "wrong", "oob", "min-bw", "nccl-failure", "timeout", "error-line")


def _runs(rng: random.Random, layouts: tuple[str, ...], tool: str) -> Iterator[Variant]:
    for layout in layouts:
        for ranks in rng.sample((1, 2, 8, 16, 72), 2):
            fail = rng.choice(FAILURES)
            if fail == "error-line" and not layout.startswith(("2.18", "2.19")):
                fail = "oob"
            collective = rng.choice(sorted(COLLECTIVES))
            run = _Run(rng, layout, ranks, collective, fail)
            lines, end = run.lines()
            text = "\n".join(lines) + ("\n" if lines[-1] else "")
            dev = next(i for i, ln in enumerate(lines) if "Using devices" in ln) + 1
            named = layout >= "2.16" and not layout.startswith("rccl")  # "# Collective test starting: ..."
            yield Variant(tool, f"{layout} {collective} {ranks} ranks{' ' + fail if fail else ''}", text,
                          tuple(run.values()), fails=fail is not None, end=end,
                          elide=(dev + 1, dev + ranks - 1) if ranks > 2 else None,
                          hints={} if named else {"collective": collective})


@generator("nccl-tests")
def prepend_rank_chunks(rng: random.Random) -> Iterator[Variant]:
    """MPICH hydra's -prepend-rank labels each chunk a rank writes: a row, printed in three pieces
    (common.cu: its size/count/type/redop/root, then each half's timing), carries '[0] ' before
    each piece (nccl#1453); every other line one label at its start."""
    run = _Run(rng, "2.18", 1, "all_reduce", None)
    lines, end = run.lines()

    def pieced(ln: str) -> str:
        tokens = ln.split()
        if ln.startswith("#") or not tokens or not tokens[0].isdigit() or len(tokens) < 12:
            return ln
        head, oop, ip = tokens[:-8], tokens[-8:-4], tokens[-4:]
        return f"{'  '.join(head)}[0]   {'  '.join(oop)}[0]   {'  '.join(ip)}"
    # the label at each line's start is the delivery's (DELIVERIES' 'mpiexec -prepend-rank' puts it back): the
    # output holds the labels hydra put before the second and third piece of each row
    text = "\n".join(pieced(ln) for ln in lines) + ("\n" if lines[-1] else "")
    yield Variant("nccl-tests", "rows in pieces under -prepend-rank", text, tuple(run.values()), end=end)
    # Open MPI's --tag-output alike (orte/mca/iof/base/iof_base_output.c: the tag at each forwarded chunk's start and
    # after each newline in it): '[1,0]<stdout>:' before the second and third piece of a row (harvest 30); the tag at
    # each line's start is the delivery's, as above (DELIVERIES' 'mpirun --tag-output')
    tag = "[1,0]<stdout>:"
    tagged = text.replace("[0]   ", tag + "   ")
    yield Variant("nccl-tests", "rows in pieces under --tag-output", tagged, tuple(run.values()), end=end)
    # the MPI library's line at MPI_Finalize after the run (Cray MPICH's; Open MPI's HPE counters print 'OpenMPI ...')
    summary = f"{rng.choice(('MPICH', 'OpenMPI'))} Slingshot Network Summary: {rng.randrange(0, 200)} network timeouts"
    text = "\n".join(lines[:end]) + f"\n\n{summary}\n\n"
    yield Variant("nccl-tests", "the MPI library's Slingshot summary after the run", text, tuple(run.values()), end=end)


@generator("nccl-tests")
def nccl_tests(rng: random.Random) -> Iterator[Variant]:
    yield from _runs(rng, NCCL_LAYOUTS, "nccl-tests")
    yield from _json_report(rng)
    yield from _json_fork(rng)


def _json_fork(rng: random.Random) -> Iterator[Variant]:
    """The --json of NVIDIA/nccl-tests PR #318's fork: a text preamble, then one object."""
    run = _Run(rng, "2.18", 8, "alltoall", None)
    bench = {}
    for size, (oop, ip) in zip(run.sizes, run.rows):
        bench[str(size)] = {"count": size // 4, "type": "float", "redop": "none", "root": "-1",
                            **{f"{p}_{k}": h[k2] for p, h in (("oop", oop), ("ip", ip))
                               for k, k2 in (("time", "time"), ("algbw", "algbw"), ("busbw", "busbw"))},
                            "oop_error": 0.0, "ip_error": "N/A"}
    doc = {"identifier": "nccl-tests structured output", "version": "2.26.6", "benchmark": [bench]}
    text = ("[root@node1 ~]# NCCL_DEBUG=WARN ./nccl_alltoall_perf -b 32M -e 128M -f 2 -g 8 --json\n"
            "NCCL version 2.26.6+cuda12.4\n" + json.dumps(doc) + "\n")
    last = run.sizes[-1]
    yield Variant("nccl-tests", "fork --json", text,
                  (("version", "2.26.6"), ("collective", "alltoall"), ("len(rows)", len(run.sizes)),
                   (f"rows[size_bytes={last}].in_place.busbw_GBps", run.rows[-1][1]["busbw"])))


@generator("rccl-tests")
def rccl_tests(rng: random.Random) -> Iterator[Variant]:
    yield from _runs(rng, RCCL_LAYOUTS, "rccl-tests")
    yield from _json_lines(rng)


def _json_lines(rng: random.Random) -> Iterator[Variant]:
    """rccl-tests --output_format json: one object a line and half (PR #93's keys)."""
    for gpus in (4, 8):
        run = _Run(rng, "rccl", gpus, "all_reduce", None)
        lines = []
        for size, halves in zip(run.sizes, run.rows):
            for in_place, h in enumerate(halves):
                lines.append(json.dumps({"#wrong": str(h["wrong"]), "algBw": h["algbw"], "busBw": h["busbw"],
                                         "gpus": gpus, "inPlace": in_place, "name": "AllReduce", "redop": "sum",
                                         "size": size, "time": h["time"], "type": "float"}, sort_keys=True))
        last = run.sizes[-1]
        yield Variant("rccl-tests", f"JSON lines {gpus} GPUs", "\n".join(lines) + "\n",
                      (("name", "AllReduce"), ("collective", "all_reduce"), ("ranks", gpus), ("len(rows)", len(run.sizes)),
                       (f"rows[size_bytes={last}].in_place.busbw_GBps", run.rows[-1][1]["busbw"])),
                      count=len(run.sizes))


def _json_report(rng: random.Random) -> Iterator[Variant]:
    """nccl-tests -J FILE (2.17 on): one object, util.cu's jsonKey order."""
    for ranks, fail in ((8, None), (16, "oob")):
        run = _Run(rng, "2.18", ranks, "all_reduce", fail)
        results = [{"size": s, "count": s // 4, "type": "float", "redop": "sum", "root": "    -1",
                    "out_of_place": {"time": h[0]["time"], "alg_bw": h[0]["algbw"], "bus_bw": h[0]["busbw"],
                                     "nwrong": float(h[0]["wrong"])},
                    "in_place": {"time": h[1]["time"], "alg_bw": h[1]["algbw"], "bus_bw": h[1]["busbw"],
                                 "nwrong": float(h[1]["wrong"])},
                    "actual_iterations": 20, "experiment_name": ""} for s, h in zip(run.sizes, run.rows)]
        oob = 3 if fail else 0
        doc = {"version": 3, "start_time": "2025-03-03 12:00:00", "args": ["./build/all_reduce_perf", "-b", "8"],
               "env": [], "nccl_version": 22703,
               "config": {"nthreads": 1, "ngpus": 1, "devices": [{"rank": r, "hostname": f"node{r // 8}"} for r in range(ranks)]},
               "results": results, "out_of_bounds": {"count": oob, "okay": not oob},
               "average_bus_bandwidth": {"bandwidth": run.avg, "okay": "unchecked"}, "errors": [],
               "end_time": "2025-03-03 12:00:09"}
        text = json.dumps(doc, indent=2) + "\n"
        last = run.sizes[-1]
        yield Variant("nccl-tests", f"-J document {ranks} ranks{' oob' if fail else ''}", text,
                      (("collective", "all_reduce"), ("ranks", ranks), ("len(rows)", len(run.sizes)),
                       ("avg_busbw_GBps", run.avg),
                       (f"rows[size_bytes={last}].in_place.busbw_GBps", run.rows[-1][1]["busbw"])),
                      fails=bool(fail))


@generator("nccl-tests")
def header_blocks(rng: random.Random) -> Iterator[Variant]:
    """The device list as common.cu/util.cu print it (sncheck/vendors/nccltests/header.py): each
    process's block of nThreads x nGpus Rank lines, gathered from rank 0 in process order; a block
    over 2048 bytes (MAX_LINE) ends with the tool's own '...' after its last whole line's part."""
    run = _Run(rng, "2.18", 8, "all_reduce", None)
    run.ngpus, run.nprocs = 4, 2  # two processes of two threads driving two GPUs each: blocks of 4
    lines, end = run.lines()
    lines = [re.sub(r"^# nThread 1 nGpus \d+", "# nThread 2 nGpus 2", ln) for ln in lines]
    yield Variant("nccl-tests", "2 processes of nThread 2 nGpus 2", "\n".join(lines) + "\n",
                  (("config.nthreads", 2), ("config.ngpus", 2), ("ranks", 8), ("len(devices)", 8), *run.values()),
                  end=end)
    run = _Run(rng, "2.18", 24, "all_reduce", None)
    lines, end = run.lines()
    lines = [re.sub(r"^# nThread 1 nGpus \d+", "# nThread 3 nGpus 8", ln) for ln in lines]
    first = next(i for i, ln in enumerate(lines) if "Rank" in ln)
    block, kept = "", 0
    for ln in lines[first:first + 24]:  # snprintf into line[2048]; over it, strcpy(line+MAX_LINE-5, "...\n")
        if len(block) + len(ln) + 1 > 2048 - 5:
            block += (ln + "\n")[:2048 - 5 - len(block)] + "...\n"
            break
        block, kept = block + ln + "\n", kept + 1
    lines[first:first + 24] = block.rstrip("\n").split("\n")
    # the cut line keeps its rank where it got as far as its device (the view reads that much of it)
    kept += bool(re.search(r"Rank\s+\d+ .* device\s+\d+", lines[first + kept]))
    yield Variant("nccl-tests", "one process of 24 GPUs, its block cut at 2048 bytes", "\n".join(lines) + "\n",
                  (("config.nthreads", 3), ("len(devices)", kept), ("len(rows)", len(run.sizes))),
                  end=end - 24 + len(block.rstrip("\n").split("\n")))
