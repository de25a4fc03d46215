"""Outputs made from each view's written grammar, the ways people deliver them, and their cuts.

A view's grammar (:mod:`sncheck.vendors.grammar`) says what its tool prints. A *generator*
here writes whole outputs that grammar allows (versions, optional columns, 1 to 72
devices, failure lines), each a :class:`Variant` carrying the values a correct parse holds.
``tests/test_grammars.py`` then holds the view's parser, through ``sncheck parse``'s own
front (:func:`sncheck.vendors.parsers.parse_text` + ``failures``), to:

- every whole variant reads to its values and exits 0 (1 where ``fails``), with and without
  the judge's expectation (``count``: ``--expect N``, the inventory's cards in a run);
- every :data:`DELIVERIES` transform of it (``srun --label``, ``mpirun --tag-output``,
  ``dmesg``/``dmesg -T``/ISO/journal timestamps, ``> `` quoting, tabs turned to spaces, CR LF,
  ANSI colour, markdown fences, a reporter's ``...``) parses to the same JSON (tabs: the
  same values) and exit status;
- every cut (at a line end, or inside a line) that loses any of the output through its end
  marker (``end``) exits 1; a cut after it exits 1 or reads as the whole does. A ``stream``
  (a log: no end) must exit 1 only when cut inside a line.

The plain run takes a seeded sample of the cuts (:data:`CUTS` per variant) and of the
deliveries; ``SNCHECK_GRAMMAR_ALL=1`` takes every cut of every delivery (a sweep). A variant
of many records of one shape (``records``: a GPU's section, a link's counters) is swept by
record: every cut through its first record, at each record's first line, and at every line
end of its last record and after it, plus a seeded sample of :data:`CUTS` elsewhere (delivered:
every cut through its first record, and the sample). A cut inside the k-th of n records reads
as one inside the first does but for the records before it, which the cuts at record starts
test; every cut of a 16-GPU ``nvidia-smi -q`` (3,800 cuts, 17 deliveries, a parse each of up
to 1,900 lines) took hours, a sweep by record takes about a minute.

How to add a generator for a view
---------------------------------
1. Write the view's ``GRAMMAR`` entry beside its parser (:mod:`sncheck.vendors.grammar`).
2. In a module of this package (one per tool family: ``nccl_tests.py``), write::

       @generator("my-view")
       def my_view(rng: random.Random) -> Iterator[Variant]:
           for n in (1, 8, 72):            # what the grammar varies: devices, versions, modes
               text, values = ...           # build the lines the grammar prints
               yield Variant("my-view", f"{n} devices", text, values, count=n, end=...)

   Build the text from the grammar, not from a capture; keep each value you put in the
   text and state it in ``values`` as ``(at, value)`` pairs, ``at`` read as
   ``tests/test_conformance.py`` reads it (``gpus[index=3].temp_C``, ``len(gpus)``).
   ``end`` is the number of lines through the one that says the output is whole (None: the
   last line); ``elide`` a span of lines that carry no value (a reporter may replace them by
   ``...``); ``fails`` when the output shows a failure the grammar defines, with ``finding``
   the words (a substring) its failures must hold: the tool's failure line, or the value's
   fault. A view's generator writes the failure lines its grammar lists; ``tests/test_grammars.py``
   holds each view to at least one failing variant (not to one per failure line: that is the
   generator's author's to keep).
3. Add the module's name to :data:`MODULES` below. The view is then under test; yield a few
   variants per shape (the rng picks), the plain run's CPU time is shared by every view.
4. ``tests/test_grammars.py`` holds every view to a written grammar and a generator; paste the
   README's table of views afresh (``python3 -m sncheck.vendors.parsers`` prints it).
"""

from __future__ import annotations

import importlib
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

MODULES = ("nccl_tests", "kernel_log", "nccl_ras", "amd_smi", "ib_ports", "nccl_logs", "smi_table", "amdgpu",
           "dcgmi", "infiniband", "npu_smi", "hccn_tool", "ib_diags", "nvidia_smi", "smi_query", "rocm_smi",
           "nvbandwidth", "amd_smi_tables", "hccl_test", "asys", "smi_qx", "mnnvl", "transferbench", "ascend_logs",
           "json_numbers", "kernel_links")
ALL = os.environ.get("SNCHECK_GRAMMAR_ALL") == "1"
CUTS = 12  # cuts per variant and delivery in the plain run (every cut with SNCHECK_GRAMMAR_ALL=1)


@dataclass(frozen=True)
class Variant:
    view: str
    name: str
    text: str                                   # the tool's output, LF line ends, whole
    values: tuple[tuple[str, Any], ...]         # (at, value) a correct parse holds
    fails: bool = False                         # the output shows a failure: exit 1
    end: int | None = None                      # lines through the end marker (None: all)
    stream: bool = False                        # a log: no end, a cut between lines is a shorter log
    count: int | None = None                    # records it lists: the judge's expectation
    elide: tuple[int, int] | None = None        # lines a reporter may replace by "..."
    records: tuple[int, ...] = ()               # the line each repeated record starts at (the sweep's cuts)
    hints: dict[str, Any] = field(default_factory=dict)  # parse_text hints (path=, collective=)
    finding: str | None = None                  # a failing variant: what its failures must say (a substring)


Generator = Callable[[random.Random], Iterator[Variant]]
# view -> its generators: one per part of its grammar where the parts come from different
# sources (kernel-log: NVIDIA's and the kernel's AER lines, and amdgpu's RAS lines)
GENERATORS: dict[str, list[Generator]] = {}


def generator(view: str) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        assert fn not in GENERATORS.get(view, []), f"{fn.__name__} registered twice for {view}"
        GENERATORS.setdefault(view, []).append(fn)
        return fn
    return register


def load() -> dict[str, list[Generator]]:
    for name in MODULES:
        importlib.import_module(f"grammars.{name}")
    return GENERATORS


def variants(view: str, seed: int = 28) -> list[Variant]:
    out = [v for i, fn in enumerate(load()[view])
           for v in fn(random.Random(f"{seed}:{view}" + (f":{fn.__name__}" if i else "")))]
    assert out and all(v.view == view for v in out), view
    return out


# ----------------------------------------------------------------------------- deliveries

@dataclass(frozen=True)
class Delivery:
    """A way the output reaches sncheck: ``head`` lines, each line mapped, ``tail`` lines."""

    name: str
    line: Callable[[int, str, random.Random], str] = lambda i, ln, rng: ln
    head: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()
    eol: str = "\n"
    stamp: bool = False     # adds a timestamp: not for a view whose grammar has its own
    exact: bool = True      # the parse is the plain one's, byte for byte (not so: tabs)

    def apply(self, v: Variant, rng: random.Random) -> str:
        lines = v.text.split("\n")
        ended = lines[-1] == ""
        if ended:
            lines.pop()
        body = [self.line(i, ln, rng) for i, ln in enumerate(lines)]
        out = list(self.head) + body + list(self.tail)
        return self.eol.join(out) + (self.eol if ended or self.tail else "")


def _ansi(i: int, ln: str, rng: random.Random) -> str:
    if not ln.strip():
        return ln
    words = ln.split(" ")
    k = rng.randrange(len(words))
    words[k] = f"\x1b[1;3{rng.randrange(1, 7)}m{words[k]}\x1b[0m" if words[k] else words[k]
    return "\x1b[0m" + " ".join(words) + ("\x1b[K" if rng.random() < 0.3 else "")


_MONTH = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


DELIVERIES: tuple[Delivery, ...] = (
    Delivery("srun --label", lambda i, ln, rng: f"0: {ln}" if ln else "0: "),
    Delivery("srun --label, 16 tasks", lambda i, ln, rng: f" 0: {ln}"),
    Delivery("mpirun --tag-output", lambda i, ln, rng: f"[1,0]<stdout>:{ln}"),
    Delivery("mpiexec -prepend-rank", lambda i, ln, rng: f"[0] {ln}"),
    Delivery("dmesg stamps", lambda i, ln, rng: f"[{1000.5 + i * 0.000137:12.6f}] {ln}", stamp=True),
    Delivery("dmesg -T stamps", lambda i, ln, rng: f"[Mon Mar {3 + i // 3600:2d} 12:{i // 60 % 60:02d}:{i % 60:02d} 2025] {ln}",
             stamp=True),
    Delivery("ISO stamps", lambda i, ln, rng: f"2025-03-03T12:{i // 60 % 60:02d}:{i % 60:02d},{i:06d}+00:00 {ln}",
             stamp=True),
    Delivery("journal", lambda i, ln, rng: f"{_MONTH[i % 12]} 03 12:00:{i % 60:02d} node7 tool[4242]: {ln}", stamp=True),
    Delivery("> quoted", lambda i, ln, rng: f"> {ln}" if ln else ">"),
    Delivery("> > quoted twice", lambda i, ln, rng: f"> > {ln}"),
    Delivery("tabs to spaces", lambda i, ln, rng: ln.expandtabs(8), exact=False),
    Delivery("tabs to 4 spaces", lambda i, ln, rng: ln.replace("\t", "    "), exact=False),
    Delivery("CRLF", eol="\r\n"),
    Delivery("ANSI colour", _ansi),
    Delivery("markdown fence", head=("```",), tail=("```",)),
    Delivery("markdown fence with prose", head=("Here is what it printed on node7:", "", "```text"),
             tail=("```", "", "Any idea?")),
    Delivery("copied from inside a fence, its opener left behind", tail=("```",)),
    Delivery("indented fence", lambda i, ln, rng: f"    {ln}" if ln else ln, head=("    ```console",),
             tail=("    ```",)),
)


def delivered(v: Variant, rng: random.Random, stamped: bool) -> list[tuple[str, str, bool]]:
    """(delivery name, text, exact) for every delivery that applies to ``v`` (one seeded
    half of them in the plain run), and the reporter's ``...`` where ``v`` has lines to elide."""
    ways = [d for d in DELIVERIES if not (stamped and d.stamp)]
    if not ALL:
        ways = rng.sample(ways, k=max(1, len(ways) // 2))
    out = [(d.name, d.apply(v, rng), d.exact) for d in ways]
    if v.elide:
        lines = v.text.split("\n")
        a, b = v.elide
        out.append(("a reporter's ...", "\n".join(lines[:a] + ["..."] + lines[b:]), False))
    return out


# ----------------------------------------------------------------------------- cuts

def cut_points(text: str, rng: random.Random, records: tuple[int, ...] = (), whole: bool = True) -> list[int]:
    """Every line end and one point inside every line (a seeded sample of :data:`CUTS` in
    the plain run, the last three line ends always among them). In the sweep, a text of
    ``records`` (the lines they start at) is cut by record (the module's docstring): with
    ``whole``, also at each record's first line and every line end of the last record on."""
    ends = [m.end() for m in re.finditer("\n", text)][:-1]
    starts = [0] + [e for e in ends]
    inside = [rng.randrange(s + 1, e) for s, e in zip(starts, ends + [len(text)]) if e - s > 1]
    points = sorted(set(ends + inside))
    if ALL and records:
        first = starts[records[1]] if len(records) > 1 else len(text)
        last = starts[records[-1]] if whole else len(text)
        heads = {starts[r] for r in records} if whole else set()
        keep = {p for p in points if p <= first or p in heads or (p >= last and p in ends)}
        rest = sorted(set(points) - keep)
        return sorted(keep | set(rng.sample(rest, min(CUTS, len(rest)))) | set(ends[-3:]))
    if ALL or len(points) <= CUTS:
        return points
    return sorted(set(rng.sample(points, CUTS) + ends[-3:]))


def content(text: str) -> int:
    """How many non-blank characters ``text`` holds."""
    return sum(1 for c in text if not c.isspace())


def through_end(v: Variant) -> str:
    lines = v.text.split("\n")
    return "\n".join(lines[: v.end]) if v.end is not None else v.text
