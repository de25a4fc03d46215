"""The written grammar of every parse view: what the tool prints, from the tool's own source.

Each view's parser implements a :class:`Grammar`, written beside it: a ``GRAMMAR`` mapping
(view name -> Grammar) in the parser's module, or, where that module would grow past its
size, in a sibling module named ``<module>_grammar`` (``amd_smi_grammar`` beside
``amd_smi``). :func:`of` finds it; ``tests/test_grammars.py`` holds every view to having one
and to the README's table of views (the ``tool`` and ``versions`` below, one row each).

A parser is correct when it accepts exactly its grammar: every output the grammar allows
reads to its values (exit 0, or 1 where it shows a failure), and an output cut anywhere
before its ``end`` exits 1. ``tests/grammars/`` generates those outputs from the grammar
(see that package for how to add a generator).

Writing one, per field:

- ``tool``: the program and options that print it (``all_reduce_perf`` and the other
  ``*_perf`` binaries of nccl-tests); no ``|`` (it is a cell of the README's table).
- ``versions``: the tool versions it covers, as the README table shows them.
- ``sources``: where each part was read, one per entry: ``repo path @ version: what``
  (``NVIDIA/nccl-tests src/common.cu @ v2.13.9: the table header``). A closed tool says
  so (``closed: NVIDIA nvidia-smi docs (r570) and the captures under fixtures/real/``).
- ``lines``: the lines and fields the tool prints, in order, with their units and the
  optional ones; a version that changed one says which, from which source.
- ``end``: what says the output is whole (the end marker, a count the output states, or the
  expectation a judge brings: the inventory's cards).
- ``failures``: every failure line the source can print, and what the view makes of it.
- ``values``: the JSON names each value is kept under (the module docstring has the shape).

Shared by every grammar, so written once: a tool prints its numbers in ASCII digits (printf,
std::format, Python's str). A number in another script's decimal digits is no output of any
tool: the front (``parsers.parse_text``, a run's ``facts.outcome``) refuses the line where a
view reads one, and keeps such digits where they are text (:mod:`sncheck.vendors.digits`).

Likewise a tool's ``--json`` writes finite numbers (amd-smi's ``json.dumps`` of what it read,
'N/A' where nothing; mlxlink's strings and counts; nccl-tests ``util.cu`` jsonDouble; NCCL
Inspector ``inspector_json.cc``'s "%lf" of a measured time and size): ``1e999`` (which Python's
json reads as infinity), ``NaN`` and ``Infinity`` are no measurement. Every JSON view's reader
(:mod:`sncheck.vendors.jsonprefix`, and ``config.jsonio`` for input files) refuses one naming
its field (``coll_perf.coll_busbw_gbs: infinite ...``), exit 1 (parse30).

And a view quotes its input only once it recognised it as its tool's output: a file it read
nothing from (ParseError) is named by its lines, never shown (:mod:`sncheck.vendors.withheld`:
``sncheck parse npu-smi /etc/shadow`` printed root's hash).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Grammar:
    tool: str
    versions: str
    sources: tuple[str, ...]
    lines: str
    end: str
    failures: str
    values: str


def of(parser: object, view: str) -> Grammar | None:
    """The grammar written for ``view`` beside ``parser`` (its module's ``GRAMMAR``, else its
    ``<module>_grammar`` sibling's), or None when none is written."""
    module = getattr(parser, "__module__", None)
    if not module:
        return None
    for name in (module, f"{module}_grammar"):
        try:
            found = getattr(importlib.import_module(name), "GRAMMAR", None)
        except ModuleNotFoundError as e:
            if e.name != name:  # the grammar module exists and its own import failed: say so
                raise
            continue
        if isinstance(found, dict) and isinstance(found.get(view), Grammar):
            return found[view]
    return None


def table(views: Mapping[str, Any]) -> str:
    """The README's table of views (``| view | tool | versions |``) from the written grammars of
    ``views`` (name -> View): ``python3 -m sncheck.vendors.parsers`` prints it to paste."""
    rows = ["| view | tool | versions |", "|---|---|---|"]
    for name, view in sorted(views.items()):
        g = of(view.parse, name)
        assert g is None or "|" not in g.tool + g.versions, f"{name}: a '|' breaks the README table"
        rows.append(f"| `{name}` | {g.tool if g else '—'} | {g.versions if g else 'grammar not written yet'} |")
    return "\n".join(rows)
