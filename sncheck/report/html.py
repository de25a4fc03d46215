"""The HTML report: one self-contained page that opens offline.

The page is a Jinja template over a plain view model built from the results envelope
(verdicts, findings, isolation) and the measurement rows: the header, findings and facts
here, the connectivity section in :mod:`.connectivity`, the stress and golden charts in
:mod:`.curves`.
SVG is inline and there is no script, so the file can be mailed, archived or opened
on an air-gapped jump host. Its layout is ``report.css``, written beside it and
linked (never inline ``<style>`` or ``style=``: Jenkins' CSP allows a stylesheet
from the same directory and nothing inline); without it the page reads in full.

Templates come from the package ``sncheck.templates`` (``reports/templates`` in the
tree). A user's template directories go first in a ChoiceLoader, so a user file
named like a built-in partial (``_summary.html``) replaces it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FunctionLoader,
    StrictUndefined,
)
from jinja2.loaders import split_template_path

from sncheck import __version__
from sncheck.config.fileio import read_input
from sncheck.config.yamlio import decode_text
from sncheck.errors import ConfigError
from sncheck.topology import natural_key
from sncheck.report.connectivity import TIERS, connectivity_view
from sncheck.report.curves import collective_charts, golden_view
from sncheck.report.firstscreen import first_screen
from sncheck.report.svg import human_bytes
from sncheck.report.usertemplates import check_templates, rendered, sandboxed
from sncheck.report.tables import column, number, of_kind, records, status_ok
from sncheck.store.frames import fact_rows
from sncheck.model import About, Finding, RunRecord, Severity, Verdict
from sncheck.config.fileio import write_atomic

if TYPE_CHECKING:  # importlib.abc.Traversable moves in 3.12; only annotations need it
    from importlib.abc import Traversable

VERDICTS = tuple(Verdict)


def render_html(record: RunRecord, rows: pd.DataFrame | None,
                template_dirs: Sequence[str | os.PathLike] | None = None) -> str:
    """Render the report page for one run."""
    env = make_environment(template_dirs)
    return rendered(lambda: env.get_template("report.html").render(**build_context(record, rows)), template_dirs or ())


STYLESHEET = "report.css"   # beside the page; a user's template directory may override it


def write_html(path: str | os.PathLike, record: RunRecord, rows: pd.DataFrame | None,
               template_dirs: Sequence[str | os.PathLike] | None = None) -> None:
    """``path`` and the stylesheet it links, ``report.css`` in the same directory."""
    env = make_environment(template_dirs)
    write_atomic(path, rendered(lambda: env.get_template("report.html").render(**build_context(record, rows)),
                                template_dirs or ()))
    assert env.loader is not None  # make_environment always gives the environment its loaders
    css, _, _ = env.loader.get_source(env, STYLESHEET)
    write_atomic(Path(path).with_name(STYLESHEET), css)


def make_environment(template_dirs: Sequence[str | os.PathLike] | None = None) -> Environment:
    """The report's environment (sandboxed); a user's templates are checked first
    (:func:`sncheck.report.usertemplates.check_templates`)."""
    loaders: list[BaseLoader] = []
    for d in template_dirs or ():
        if not Path(d).is_dir():
            raise ConfigError(f"template directory {str(d)!r} does not exist")
        loaders.append(_user_loader(Path(d)))
    loaders.append(_builtin_loader())
    env = sandboxed(ChoiceLoader(loaders), autoescape=True,
                    undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = fmt_value
    if template_dirs:
        check_templates(env, template_dirs)
    return env


def _template_root() -> Traversable:
    # A checkout's own templates first: an editable install elsewhere (another worktree)
    # must not render this tree's report with its templates.
    tree = Path(__file__).resolve().parents[2] / "reports" / "templates"
    if tree.is_dir():
        return tree
    try:
        return resources.files("sncheck.templates")
    except ModuleNotFoundError:
        return tree


def _user_loader(root: Path) -> FunctionLoader:
    """A user's template directory, read through the one reader (a FIFO or a device named
    like a template is refused, never opened blocking; a template is at most 4 MiB)."""

    def load(name: str) -> tuple[str, str, Callable[[], bool]] | None:
        node = root.joinpath(*split_template_path(name))
        if not os.path.lexists(node):
            return None  # (its file name: a render's error is said at the user template's line)
        return decode_text(read_input(node, "template"), str(node), "template"), str(node), lambda: True

    return FunctionLoader(load)


def _builtin_loader() -> FunctionLoader:
    root = _template_root()

    def load(name: str) -> str | None:
        node = root.joinpath(*split_template_path(name))
        return node.read_text(encoding="utf-8") if node.is_file() else None

    return FunctionLoader(load)


def fmt_value(v: Any) -> str:
    """Numbers for people: None/NaN as a dash, floats to 4 significant digits."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "\u2014"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"
    return str(v)


# ---- view model ------------------------------------------------------------------

def build_context(record: RunRecord, rows: pd.DataFrame | None) -> dict:
    """Everything the templates read; every key is always present (StrictUndefined)."""
    rows = rows if rows is not None else pd.DataFrame()
    design = _design(record)
    findings = _findings(record)
    return {
        "version": __version__,
        "run": _run_header(record),
        "design": [{"tier": t, **v} for t, v in design.items()],
        "layers": _layers(record),
        "findings": findings,
        "severity_counts": {s.value: sum(f["severity"] == s for f in findings) for s in Severity.most_severe_first()},
        "isolation": _isolation(record),
        "isolation_blocked": record.isolation_blocked or "",
        **connectivity_view(record, rows, design),  # fleet, heatmaps, worst_pairs
        "collective_charts": collective_charts(rows, design),
        **golden_view(record, rows),  # golden_charts, golden_summary
        "facts": host_facts(rows),
        "not_run": records(of_kind(rows, "not_run"),
                            ("layer", "entity", "entity_kind", "status", "message")),
        "top": first_screen(record),  # verdict word, actions, changes, provenance
    }


def verdict_class(verdict: Any) -> str:
    return f"v-{verdict}" if verdict in VERDICTS else "v-unknown"


def _run_header(record: RunRecord) -> dict:
    head: dict[str, Any] = {"run_id": record.run_id, "playbook": record.playbook, "backend": record.backend,
                            "inventory": record.inventory, "started": record.started, "finished": record.finished,
                            "seed": record.seed}
    head["verdict"] = record.verdict.value
    head["verdict_class"] = verdict_class(head["verdict"])
    head["gate"] = record.gate.value
    head["scope"] = record.scope  # a scoped run (--targets): say to what
    seconds, why = record.duration  # unknown where the clock stepped back mid-run: said, never a negative length
    head["duration"] = (f"{seconds:.0f} s" if seconds is not None else
                        f"unknown: {why}" if record.finished is not None else None)
    return head


def _design(record: RunRecord) -> dict[str, dict]:
    design = record.design or {}
    return {t: {"bandwidth_GBps": number(design[t].get("bandwidth_GBps")),
                "latency_us": number(design[t].get("latency_us"))}
            for t in TIERS if isinstance(design.get(t), dict)}


def _layers(record: RunRecord) -> list[dict]:
    out = []
    for layer in record.layers:
        verdict = record.layer_verdict(layer).value
        out.append({"name": layer.name, "verdict": verdict, "verdict_class": verdict_class(verdict),
                    "cut_short": layer.summary.get("cut_short") or "",
                    "summary": _summary_items(layer.summary),
                    "slow_groups": _slow_groups(record, layer.summary) if layer.name == "stress" else ""})
    return out


RETOLD = {"release": "released by its retest: this group's slowness is left unexplained",
          "isolate": "confirmed by its retest", "quarantine": "kept quarantined"}


def _retold(action: str, rejudged: object) -> str:
    """What the explaining culprit's retest told; a release, what judging the group again without it
    found (the stress summary's ``rejudged``, sncheck.run.rejudge)."""
    if action != "release" or not isinstance(rejudged, dict):
        return RETOLD.get(action, action)
    now = rejudged.get("explained")
    return "released by its retest; judged again without it: " + (
        f"explained by {now.get('entity_kind')} {now.get('entity')}" if isinstance(now, dict)
        else "narrowed to its cards' pairs (the stress findings say what they showed)")


def _slow_groups(record: RunRecord, summary: dict) -> str:
    """The stress summary's slow groups in one line: each group, the size it was slow from, and
    the culprit of an earlier layer that explained it (with what that culprit's retest told:
    its last isolation step) or the findings that judged it (their evidence's ``groups``)."""
    slow = summary.get("slow_groups")
    if not isinstance(slow, dict) or not slow:
        return ""
    why = summary["explained"] if isinstance(summary.get("explained"), dict) else {}
    told = {e.entity: e.action.value for e in record.isolation}
    rejudged = summary["rejudged"] if isinstance(summary.get("rejudged"), dict) else {}
    judged: dict[str, list[str]] = {}
    for f in record.findings:
        groups = f.evidence.get("groups") if f.layer == "stress" else None
        for g in groups if isinstance(groups, list) else ():
            judged.setdefault(str(g), []).append(f"{f.rule} on {f.entity_kind.value} {f.entity} ({f.severity.value})")
    parts = []
    for group, size in slow.items():
        at = f"{group} from {human_bytes(size) if isinstance(size, (int, float)) else size}"
        culprit = why.get(group)
        if isinstance(culprit, dict):
            entity = str(culprit.get("entity"))
            action = told.get(entity)
            rerun = next((r for r in summary.get("again") or () if str(r).startswith(f"{group}~")), None)
            parts.append(f"{at}: explained by {culprit.get('entity_kind')} {entity} ("
                         + (_retold(action, rejudged.get(group)) if action else "no retest") + ")"
                         + ("" if rerun is None else f", its rerun {rerun} " + (
                             "still slow" if rerun in slow else "not slow")))
        elif judged.get(str(group)):
            parts.append(f"{at}: judged, " + ", ".join(judged[str(group)]))
        else:
            parts.append(f"{at}: no earlier culprit explains it, no group finding: narrowed to its cards' pairs "
                         "(the stress findings say what they showed)")
    return "; ".join(parts)



def _summary_items(summary: dict) -> list[tuple[str, str]]:
    """Scalars and short lists as 'key: value'; nested objects by name only."""
    items = []
    for key, v in summary.items():
        if key == "cut_short":
            continue
        if isinstance(v, dict):
            if "name" in v:
                items.append((key, str(v["name"])))
        elif isinstance(v, (list, tuple)):
            if all(not isinstance(x, (dict, list)) for x in v):
                items.append((key, ", ".join(map(fmt_value, v)) if len(v) <= 12
                              else f"{len(v)} values"))
        else:
            items.append((key, fmt_value(v)))
    return items


def _findings(record: RunRecord) -> list[dict]:
    out = []
    for i, f in enumerate(record.findings):
        ev = f.evidence
        out.append({"index": i, "files": [p for p in ev.get("files") or [] if isinstance(p, str)],
                    "entity": f.entity, "entity_kind": f.entity_kind.value,
                    "layer": f.layer, "rule": f.rule,
                    "severity": f.severity.value, "message": f.message,
                    "measured": ev.get("measured"), "expected": ev.get("expected"),
                    "tier": ev.get("tier") if isinstance(ev.get("tier"), str) else "",
                    "unit": ev.get("unit") or "", "verdict_note": _verdict_note(f, record.gates(f))})
    out.sort(key=lambda f: (-Severity(f["severity"]).rank, str(f["layer"]), natural_key(str(f["entity"]))))
    return out


def _verdict_note(f: Finding, gates: bool) -> str:
    """How the verdict treated a finding: not measured or not judged, a check that did
    not run, hard evidence isolated at once, or what the confirmation retest showed."""
    notes = []
    if f.not_measured:
        notes.append("not measured")
    if f.not_judged:
        notes.append("not judged")
    if f.about == About.CHECK:
        notes.append("about the check, not the hardware: nothing isolated; "
                     + ("the gate fails until it runs" if gates else "below the gate, on record"))
    if f.evidence.get("confirm") == "none":
        notes.append("hard evidence (confirm: none): isolated without a retest")
    if f.evidence.get("retest"):
        notes.append(f"retest: {f.evidence['retest']}")
    return "; ".join(notes)


def _isolation(record: RunRecord) -> list[dict]:
    return [{"entity": e.entity, "entity_kind": e.entity_kind.value, "action": e.action.value,
             "reason": e.reason, "applied": e.applied}
            for e in record.isolation]


# ---- host facts ----------------------------------------------------------------------

def host_facts(rows: pd.DataFrame) -> dict:
    """Facts that are not ok (as a table) and how many were ok."""
    cols = ("host", "fact", "value", "expected", "status", "message", "tool")
    light = of_kind(rows, "host_fact", ("ok", "status"))
    if light.empty:
        return {"bad": [], "ok_count": 0}
    # Only the facts that are not ok are read whole: a fleet's facts carry every card's
    # NVLink counters as JSON values (59,000 of them at 16,384 cards), read here for none.
    bad = records(fact_rows(rows, ("ok", "status"), lambda f: ~_fact_ok(f)), cols)
    bad.sort(key=lambda r: (natural_key(str(r["host"])), str(r["fact"])))
    return {"bad": bad, "ok_count": int(_fact_ok(light).sum())}


def _fact_ok(facts: pd.DataFrame) -> pd.Series:
    return column(facts, "ok", False).fillna(False).astype(bool) & status_ok(facts)


def write(record: RunRecord, rows: pd.DataFrame | None, path: str | os.PathLike, template_dirs: tuple = ()) -> None:
    """The report formats' hook (sncheck.report.FORMATS)."""
    write_html(path, record, rows, list(template_dirs) or None)
