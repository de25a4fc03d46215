"""Evidence bundles: for each finding, the raw material behind it, in
``<out>/evidence/<entity>/``:

* ``finding.json``: the finding as in results.json;
* ``rows.jsonl``: the probe rows that involve the entity (its pairs, its pairwise and
  host groups, its ranks, its host's facts, its retest), capped;
* ``<tool>.txt``: the raw output of each host tool the backend read on the entity's
  host (nvidia-smi, ibstat, dcgmi...): the text the parsed facts came from;
* ``kernel.log``: on SSH hosts, the kernel log lines about the accelerators
  (XID, NVRM, AER), gathered with a bounded command;
* ``README.txt``: what each file is.

Each finding's ``evidence.files`` lists its files (relative to the run directory) and
the report links them. Sizes are capped per file and per run; what a cap cut is said
in the file itself and in README.txt.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

EVIDENCE_DIR = "evidence"
MAX_FILE_BYTES = 1 << 20          # one file
MAX_RUN_BYTES = 32 << 20          # all bundles of a run
MAX_ROWS = 2000                   # rows per bundle
MAX_KERNEL_HOSTS = 32             # hosts whose kernel log is read per run
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def entity_dir(entity: str) -> str:
    """A directory name for an entity id (``node001/gpu0<->node001/gpu1`` ->
    ``node001_gpu0--node001_gpu1``); only [A-Za-z0-9._-]."""
    name = _UNSAFE.sub("_", str(entity).replace("<->", "--")).strip("._") or "entity"
    return name[:120]


def _host_of(card: str) -> str:
    return card.rsplit("/", 1)[0] if "/gpu" in card else card


def _members(entity: str, kind: str, results: dict) -> tuple[set[str], set[str]]:
    """(cards, hosts) an entity covers; cards are known only by what the rows name."""
    if kind == "link":
        cards = set(entity.split("<->"))
        return cards, {_host_of(c) for c in cards}
    if kind == "card":
        return {entity}, {_host_of(entity)}
    if kind == "host":
        return set(), {entity}
    for sn in (results.get("topology") or {}).get("supernodes") or []:
        if sn.get("name") == entity:
            return set(), set(map(str, sn.get("hosts") or []))
    return set(), set()


class _Index:
    """Which rows touch which card and host (one pass over the rows)."""

    def __init__(self, rows: list[dict]) -> None:
        self.by_card: dict[str, list[int]] = defaultdict(list)
        self.by_host: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            cards = set()
            for key in ("src", "dst", "card"):
                v = r.get(key)
                if isinstance(v, str):
                    cards.add(v)
            group = r.get("group")
            if isinstance(group, str):
                kind, _, rest = group.partition(":")
                if kind == "pair":
                    cards.update(rest.split("<->"))
                elif kind == "card":
                    cards.add(rest)
                elif kind == "host":
                    self.by_host[rest].append(i)
            for c in cards:
                self.by_card[c].append(i)
            host = r.get("host")
            if isinstance(host, str):
                self.by_host[host].append(i)
            if r.get("kind") == "not_run" and isinstance(r.get("entity"), str):
                target = self.by_card if "/" in r["entity"] else self.by_host
                target[r["entity"]].append(i)

    def rows_for(self, cards: set[str], hosts: set[str], link: tuple[str, str] | None,
                 rows: list[dict]) -> list[int]:
        if link is not None:  # a link: the rows of that pair only, and its hosts' facts
            a, b = link
            pair = set(self.by_card.get(a, [])) & set(self.by_card.get(b, []))
            facts = {i for h in hosts for i in self.by_host.get(h, []) if rows[i].get("kind") == "host_fact"}
            return sorted(pair | facts)
        out: set[int] = set()
        for c in cards:
            out.update(self.by_card.get(c, []))
        for h in hosts:
            out.update(self.by_host.get(h, []))
            if not cards:  # a host or supernode: every row of its cards
                for c, idx in self.by_card.items():
                    if _host_of(c) == h:
                        out.update(idx)
        return sorted(out)


class _Budget:
    def __init__(self, total: int) -> None:
        self.left = total
        self.cut = False

    def write(self, path: Path, text: str, limit: int = MAX_FILE_BYTES) -> bool:
        data = text.encode("utf-8", errors="replace")
        note = b""
        room = min(limit, self.left)
        if len(data) > room:
            note = f"\n# evidence capped: {len(data) - room} more bytes not kept\n".encode()
            data = data[:max(0, room - len(note))]
            self.cut = True
        if not data and not note:
            return False
        path.write_bytes(data + note)
        self.left -= len(data) + len(note)
        return True


VERSION_PATTERNS = {  # what the tools print about their versions (nvidia-smi -q, dcgmi, ibstat...)
    "driver": re.compile(r"Driver Version\s*:?\s*([0-9][0-9.]*)"),
    "cuda": re.compile(r"CUDA Version\s*:?\s*([0-9][0-9.]*)"),
    "hca firmware": re.compile(r"Firmware version:\s*([0-9][0-9.]*)"),
    "dcgm": re.compile(r"(?i)DCGM\s+version\s*:?\s*([0-9][0-9.]*)"),
}


def tool_provenance(backend: Any) -> dict:
    """The commands the backend ran on the hosts and the versions they printed."""
    kept = getattr(backend, "_raw_outputs", None) or {}
    commands: set[str] = set()
    versions: dict[str, set[str]] = defaultdict(set)
    for outputs in kept.values():
        for o in outputs:
            commands.add(o["command"])
            for name, pattern in VERSION_PATTERNS.items():
                versions[name].update(pattern.findall(o["stdout"])[:4])
    return {"commands": sorted(commands), "versions": {k: sorted(v) for k, v in versions.items() if v}}


def collect_evidence(results: dict, rows: list[dict], out_dir: str | Path, backend: Any = None,
                     progress: Callable[[str], None] = lambda m: None,
                     max_run_bytes: int = MAX_RUN_BYTES) -> None:
    """Write every finding's bundle and list its files in ``evidence.files``; record
    the commands run and tool versions seen in ``results["tools"]``."""
    if backend is not None:
        results["tools"] = tool_provenance(backend)
    findings = results.get("findings") or []
    if not findings:
        return
    root = Path(out_dir) / EVIDENCE_DIR
    root.mkdir(parents=True, exist_ok=True)
    index = _Index(rows)
    budget = _Budget(max_run_bytes)
    kernel_cache: dict[str, str | None] = {}
    readmes: dict[Path, list[str]] = {}
    for f in findings:
        entity, kind = str(f.get("entity")), str(f.get("entity_kind"))
        d = root / entity_dir(entity)
        d.mkdir(exist_ok=True)
        files: list[str] = []
        notes: list[str] = []

        def put(name: str, text: str, what: str, limit: int = MAX_FILE_BYTES) -> None:
            if budget.write(d / name, text, limit):
                rel = f"{EVIDENCE_DIR}/{d.name}/{name}"
                if rel not in files:
                    files.append(rel)
                notes.append(f"{name}: {what}")

        cards, hosts = _members(entity, kind, results)
        link = tuple(entity.split("<->", 1)) if kind == "link" else None
        picked = index.rows_for(cards, hosts, link, rows)
        lines = [json.dumps(rows[i], default=str) for i in picked[:MAX_ROWS]]
        if len(picked) > MAX_ROWS:
            lines.append(json.dumps({"note": f"evidence capped: {len(picked) - MAX_ROWS} more rows not kept"}))
        if lines:
            put("rows.jsonl", "\n".join(lines) + "\n",
                f"{min(len(picked), MAX_ROWS)} probe rows involving {entity} (pairs, groups, ranks, facts, retest)")
        for h in sorted(hosts)[:8]:
            outputs = backend.raw_outputs(h) if backend is not None and hasattr(backend, "raw_outputs") else []
            per_tool: dict[str, list[dict]] = defaultdict(list)
            for o in outputs:
                per_tool[o["tool"]].append(o)
            for tool, outs in sorted(per_tool.items()):
                name = f"{entity_dir(h)}.{entity_dir(tool)}.txt" if len(hosts) > 1 else f"{entity_dir(tool)}.txt"
                text = "".join(
                    f"# host: {h}\n# command: {o['command']}\n# exit: {o['exit_code']}\n"
                    + o["stdout"] + ("" if o["stdout"].endswith("\n") or not o["stdout"] else "\n")
                    + (f"# stderr:\n{o['stderr']}\n" if o["stderr"] else "") for o in outs)
                put(name, text, f"raw output of {tool} on {h}, as read by the backend")
            if backend is not None and hasattr(backend, "kernel_log") and (
                    h in kernel_cache or len(kernel_cache) < MAX_KERNEL_HOSTS):
                if h not in kernel_cache:
                    try:
                        kernel_cache[h] = backend.kernel_log(h)
                    except Exception as e:  # noqa: BLE001 - best effort
                        kernel_cache[h] = f"# kernel log not read: {e}\n"
                log = kernel_cache[h]
                if log is not None:
                    name = f"{entity_dir(h)}.kernel.log" if len(hosts) > 1 else "kernel.log"
                    put(name, log, f"kernel log lines on {h} about the accelerators (XID, NVRM, AER), last 200")
        put(f"finding-{entity_dir(f.get('rule'))}.json", json.dumps(f, indent=2, default=str) + "\n",
            f"the finding {f.get('rule')} as in results.json")
        readmes.setdefault(d, [f"Evidence for {kind} {entity}\n"]).append(
            f"\n{f.get('rule')} ({f.get('severity')}):\n" + "\n".join(f"  {n}" for n in notes) + "\n")
        files.append(f"{EVIDENCE_DIR}/{d.name}/README.txt")
        f.setdefault("evidence", {})["files"] = files
    for d, parts in readmes.items():  # small, and written even past the cap: it says what was cut
        (d / "README.txt").write_text("".join(parts) + (
            "\nSome evidence was capped (per-run size limit).\n" if budget.cut else ""), encoding="utf-8")
    if budget.cut:
        progress("evidence: bundles capped at the per-run size limit")
