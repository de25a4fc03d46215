"""Rules as data: YAML loaded into typed, validated rule objects. Never ``eval``.

```yaml
rules:
  - name: p2p-bandwidth-below-design     # the finding's rule name
    op: ratio_to_design                  # see `sncheck rules list`
    metric: p2p_bandwidth
    below: 0.8
    severity: critical                   # critical | warning | info
    scope: link                          # card | link | host | supernode
    summary: bandwidth below design      # words for the finding message
    confirm: retest                      # retest (default) | none: hard evidence, isolate at once
```

``scope`` is the level a rule judges at. Over pair metrics, ``scope: link`` (the default)
judges each pair and localization lifts a culprit to card, host or supernode;
``scope: card`` judges each card by its pairs as a whole (it implies ``per: card``).
Metrics that name one kind of entity (host facts: host; launch skew: card; golden
step time: host) take only that scope. Any other value is rejected when the file loads.
Host facts are read per host; a fact whose tool names the cards at fault (a pending
remap in one GPU's ``nvidia-smi -q`` section) is a finding on those cards, and stays
the host's only where the output does not say which card.

``confirm`` says what a finding of the rule needs before it isolates: ``retest`` (the
default: quarantine, retest with the measurement that found it, then isolate or
release) or ``none`` (hard evidence, e.g. uncorrectable ECC or corrupted data: isolate
at once, with the evidence in the finding).

Two more top-level keys:

```yaml
extends: default                         # a shipped name or a path (beside this file)
rules:
  - name: kernel-xid                     # a rule of the base: only what changes
    table:
      13: {severity: warning, count: 3, window: 24h}
allow_skips:                             # tests a tool may skip without "not measured"
  - {tool: dcgmi, test: EUD, why: the EUD package is not installed on these hosts}
```

``extends``: this file's rules are the base's, with a rule of the same name merged onto the
base's (the keys given replace its; a ``table`` is merged code by code, an entry given as a
mapping over a mapping changing only the keys it gives, an entry given as a list of cases
keeping the base entry's summary and action in each case that gives none) and the other rules added after
them. The base is checked on its own (its errors name its file); a merged rule's errors
name this file, at the line of the rule that changed it. Bases may extend bases (at most
:data:`MAX_EXTENDS` deep; a cycle is refused).

``allow_skips``: a test the tool printed ``Skip`` for measured nothing, so its fact is "not
measured" (the gate fails, nothing is isolated) unless the rules allow that test's skip by
name (``EUD`` matches ``EUD Test`` and DCGM 4.x's ``eud``; case and a trailing ``Test``
aside, the names must be equal). An allowed skip is a finding at ``info`` that quotes
``why``; a skip of any other test still fails the gate.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path
from typing import Annotated

import pandas as pd
from pydantic import BeforeValidator, Field, create_model
from pydantic_core import PydanticCustomError

from sncheck.errors import ConfigError
from sncheck.config.shipped import resolve
from sncheck.health.culprits import explain_rules, group_rules, kind_of, lift_cards
from sncheck.health.drift import compares
from sncheck.health.metrics import ENTITIES, GROUPS, METRICS, PAIRS, DetectContext
from sncheck.health.ops import OPS, REQUIRED
from sncheck.health.p2ptiers import LATENCY
from sncheck.health.pairgroups import FAMILY
from sncheck.model import EntityKind, Finding, Severity
from sncheck.vendors import registry
from sncheck.config.schema import Choice, Flag, Schema, Shape, Text, told, validate
from sncheck.config.yamlio import LineDict, Source, _show, load_file, load_text

# The kinds a rule may scope to (nic: <host>/nic<rail>), in the order the error names them.
RULE_SCOPES = (EntityKind.CARD, EntityKind.LINK, EntityKind.HOST, EntityKind.SUPERNODE, EntityKind.NIC)
MAX_EXTENDS = 4
CONFIRM = ("retest", "none")
# Metrics that name one kind of entity: a rule's scope must say the same.
METRIC_SCOPE = {"host_fact_failures": "host", "host_fact_warnings": "host", "rank_skew": "card",
                "golden_step_time": "host"}  # retest: quarantine, retest, then isolate or release; none: isolate at once
DEFAULT_RULES = "default"


@dataclass(frozen=True)
class Rule:
    name: str
    op: str
    metric: str
    severity: Severity
    scope: str
    summary: str
    params: dict = field(default_factory=dict)
    description: str = ""
    where: str = ""
    confirm: str = "retest"  # "none": hard evidence, isolated at once without a retest

    @property
    def layer(self) -> str:
        return METRICS[self.metric].layer


@dataclass(frozen=True)
class AllowedSkip:
    tool: str
    test: str
    why: str
    where: str = ""

    def allows(self, tool: str | None, test: str) -> bool:
        return tool == self.tool and test_name(test) == test_name(self.test)


def test_name(name: str) -> str:
    """A test's name as compared: case aside, without a trailing ``Test`` (``EUD Test``, ``eud``)."""
    n = " ".join(str(name).lower().split())
    return n[: -len(" test")] if n.endswith(" test") else n


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    source: str
    path: str | None = None  # the file it was loaded from (for results.json's inputs)
    allowed_skips: tuple[AllowedSkip, ...] = ()
    extends: tuple[str, ...] = ()  # the files this one extends, nearest first

    def skip_allowed(self, tool: str | None, test: str) -> AllowedSkip | None:
        return next((a for a in self.allowed_skips if a.allows(tool, test)), None)

    def for_layer(self, layer: str) -> list[Rule]:
        return [r for r in self.rules if r.layer in (layer, "any")]

    def judging(self, layer: str) -> list[Rule]:
        """The rules that judge a layer's measurements (the ``missing`` op only repeats the
        verdict's invariants): none means the layer is "not judged"."""
        return [r for r in self.for_layer(layer) if r.op != "missing"]


MAX_RULES = 10_000
MAX_PARAM = 1e12  # a bound in a rule: far beyond any ratio, count, GB/s or µs


def _typed(types: tuple[type, ...], choices: tuple[str, ...] = ()) -> Any:
    """A rule parameter of an op's declared type (Param.type), kept as written: a number finite
    and of magnitude at most MAX_PARAM, a list of strings, one of ``choices`` when it has them."""
    names = " or ".join(t.__name__ for t in types)

    def check(value: Any) -> Any:
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            _say(f"must be {names}, got {_show(value)}")
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not (math.isfinite(value) and abs(value) <= MAX_PARAM):
            _say(f"must be a finite number of magnitude at most {MAX_PARAM:g}, got {value!r}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            _say("must be a list of strings")
        # A list's every item is one of the choices: a status or state that no row can hold
        # would make the rule one that never fires, read as "nothing found".
        bad = [v for v in (value if isinstance(value, list) else [value]) if v not in choices]
        if choices and bad:
            _say(f"{'each ' if isinstance(value, list) else ''}must be one of {', '.join(choices)}, got {bad[0]!r}")
        return value
    return Annotated[Any, BeforeValidator(check)]


def _say(message: str) -> None:
    raise PydanticCustomError("sncheck", "{m}", {"m": message})


class _OpOf(Schema):
    """A rule's op, read first: it decides which model the rule is checked against."""

    what = "rule"
    op: Annotated[str, Choice(OPS, "unknown op {got}; ops: {choices}")]


class RuleSchema(Schema):
    """The keys every rule has; each op's model (RULE_MODELS) adds the parameters it takes."""

    what = "rule"
    nullable = frozenset({"summary", "description"})
    name: Annotated[str, Text()]
    op: Annotated[str, Choice(OPS, "unknown op {got}; ops: {choices}")]
    metric: Annotated[str, Choice(METRICS, "unknown metric {got}; metrics: {choices}")]
    severity: Annotated[str, Choice(tuple(Severity))]
    scope: Annotated[str, Choice(RULE_SCOPES)] | None = None  # default: from the metric's shape
    summary: Annotated[str, Text()] | None = None
    description: Annotated[str, Text()] | None = None
    enabled: Annotated[bool, Flag()] = True
    confirm: Annotated[str, Choice(CONFIRM)] = "retest"


def _rule_model(name: str) -> type[RuleSchema]:
    fields: dict[str, Any] = {}
    for key, spec in OPS[name].params.items():
        declared = _typed(spec.type if isinstance(spec.type, tuple) else (spec.type,), tuple(spec.choices))
        fields[key] = (declared, ...) if spec.default is REQUIRED else (declared, None)
    model = create_model(f"rule_{name}", __base__=RuleSchema, **fields)
    model.what = f"rule ({name})"
    return model


RULE_MODELS: dict[str, type[RuleSchema]] = {name: _rule_model(name) for name in OPS}


class AllowSkipSchema(Schema):
    what = "allow_skips entry"
    tool: Annotated[str, Field(strict=True), told("fact_tools", lambda v, known: f"must be one of "
                                                                             f"{', '.join(known)}, got {v!r}")]
    test: Annotated[str, Text()]
    why: Annotated[str, Text()]


class RulesFileSchema(Schema):
    what = "rules file"
    # Each rule is checked against its op's model once its base is merged in (parse_rules).
    rules: Annotated[list[Any], Shape("a list of rules")]
    extends: Annotated[str, Text(re.compile(r"^\s*\S"), "must name a rules file (a shipped name such as "
                                                        "'default', or a path)")] | None = None
    allow_skips: Annotated[list[AllowSkipSchema], Shape("a list of {tool, test, why}")] = []


def _merged(base: LineDict, mine: LineDict) -> LineDict:
    """A base rule with a rule of the same name merged onto it (see the module); errors in
    what it holds are told at ``mine``'s lines."""
    out = LineDict({**base, **mine})
    out.line = mine.line
    out.key_lines = {**{k: mine.line for k in base}, **mine.key_lines}
    if isinstance(base.get("table"), dict) and isinstance(mine.get("table"), dict):
        table = dict(base["table"])
        for key, entry in mine["table"].items():
            old = table.get(key)
            if isinstance(old, dict) and isinstance(entry, dict):
                table[key] = {**old, **entry}
            elif isinstance(entry, list):
                table[key] = [_inherit(old, case) for case in entry]
            else:
                table[key] = entry
        out["table"] = table
    return out


# What a report is and what to do about it: kept by an override that splits an entry into a
# list of cases (by count, driver or field); its severity, count and window are the case's own.
_INHERITED = ("summary", "action")


def _inherit(old: Any, case: Any) -> Any:
    """A case of a list given over a base entry, with the base's summary and action where the
    case gives none: from the base entry itself (a mapping), or from the base list's case of
    the same ``when`` and ``drivers`` (a list)."""
    if not isinstance(case, dict):
        return case  # told as an error by the table check
    if isinstance(old, list):
        old = next((c for c in old if isinstance(c, dict) and c.get("when") == case.get("when")
                    and c.get("drivers") == case.get("drivers")), None)
    if not isinstance(old, dict):
        return case
    return {**{k: old[k] for k in _INHERITED if k in old}, **case}


def _base(src: Source, root: LineDict, seen: tuple[str, ...]) -> tuple[list, tuple[AllowedSkip, ...], tuple[str, ...]]:
    """The rule nodes, allowed skips and files of the rules file ``root`` extends."""
    ref = root["extends"]
    if not isinstance(ref, str) or not ref.strip():
        raise src.error("extends must name a rules file (a shipped name such as 'default', or a path)", root,
                        "extends")
    near = Path(src.name).parent / ref if src.name and not Path(ref).is_absolute() else None
    path = near if near is not None and near.is_file() else find_rules(ref)
    if path is None:
        raise src.error(f"extends: no such rules file or shipped rules name {ref!r} (shipped: default)", root,
                        "extends")
    key = str(path.resolve())
    if key in seen or len(seen) > MAX_EXTENDS:
        raise src.error(f"extends: {ref!r} " + ("extends this file again (a cycle)" if key in seen else
                                                 f"goes more than {MAX_EXTENDS} files deep"), root, "extends")
    base_src = load_file(path)
    base = parse_rules(base_src, (*seen, key))  # the base on its own: its errors name its file
    nodes = base_src.data["rules"]
    if isinstance(base_src.data.get("extends"), str):
        nodes = _nodes(base_src, base_src.data, (*seen, key))[0]
    return nodes, base.allowed_skips, (str(path), *base.extends)


def _nodes(src: Source, root: LineDict, seen: tuple[str, ...]) -> tuple[list, tuple[AllowedSkip, ...], tuple[str, ...]]:
    """The rule nodes of a file, its base's merged in."""
    items = root.get("rules")
    if not isinstance(items, list) or (not items and "extends" not in root):
        raise src.error("rules must be a non-empty list", root, "rules")
    if "extends" not in root:
        return items, (), ()
    nodes, skips, files = _base(src, root, seen)
    nodes = list(nodes)
    at = {n.get("name"): i for i, n in enumerate(nodes) if isinstance(n, dict)}
    changed: set[str] = set()
    for node in items:
        name = node.get("name") if isinstance(node, LineDict) else None
        if isinstance(name, str) and name in changed:
            raise src.error(f"duplicate rule name {name!r}", node, "name")
        if isinstance(name, str) and name in at:
            nodes[at[name]] = _merged(nodes[at[name]], node)
            changed.add(name)
        else:
            nodes.append(node)  # a new rule (a new name given twice is refused as a duplicate below)
    return nodes, skips, files


def _fact_tools() -> tuple[str, ...]:
    """The tools the vendor plug-ins run for host facts: the names an allowed skip may give."""
    return tuple(sorted({c.tool for v in registry.vendors().values() for c in v.commands.values()}))


def _written_codes(src: Source, items: Any) -> None:
    """A kernel table's code written as YAML reads another number from it (``0x0d:`` is 13,
    ``013:`` octal 11): refused at its line, whatever the number it makes. The kernel prints
    Xid and SXid codes in decimal, and the table is read against what the log says."""
    for node in items if isinstance(items, list) else ():
        table = node.get("table") if isinstance(node, dict) else None
        for key, text in (table.key_texts if isinstance(table, LineDict) else {}).items():
            raise src.error(f"rule {node.get('name')!r}: table key {text}: YAML reads the number {key} from it; "
                            "write the code in decimal, as the kernel log prints it (13, never 0x0d or 013)",
                            table, key)
        for key in table if isinstance(table, dict) else ():
            # 13.0 (or true, which is 1) equals the code 13 as a key: merged over the default
            # table it replaced Xid 13's entry, and rules check said ok (hostile round 8)
            if isinstance(key, (float, bool)):
                raise src.error(f"rule {node.get('name')!r}: table key {key!r}: YAML reads a "
                                f"{type(key).__name__}, not a code; write the code as a whole number in decimal, "
                                "as the kernel log prints it (13, never 13.0), or a class as text", table, key)


def parse_rules(src: Source, _seen: tuple[str, ...] = ()) -> RuleSet:
    top = validate(RulesFileSchema, src, src.data, context={"fact_tools": _fact_tools()})
    root: LineDict = src.data
    _written_codes(src, root.get("rules"))
    items, base_skips, files = _nodes(src, root, _seen)
    skips = base_skips + tuple(AllowedSkip(s.tool, s.test, s.why, src.where(node))
                               for s, node in zip(top.allow_skips, root.get("allow_skips") or ()))
    if len(items) > MAX_RULES:
        raise src.error(f"a rules file holds at most {MAX_RULES} rules, got {len(items)}", root, "rules")
    rules, names = [], set()
    for i, node in enumerate(items):
        named = isinstance(node, dict) and isinstance(node.get("name"), str)
        within = (node, f"rules.{node['name']}" if named else f"rules[{i}]", root.line_of("rules"))
        op_name = validate(_OpOf, src, {"op": node.get("op")} if isinstance(node, dict) else node,
                           within=within).op
        op = OPS[op_name]
        spec = validate(RULE_MODELS[op_name], src, node, within=within)
        name, metric = spec.name, spec.metric
        if name in names:
            raise src.error(f"duplicate rule name {name!r}", node, "name")
        shape = METRICS[metric].shape
        if shape not in op.shapes:
            raise src.error(f"op {op_name} does not take metric {metric} ({shape}); "
                            f"it takes {', '.join(op.shapes)} metrics", node, "metric")
        default_scope = "card" if shape == PAIRS and node.get("per") == "card" else \
            "supernode" if shape == PAIRS and node.get("per") == "supernode" else \
            METRIC_SCOPE.get(metric, {PAIRS: "link", GROUPS: "host", ENTITIES: "host"}[shape])
        scope = spec.scope or default_scope
        if shape == PAIRS and node.get("per") == "supernode" and scope != "supernode":
            raise src.error(f"rule {name!r}: per: supernode judges domains; set scope: supernode", node, "scope")
        if shape == PAIRS and scope not in ("link", "card") and node.get("per") != "supernode":
            raise src.error(f"rule {name!r}: a pair rule judges links (scope: link) or cards (scope: card); "
                            "localization lifts them to a host or supernode", node, "scope")
        if metric in METRIC_SCOPE and scope != METRIC_SCOPE[metric]:
            raise src.error(f"rule {name!r}: metric {metric} names {METRIC_SCOPE[metric]}s; "
                            f"scope must be {METRIC_SCOPE[metric]}", node, "scope")
        params = {}
        for key, param in op.params.items():
            if key in spec.model_fields_set:
                if param.check is not None and (why := param.check(node[key], node)):
                    raise src.error(f"rule {name!r}: {why}", node, key)
                params[key] = node[key]  # as written: the schema checked its type
            elif param.default is not None and param.default is not REQUIRED:
                params[key] = param.default
        if op.one_of and sum(k in node for k in op.one_of) != 1:
            raise src.error(f"rule {name!r}: op {op_name} needs exactly one of {', '.join(op.one_of)}", node)
        if shape == PAIRS and params.get("per") == "card" and scope != "card":
            raise src.error(f"rule {name!r}: per: card judges cards; set scope: card", node, "scope")
        if shape == PAIRS and "per" in op.params and scope == "card" and "per" not in node:
            params["per"] = "card"  # scope: card judges each card by its pairs as a whole
        if ("facts" in params or "not_facts" in params) and metric not in ("host_fact_failures", "host_fact_warnings"):
            raise src.error(f"rule {name!r}: facts and not_facts apply to host fact metrics only", node,
                            "facts" if "facts" in node else "not_facts")
        _known_names(src, node, name, params)
        names.add(name)
        if spec.enabled:
            rules.append(Rule(name, op_name, metric, Severity(spec.severity), scope,
                              spec.summary if spec.summary is not None else METRICS[metric].description, params,
                              spec.description or "", src.where(node), spec.confirm))
    return RuleSet(tuple(rules), src.name, allowed_skips=skips, extends=files)


# A rule parameter that names facts or counters -> (what it names, the names the views declare).
_NAMED = {"facts": ("fact", registry.fact_names), "not_facts": ("fact", registry.fact_names),
          "counters": ("counter", registry.counter_names)}


def _known_names(src: Source, node: LineDict, rule: str, params: dict) -> None:
    """Refuse a fact or counter no view declares: a misspelt name would judge nothing, silently."""
    for key, (what, known) in _NAMED.items():
        if key != "not_facts" and key in params and not params[key]:  # (not_facts: [] leaves nothing out)
            raise src.error(f"rule {rule!r}: {key}: an empty list names no {what}, and the rule would judge nothing "
                            "(to judge nothing, set enabled: false)", node, key)
        for given in params.get(key) or ():
            if given not in known():
                folded = {n.lower(): n for n in sorted(known())}  # 'ECC' is ecc; 'vl15_dropped' VL15_dropped
                near = difflib.get_close_matches(str(given).lower(), list(folded), n=1)
                hint = f"; did you mean {folded[near[0]]!r}?" if near else f"; see the {what}s sncheck's views declare"
                raise src.error(f"rule {rule!r}: {key}: {given!r} is no {what} any view declares{hint}", node, key)


def find_rules(ref: str) -> Path | None:
    """A rules file named by path, or a shipped name: see :func:`sncheck.config.shipped.resolve`."""
    return resolve(ref, "fixtures", "rules", (".yaml", ".yml"))


def load_rules(ref: str = DEFAULT_RULES) -> RuleSet:
    path = find_rules(ref)
    if path is None:
        raise ConfigError("no such rules file or shipped rules name (shipped: default)", ref)
    rs = parse_rules(load_file(path))
    return RuleSet(rs.rules, rs.source, str(path), rs.allowed_skips, rs.extends)


def load_rules_text(text: str, name: str = "<rules>") -> RuleSet:
    return parse_rules(load_text(text, name))


def evaluate(rules: list[Rule], rows: pd.DataFrame, ctx: DetectContext) -> list[Finding]:
    """Run each rule's op over the rows; findings are merged per culprit later."""
    out: list[Finding] = []
    if rows.empty:
        return out
    ctx.cache = {}
    try:
        groups = group_rules(rules)
        for i, group in enumerate(groups):
            later = {r.metric for g in groups[i + 1:] for r in g if compares(r, ctx)}  # what they will read
            if kind_of(group[0]) is not None:  # one measurement kind: one explanation over its bars
                found = explain_rules(group, rows, ctx, last=group[0].metric not in later)
            else:  # cards a measurement flagged each on its own: a host when every card of it is
                found = lift_cards(OPS[group[0].op].fn(rows, group[0], ctx), ctx)
            out.extend(found)
            # what is named is known to the later rules (drift, pairwise collectives)
            ctx.known = ctx.known | {(f.entity, f.entity_kind) for f in found if f.names_culprit}
            _forget(ctx.cache, later)
    finally:
        ctx.cache = None
    return out


def _forget(cache: dict, wanted: set[str]) -> None:
    """Drop what no later rule reads: a metric's frame and scores, and the pair rows
    behind the pair metrics once none is left (at fleet size each holds millions of rows)."""
    # the rows behind a family of metrics, and the p2p rows' grouping into pairs (health.pairgroups)
    behind = {"_p2p": "p2p_", "_pairs": "pair_", FAMILY: "p2p_", LATENCY: "p2p_latency_tail"}
    for key in list(cache):
        if key[0] == "_paths":
            continue  # the fabric's view: one per topology, kept
        name = key[1] if key[0] == "tier_scores" else key[0]
        if name in behind:
            if not any(w.startswith(behind[name]) for w in wanted):
                del cache[key]
        elif name not in wanted:
            del cache[key]
