"""The top of the report, for a person in one minute: the verdict as a word, the
findings count, the top actions, the changes since the last run (with per-tier
sparklines) and the provenance of the run.

Everything here must read with CSS and scripts stripped (a strict Content-Security-
Policy blocks inline ``<style>`` and ``style=``): colours are SVG presentation
attributes, status is also a word or a mark (never colour alone), tables are tables.
"""

from __future__ import annotations

import math
import platform
from typing import Any

from markupsafe import escape

from sncheck import __version__
from sncheck.model import Action, EntityKind, Finding, RunRecord, Severity, Verdict

MAX_ACTIONS = 10
# The run's verdict words (sncheck.model.Verdict), the same in every output.
WORD = {Verdict.PASS: "PASS", Verdict.FAIL: "FAIL", Verdict.ERROR: "ERROR", Verdict.INCONCLUSIVE: "INCONCLUSIVE"}
MARK = {Verdict.PASS: "\u2713", Verdict.FAIL: "\u2715", Verdict.ERROR: "\u2715", Verdict.INCONCLUSIVE: "?"}
FILL = {Verdict.PASS: "#1a7f37", Verdict.FAIL: "#c62828", Verdict.ERROR: "#8e24aa", Verdict.INCONCLUSIVE: "#b26a00"}
CAVEAT_MARK, CAVEAT_FILL = "!", "#b26a00"  # a pass with caveats (a layer not judged, findings below the gate)


def _t(text: object) -> str:
    return str(escape(str(text)))


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "\u2014"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def verdict_state(record: RunRecord) -> Verdict:
    """The run's verdict (the record's, never re-derived here)."""
    return record.verdict


def verdict_caveats(record: RunRecord) -> list[str]:
    """What a verdict word alone does not say: layers not judged or skipped, findings below
    the gate, entities quarantined or isolated. A pass with caveats is still the pass the
    gate decided, but the first screen never shows it as a bare PASS."""
    verdicts = [(layer.name, record.layer_verdict(layer)) for layer in record.layers]
    out = [f"{name} {verdict.value.replace('_', ' ')}" for name, verdict in verdicts
           if verdict in (Verdict.NOT_JUDGED, Verdict.SKIPPED)]
    below = [f for f in record.findings if not record.gates(f) and f.severity.rank > Severity.INFO.rank]
    if below:
        out.append(f"{len(below)} finding{'s' if len(below) != 1 else ''} below the gate")
    held = {e.entity for e in record.isolation if e.action in (Action.ISOLATE, Action.QUARANTINE)}
    if held:
        out.append(f"{len(held)} quarantined or isolated")
    return out


def verdict_svg(state: Verdict, findings: int, caveats: list[str] | None = None) -> str:
    """A banner that keeps its colour under a strict CSP (SVG fill, not CSS). A pass with
    caveats keeps its word, marked ``!`` on amber, the caveats in its title."""
    word = WORD[state]
    mark, fill = (CAVEAT_MARK, CAVEAT_FILL) if caveats and state == Verdict.PASS else (MARK[state], FILL[state])
    label = f"{mark} {word}"
    text = f"{findings} finding{'s' if findings != 1 else ''}"
    said = _t(f"verdict {word}" + (f" ({'; '.join(caveats)})" if caveats else "") + f", {text}")
    return (f'<svg width="360" height="44" viewBox="0 0 360 44" role="img" aria-label="{said}" '
            f'font-family="sans-serif"><title>{said}</title>'
            f'<rect x="0" y="0" width="360" height="44" rx="6" fill="{fill}"/>'
            f'<text x="14" y="30" font-size="24" font-weight="bold" fill="#ffffff">{_t(label)}</text>'
            f'<text x="346" y="29" font-size="15" text-anchor="end" fill="#ffffff">{_t(text)}</text></svg>')


def _action(f: Finding, decisions: dict[str, list[Action]], record: RunRecord) -> str:
    steps = decisions.get(f.entity, [])
    last = steps[-1] if steps else None
    kind = f.entity_kind.value
    rule = f.rule
    if f.not_judged:
        return f"judge it: {'fix what the message names' if record.gates(f) else 'not judged (on record)'}, then re-run"
    if f.severity == Severity.INFO:
        return "none: on record (watch it next run)"
    if f.not_measured:
        return f"bring the {kind} back (it was not measured), then re-run"
    if last == "isolate" and f.entity_kind == EntityKind.SWITCH:
        return "repair the switch (confirmed by the retest); until then drain its rail on the hosts it serves"
    if last == "isolate":
        return f"drain the {kind} (isolation confirmed by the retest), then replace or repair it"
    if last == "release":
        return "released: not reproduced by the retest; watch it"
    if last == "quarantine":
        return f"keep the {kind} quarantined; re-run to confirm"
    if "drift" in rule:
        return f"schedule a check of the {kind}: falling run after run"
    return f"look at the {kind} (evidence linked)"


def actions(record: RunRecord) -> list[dict]:
    decisions: dict[str, list[Action]] = {}
    for e in record.isolation:
        decisions.setdefault(e.entity, []).append(e.action)
    ranked = sorted(enumerate(record.findings), key=lambda p: (-p[1].severity.rank, p[0]))
    out = []
    for i, f in ranked[:MAX_ACTIONS]:
        ev = f.evidence
        unit = ev.get("unit") or ""
        measured, expected = ev.get("measured"), ev.get("expected")
        files = ev.get("files") or []
        out.append({
            "index": i, "entity": f.entity, "kind": f.entity_kind.value,
            "severity": f.severity.value, "symptom": f.rule, "message": f.message,
            "measured": f"{_num(measured)} {unit}".strip(), "expected": f"{_num(expected)} {unit}".strip(),
            "action": _action(f, decisions, record),
            "evidence": next((p for p in files if p.endswith("README.txt")), files[0] if files else None),
        })
    return out


def sparkline(values: list[float | None], label: str, width: int = 140, height: int = 28) -> str:
    """A small trend line (SVG presentation attributes only); the last point marked."""
    pts = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(pts) < 2:
        return ""
    lo, hi = min(v for _, v in pts), max(v for _, v in pts)
    # At least +-5% of the level: noise of a few tenths of a percent draws flat, not as a cliff.
    mid, floor = (lo + hi) / 2, 0.1 * abs((lo + hi) / 2)
    if hi - lo < floor:
        lo, hi = mid - floor / 2, mid + floor / 2
    span = (hi - lo) or 1.0
    n = max(len(values) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return 3 + (width - 6) * i / n, height - 3 - (height - 6) * (v - lo) / span

    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, v) for i, v in pts))
    lx, ly = xy(*pts[-1])
    title = f"{label}: " + ", ".join(_num(v) for _, v in pts)
    return (f'<svg class="sparkline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_t(title)}"><title>{_t(title)}</title>'
            f'<polyline points="{path}" fill="none" stroke="#1f4e79" stroke-width="1.5"/>'
            f'<circle cx="{lx:.1f}" cy="{ly:.1f}" r="2.5" fill="#1f4e79"/></svg>')


def changes(record: RunRecord) -> dict | None:
    h = record.history
    if not h:
        return None
    rows = []
    for name, values in sorted((h.get("series") or {}).items()):
        known = [v for v in values if v is not None]
        if not known:
            continue
        last, prev = values[-1], next((v for v in reversed(values[:-1]) if v is not None), None)
        delta = (last - prev) / prev if (last is not None and prev) else None
        rows.append({"name": name, "runs": len(known), "first": _num(known[0]), "last": _num(last),
                     "delta": "\u2014" if delta is None else f"{delta:+.1%}",
                     "svg": sparkline(values, name)})
    return {"previous": h.get("previous"), "previous_verdict": h.get("previous_verdict"),
            "runs": len(h.get("runs") or []), "trends": rows,
            "new": h.get("new") or [], "resolved": h.get("resolved") or [],
            "not_remeasured": h.get("not_remeasured") or [], "ran": ", ".join(h.get("ran") or ()) or "no layer",
            "persisting": h.get("persisting") or []}


def provenance(record: RunRecord) -> dict:
    """What produced this report: versions, inputs with their hashes, commands, design."""
    inputs = []
    for name, d in (record.inputs or {}).items():
        if isinstance(d, dict):
            inputs.append({"input": name, "name": d.get("name"), "path": d.get("path"), "sha256": d.get("sha256")})
            by_ranks = d.get("by_ranks")
            for ranks, sub in (by_ranks.items() if isinstance(by_ranks, dict) else ()):
                if isinstance(sub, dict):  # a golden curve per replica size (ops4): each one judged
                    inputs.append({"input": f"{name} ({ranks} ranks)", "name": sub.get("name"),
                                   "path": sub.get("path"), "sha256": sub.get("sha256")})
    tools = record.tools or {}
    base = record.baseline if isinstance(record.baseline, dict) else None
    return {"sncheck": __version__, "python": platform.python_version(),
            "versions": tools.get("versions") or {}, "commands": tools.get("commands") or [],
            "inputs": inputs, "baseline": base, "gate": record.gate.value, "seed": record.seed,
            "backend": record.backend}


def first_screen(record: RunRecord) -> dict:
    state = record.verdict
    counts = {s.value: sum(f.severity == s for f in record.findings) for s in Severity.most_severe_first()}
    caveats = verdict_caveats(record)
    mark = CAVEAT_MARK if caveats and state == Verdict.PASS else MARK[state]
    return {"verdict_word": WORD[state], "verdict_mark": mark, "verdict_state": str(state),
            "verdict_caveats": caveats,
            "verdict_svg": verdict_svg(state, len(record.findings), caveats), "finding_counts": counts,
            "actions": actions(record), "changes": changes(record), "provenance": provenance(record)}
