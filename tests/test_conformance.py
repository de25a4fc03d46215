"""Conformance: every real capture with hand-read expectations reads right through the CLI.

Walks every ``expect.yaml`` under ``fixtures/real/`` (the corpora copied from public issues,
vendor docs and peers' test data, each file with its ``# source:`` header). For each entry,
``sncheck parse TOOL FILE --json`` must exit 1 exactly when ``expect_fail`` is true, and every
hand-read value must appear in the JSON at the place ``at`` names: numbers compared
numerically, strings as substrings, ``null`` as an absent or null value.

The ``at`` paths: dotted keys (a key may hold spaces: ``metadata.DCGM Version``), ``[N]`` a
list index, ``[k=v]`` the list element whose ``k`` is ``v``, ``len(PATH)`` the length of a
list or mapping, and an empty path the whole document. The value must be found in the
subtree the path reaches (a number anywhere inside ``gpus`` for ``at: gpus``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
EXPECTATIONS = sorted(REAL.rglob("expect.yaml"))


@functools.cache
def _expectations(expect: Path) -> list:
    """One ``expect.yaml``'s entries, read once (collection and the corpus check share them) with
    libyaml's safe loader where it is built: the pure-Python one took seconds on the corpora."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(expect.read_text(encoding="utf-8"), Loader=loader) or []  # noqa: S506  # a safe loader


def _entries() -> list:
    params = []
    for expect in EXPECTATIONS:
        corpus = expect.parent.relative_to(REAL)
        for entry in _expectations(expect):
            params.append(pytest.param(expect.parent, entry, id=f"{corpus}/{entry['file']}"))
    return params


_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def _steps(path: str) -> list[tuple[str, str]]:
    """``rows[size_bytes=8].in_place.wrong`` -> [(key, rows), (pick, size_bytes=8), (key, in_place), ...]."""
    out = []
    for key, pick in _STEP.findall(path):
        out.append(("key", key) if key else ("pick", pick))
    return out


def _same(a: Any, b: str) -> bool:
    if str(a) == b:
        return True
    try:
        return isinstance(a, (int, float)) and not isinstance(a, bool) and float(a) == float(b)
    except ValueError:
        return False


def resolve(doc: Any, path: str) -> Any:
    """The node ``path`` names in ``doc``; KeyError naming the step that is missing.

    A key may itself hold dots, as nvidia-smi's field names do (``power.draw``): at each
    mapping the longest run of the next dotted steps that is one of its keys is taken."""
    node = doc
    steps = _steps(path)
    i = 0
    while i < len(steps):
        kind, step = steps[i]
        if kind == "key":
            run = next((j for j in range(len(steps), i, -1) if all(k == "key" for k, _ in steps[i:j])
                        and isinstance(node, dict) and ".".join(s for _, s in steps[i:j]) in node), None)
            if run is None:
                raise KeyError(f"{path}: no key {step!r} (have {sorted(node) if isinstance(node, dict) else type(node).__name__})")
            node = node[".".join(s for _, s in steps[i:run])]
            i = run
            continue
        elif re.fullmatch(r"-?\d+", step):
            if not isinstance(node, list) or not -len(node) <= int(step) < len(node):
                raise KeyError(f"{path}: no element [{step}]")
            node = node[int(step)]
        else:
            k, _, v = step.partition("=")
            hits = [e for e in node if isinstance(e, dict) and k in e and _same(e[k], v)] if isinstance(node, list) else []
            if not hits:
                raise KeyError(f"{path}: no element with {k}={v}")
            node = hits[0]
        i += 1
    return node


def _numbers(node: Any):
    if isinstance(node, bool):
        return
    if isinstance(node, (int, float)):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _numbers(v)
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v)


def _strings(node: Any):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def holds(doc: Any, at: str, value: Any) -> tuple[bool, str]:
    """Whether ``value`` appears where ``at`` points in ``doc``; a reason when not."""
    m = re.fullmatch(r"len\((.*)\)", at or "")
    try:
        node = resolve(doc, m.group(1) if m else at or "")
    except KeyError as e:
        if value is None:  # "N/A" may be an absent key
            return True, ""
        return False, str(e)
    if m:
        ok = isinstance(node, (list, dict)) and len(node) == value
        return ok, f"len({m.group(1)}) is {len(node) if isinstance(node, (list, dict)) else node!r}"
    if value is None:
        return node is None or node == {} or node == "N/A", f"{at} is {node!r}"
    if isinstance(value, bool):  # a flag the view sets: that value itself, not a number or text
        return node is value, f"{at} is {node!r}"
    if isinstance(value, (int, float)):
        ok = any(math.isclose(n, value, rel_tol=1e-9, abs_tol=1e-12) for n in _numbers(node))
        return ok, f"{value} not among the numbers at {at or '(top)'}: {json.dumps(node)[:300]}"
    ok = any(str(value) in s for s in _strings(node))
    return ok, f"{value!r} not in the strings at {at or '(top)'}: {json.dumps(node)[:300]}"


@pytest.mark.parametrize("corpus, entry", _entries())
def test_capture_reads_right(corpus: Path, entry: dict) -> None:
    path = corpus / entry["file"]
    r = CliRunner().invoke(main, ["parse", entry["tool"], str(path), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    want = 1 if entry.get("expect_fail") else 0
    assert r.exit_code == want, f"exit {r.exit_code}, want {want}: {r.stderr[-800:]}"
    doc = json.loads(r.stdout)
    wrong = []
    for v in entry.get("values") or []:
        ok, why = holds(doc, v.get("at", ""), v["value"])
        if not ok:
            wrong.append(f"{v['what']}: {why}")
    assert not wrong, "\n".join(wrong)


def test_every_capture_of_the_corpus_has_an_expectation() -> None:
    """A capture copied into a corpus without its expect.yaml entry would never be read."""
    assert EXPECTATIONS, "no expect.yaml under fixtures/real/"
    for expect in EXPECTATIONS:
        named = {e["file"] for e in _expectations(expect)}
        present = {str(p.relative_to(expect.parent)) for p in expect.parent.rglob("*.txt")}
        assert present == named, (sorted(present - named), sorted(named - present))
        for rel in present:
            assert (expect.parent / rel).read_text(encoding="utf-8").startswith("# source:"), rel


def test_the_path_reader_is_strict() -> None:
    doc = {"rows": [{"size_bytes": 8, "in_place": {"wrong": 3}}], "v": "a 4.4.2 b", "n": None}
    assert holds(doc, "rows[size_bytes=8].in_place.wrong", 3)[0]
    assert not holds(doc, "rows[size_bytes=8].in_place.wrong", 4)[0]
    assert not holds(doc, "rows[size_bytes=16].in_place.wrong", 3)[0]
    assert holds(doc, "len(rows)", 1)[0] and not holds(doc, "len(rows)", 2)[0]
    assert holds(doc, "v", "4.4.2")[0] and not holds(doc, "v", "4.4.3")[0]
    assert holds(doc, "n", None)[0] and not holds(doc, "v", None)[0]
    assert not holds(doc, "", "Fail")[0] and not holds({"ok": True}, "ok", 1)[0]
    gpu = {"gpus": [{"index": 0, "power.draw": 30.5, "power": {"limit": 600}}]}
    assert holds(gpu, "gpus[index=0].power.draw", 30.5)[0] and holds(gpu, "gpus[0].power.limit", 600)[0]
    assert not holds(gpu, "gpus[index=0].power.draw.average", 30.5)[0]
