"""The verdict, decided once: flags on each finding, each layer's verdict, the run's.

Every output reads what is decided here and never works it out again:

* on each finding (results.json, added fields): ``gates`` (at or above the gate
  severity), ``not_measured`` (something was not measured: unreachable, not run, timed
  out, a tool missing) and ``not_judged`` (something measured was not judged: no golden
  reference, no baseline, no enabled rule for the layer);
* each layer: ``error`` (cut short), ``fail`` (a finding of it, or folded into one,
  gates), ``not_judged`` (a not-judged finding below the gate, e.g. an optional golden
  layer with no reference), ``skipped``, or ``pass``; a skipped or unjudged layer is
  never a pass;
* the run: ``error``, ``fail`` (a layer fails, a finding gates, or the safety cap
  blocked the isolations), ``inconclusive`` (every finding that gates is one the
  confirmation retest could not judge on a busy machine: exit 4) or ``pass``.

:func:`flags_of` reads a finding's flags, deciding them here for results written before
the flags existed, so earlier runs still load (history, diff, report).
The isolation policy (quarantine, confirm, isolate, release) is :mod:`sncheck.run.isolation`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sncheck.health.invariants import means_not_judged, means_not_measured
from sncheck.model import Severity, Verdict, at_or_above

GATES, NOT_MEASURED, NOT_JUDGED = "gates", "not_measured", "not_judged"  # the flags' keys on a finding
FLAGS = (GATES, NOT_MEASURED, NOT_JUDGED)
DEFAULT_GATE = Severity.CRITICAL
EXIT_CODES = {Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.ERROR: 3, Verdict.INCONCLUSIVE: 4}


def gate_of(results: Mapping) -> str:
    gate = results.get("gate")
    return gate if gate in tuple(Severity) else DEFAULT_GATE


def decide_flags(finding: Mapping, gate: str) -> dict[str, bool]:
    """The flags of one finding (a dict of results.json) under ``gate``."""
    severity = finding.get("severity")
    gates = at_or_above(severity, gate) if severity in tuple(Severity) else True  # an unknown severity fails
    rule = str(finding.get("rule", ""))
    return {GATES: gates, NOT_MEASURED: means_not_measured(rule), NOT_JUDGED: means_not_judged(rule)}


def flags_of(finding: Mapping, results: Mapping) -> dict[str, bool]:
    """A finding's flags as the verdict wrote them (decided now for older results)."""
    if all(isinstance(finding.get(k), bool) for k in FLAGS):
        return {k: bool(finding[k]) for k in FLAGS}
    return decide_flags(finding, gate_of(results))


def mark(findings: Iterable[dict], gate: str) -> None:
    """Write the flags onto each finding dict."""
    for f in findings:
        f.update(decide_flags(f, gate))


def gating_layers(findings: Iterable[Mapping], gate: str) -> set[str | None]:
    """Layers with a finding at or above the gate, counting the symptoms folded into it."""
    out = set()
    for f in findings:
        if decide_flags(f, gate)[GATES]:
            out.add(f.get("layer"))
            out |= {r.get("layer") for r in (f.get("evidence") or {}).get("related", [])}
    return out


def inconclusive(f: Mapping) -> bool:
    """A finding whose confirmation retest could not tell on a busy machine."""
    return bool((f.get("evidence") or {}).get("inconclusive"))


def layer_verdict(layer: Mapping, findings: list[dict], failing: set, unsure: set | frozenset = frozenset()) -> Verdict:
    name, now = layer.get("name"), layer.get("verdict")
    if now == Verdict.ERROR:
        return Verdict.ERROR
    if name in failing:
        return Verdict.FAIL
    if name in unsure:
        return Verdict.INCONCLUSIVE
    if any(f[NOT_JUDGED] for f in findings if f.get("layer") == name):
        return Verdict.NOT_JUDGED
    if now == Verdict.SKIPPED:
        return Verdict.SKIPPED
    return Verdict.PASS


def decide(results: dict, gate: str | None = None) -> Verdict:
    """Flag the findings, set each layer's verdict and the run's; return the run's."""
    gate = gate or gate_of(results)
    findings = results.get("findings") or []
    mark(findings, gate)
    # A finding the retest could not judge on a busy machine gates as "inconclusive"
    # (exit 4), unless anything else fails.
    failing = gating_layers([f for f in findings if not inconclusive(f)], gate)
    unsure = gating_layers([f for f in findings if inconclusive(f)], gate) - failing
    for layer in results.get("layers") or []:
        layer["verdict"] = layer_verdict(layer, findings, failing, unsure).value
    verdicts = [layer["verdict"] for layer in results.get("layers") or []]
    if "error" in results or Verdict.ERROR in verdicts:
        verdict = Verdict.ERROR
    elif Verdict.FAIL in verdicts or any(f[GATES] and not inconclusive(f) for f in findings) \
            or results.get("isolation_blocked"):
        verdict = Verdict.FAIL  # the safety cap refused the isolations: the gate fails (said here only)
    elif any(f[GATES] for f in findings) or Verdict.INCONCLUSIVE in verdicts:
        verdict = Verdict.INCONCLUSIVE
    else:
        verdict = Verdict.PASS
    results["verdict"] = verdict.value
    return verdict


def provisional_layer_verdict(name: str, findings: Iterable, gate: str) -> str:
    """A layer's verdict in the partial results.json written after it (decided again at the end)."""
    dicts = [f.to_dict() if hasattr(f, "to_dict") else f for f in findings]
    return (Verdict.FAIL if name in gating_layers(dicts, gate) else Verdict.PASS).value
