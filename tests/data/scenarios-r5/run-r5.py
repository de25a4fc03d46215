"""Round-5 runner (a copy of scenarios-r3's run-r3.py, plus refused plans and switch levels): each scenario x seeds through pre-upgrade-gate on the mock, scored.

Usage (from anywhere; `sncheck` on PATH):  python3 run-r5.py [SCENARIO.yaml ...]
One runner for every set: SET=r9 (or r6, r7, r8) runs tests/data/scenarios-<SET>/<SET>-*.yaml
with this file's runner and scoring (run-r6/r7/r8.py are the same, kept for their commands).
A scenario with `refused: true` expects the plan refused when it loads: exit 2 and one line
naming the fault's target (its truth is that line; a run that exits otherwise misses it).
Env: SEEDS (default "1 2 3"), WORK (scratch folder, default ./r5-work under the current
directory), FORCE=1 to rerun existing runs, OUTJSON (default WORK/results.json).
sncheck refuses unknown keys in a fault plan, so each scenario's `faults:` is written to
its own file under WORK first. Scoring is score.py beside this file; the isolation checks
and the wrong-level classification are this file's own.
"""
import json
import os
import subprocess
import sys
import yaml
D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, D)  # score.py sits beside this file
import score as S  # noqa: E402 -- beside this file, on the path just above

SET = os.environ.get("SET", "r5")  # which set's folder the scenarios and inventories are read from
if SET != "r5":
    D = os.path.join(os.path.dirname(D), f"scenarios-{SET}")
WORK = os.path.abspath(os.environ.get("WORK", f"{SET}-work"))
RUNS = os.path.join(WORK, "runs")
FA = os.path.join(WORK, "faults")
os.makedirs(RUNS, exist_ok=True)
os.makedirs(FA, exist_ok=True)

def host_of(e):
    return e.rsplit("/", 1)[0] if "/" in e and "<->" not in e else e

def run(name, seed, force=False):
    name = os.path.basename(name)  # scenarios live in D; a path must never become the faults file
    sc = yaml.safe_load(open(os.path.join(D, name)))
    stem = name[:-5]
    fpath = os.path.join(FA, stem + ".yaml")
    yaml.safe_dump({"faults": sc.get("faults") or []}, open(fpath, "w"), sort_keys=False)
    out = os.path.join(RUNS, f"{stem}-s{seed}")
    if os.path.exists(os.path.join(out, "results.json")) and not force:
        return out, None
    cmd = ["timeout", "600", "sncheck", "run", "pre-upgrade-gate", "-i", os.path.join(D, sc["inventory"]),
           "--backend", "mock", "--faults", fpath, "--seed", str(seed), "--out", out, "-q", "--force"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    open(out + ".log", "w").write(f"rc={p.returncode}\n{p.stdout}\n{p.stderr}")
    return out, p.returncode

def final_actions(res):
    # keyed by the entity and by its canonical form (a NIC as the card on its rail)
    last, seen = {}, {}
    for e in res.get("isolation", []):
        for k in {e["entity"], S.canon(e["entity"])}:
            last[k] = e["action"]
            seen.setdefault(k, []).append(e["action"])
    return last, seen

def refused(sc, out):
    """A plan that must be refused: found when the run exited 2 naming every fault's target."""
    log = open(out + ".log").read()
    rc = int(log.split("\n", 1)[0][3:])
    targets = [f["target"] for f in sc.get("faults") or []]
    # named by its target, or by its line and type (the contract's "FILE:LINE: <type> cannot be acted out on <platform>")
    ok = rc == 2 and all(f["target"] in log or f"{f['type']} cannot be acted out on" in log for f in sc.get("faults") or [])
    return dict(found=targets if ok else [], missed=[] if ok else targets, fp=[], redundant=[], wrong_level=[],
                wrong_iso=[] if ok else [f"plan not refused (rc={rc})"], trans=[], verdict=None, n_info=0,
                quarantined=0, blocked=None, findings=[], refusal=log.strip().splitlines()[-1:])

def analyze(name, out):
    name = os.path.basename(name)
    sc = yaml.safe_load(open(os.path.join(D, name)))
    if sc.get("refused"):
        return refused(sc, out)
    truth = sc.get("truth") or []
    if not os.path.exists(os.path.join(out, "results.json")):  # exit 2 or 3: nothing judged, every item missed
        log = open(out + ".log").read().strip().splitlines()
        t_all = [t["entity"] for t in truth]
        return dict(found=[], missed=t_all, fp=[], redundant=[], wrong_level=[], wrong_iso=[f"no results.json ({log[0]})"],
                    trans=[], verdict=None, n_info=0, quarantined=0, blocked=None, findings=[], refusal=log[-1:])
    res = json.load(open(os.path.join(out, "results.json")))
    found, missed, fp, redundant = S.score(res, truth)
    findings = [f for f in res.get("findings", []) if f.get("severity") in ("critical", "warning", "error")]
    info = [f for f in res.get("findings", []) if f.get("severity") not in ("critical", "warning", "error")]
    last, seen = final_actions(res)
    wrong_level, wrong_iso = [], []
    tset = {(S.norm(t["entity"]), S.kind_of(t["kind"])) for t in truth}
    sn_hosts = {s["name"]: set(s["hosts"]) for s in res.get("topology", {}).get("supernodes", [])}
    for t in truth:
        if t["entity"] not in missed:
            continue
        te, tk = t["entity"], t["kind"]
        for f in findings:
            fe, fk = S.canon(f["entity"]), S.kind_of(f["entity_kind"])
            if (S.norm(fe), fk) in tset:
                continue  # that finding is another truth item
            if tk == "card" and fk == "host" and fe == host_of(te):
                wrong_level.append(f"{te} (card) named as host {fe}")
            elif tk == "host" and fk == "card" and host_of(fe) == te:
                wrong_level.append(f"{te} (host) named as card {fe}")
            elif tk == "link" and fk == "card" and fe in te.split("<->"):
                wrong_level.append(f"{te} (link) named as card {fe}")
            elif tk == "card" and fk == "link" and te in fe.split("<->"):
                wrong_level.append(f"{te} (card) named as link {fe}")
            elif tk == "switch" and fk == "card":
                wrong_level.append(f"{te} (switch) named as NIC/card {fe}")
            elif tk == "card" and fk == "switch" and te.rsplit("/", 1)[0] in json.dumps(f.get("evidence", {})):
                wrong_level.append(f"{te} (NIC/card) named as switch {fe}")
            elif tk == "supernode" and fk in ("host", "card", "link") and \
                    any(host_of(x) in sn_hosts.get(te, ()) for x in fe.split("<->")):
                wrong_level.append(f"{te} (supernode) named as {fk} {fe}")
        # detected, then released by the retest although the fault persists
        rel = [f for f in res.get("findings", []) if S.norm(f["entity"]) == S.norm(te) and S.kind_of(f["entity_kind"]) == S.kind_of(tk)
               and f.get("severity") == "info" and last.get(f["entity"]) == "release"]
        if rel:
            wrong_iso.append(f"{te}: persistent fault flagged then released by the retest [{rel[0]['rule']}]")
    # isolation decisions
    for t in truth:
        if t["entity"] in missed:
            continue
        iso = t.get("iso", "isolate")
        e = t["entity"]
        acts = seen.get(e, [])
        fin = last.get(e)
        if iso == "isolate" and fin != "isolate":
            wrong_iso.append(f"{e}: confirmed fault ends {fin or 'with no isolation entry'} (expected isolate)")
        if iso == "none" and acts:
            wrong_iso.append(f"{e}: must never be quarantined/isolated, got {acts}")
        if iso == "not-isolated" and fin == "isolate":
            wrong_iso.append(f"{e}: should not end isolated, got {acts}")
    for h in sc.get("never_isolate") or []:
        if "isolate" in seen.get(h, []):
            if not any(f"{h}:" in w for w in wrong_iso):
                wrong_iso.append(f"{h}: host with a missing tool isolated ({seen[h]})")
    trans = sc.get("transient") or []
    trans_status = []
    for x in trans:
        fl = [f for f in res.get("findings", []) if S.norm(f["entity"]) == S.norm(x)]
        if not fl:
            continue
        sev = sorted({f["severity"] for f in fl})
        fin = last.get(x)
        trans_status.append(f"{x}: flagged {sev}, final {fin} ({seen.get(x)})")
        if fin != "release":
            wrong_iso.append(f"{x}: transient ends {fin or 'with no isolation entry'} ({','.join(sev)}; rules {sorted({f['rule'] for f in fl})})")
    # false positives / redundant isolated
    for f in findings:
        e = f["entity"]
        if (S.norm(e), S.kind_of(f["entity_kind"])) in tset or e in trans or S.canon(e) in trans:
            continue
        if last.get(e) == "isolate":
            rel = any(S.related(e, t["entity"], t["kind"]) for t in truth)
            wrong_iso.append(f"{e} ({f['entity_kind']}, {'redundant' if rel else 'false positive'}) isolated [{f['rule']}]")
    return dict(found=found, missed=missed, fp=fp, redundant=redundant, wrong_level=sorted(set(wrong_level)),
                wrong_iso=sorted(set(wrong_iso)), trans=trans_status, verdict=res.get("verdict"),
                n_info=len(info), quarantined=len(seen),
                blocked=res.get("isolation_blocked"),
                findings=[(f["entity"], f["entity_kind"], f["layer"], f["rule"], f["severity"], f.get("about"),
                           last.get(f["entity"]), f["message"]) for f in res.get("findings", [])])

def main(prefix="r5-"):
    """Run the scenarios named on the command line (default: every PREFIX*.yaml in D) and print the totals."""
    names = [os.path.basename(a) for a in sys.argv[1:]] or sorted(n for n in os.listdir(D) if n.startswith(prefix) and n.endswith(".yaml"))
    seeds = [int(s) for s in os.environ.get("SEEDS", "1 2 3").split()]
    force = os.environ.get("FORCE") == "1"
    allres, tot = {}, dict(found=0, total=0, findings=0, exact=0, wl=0, wiso=0, right=0, runs=0)
    for n in names:
        for s in seeds:
            out, rc = run(n, s, force)
            a = analyze(n, out)
            a["rc"] = rc
            allres[f"{n}#{s}"] = a
            graded = [f for f in a["findings"] if f[4] in ("critical", "warning", "error")]
            tot["found"] += len(a["found"])
            tot["total"] += len(a["found"]) + len(a["missed"])
            tot["findings"] += len(graded) + (len(a["found"]) if "refusal" in a else 0)
            tot["exact"] += len(graded) - len(a["fp"]) - len(a["redundant"]) + (len(a["found"]) if "refusal" in a else 0)
            tot["wl"] += len(a["wrong_level"])
            tot["wiso"] += len(a["wrong_iso"])
            tot["runs"] += 1  # wholly right: every truth item found, nothing else graded, no wrong level or isolation
            tot["right"] += not (a["missed"] or a["fp"] or a["redundant"] or a["wrong_level"] or a["wrong_iso"])
            print(f"{n} seed {s} rc={rc} found {len(a['found'])}/{len(a['found'])+len(a['missed'])} "
                  f"fp {len(a['fp'])} red {len(a['redundant'])} wl {len(a['wrong_level'])} wiso {len(a['wrong_iso'])}",
                  flush=True)
    print(f"TOTAL recall {tot['found']}/{tot['total']} strict precision {tot['exact']}/{tot['findings']} "
          f"wrong level {tot['wl']} wrong isolation {tot['wiso']} wholly right {tot['right']}/{tot['runs']}", flush=True)
    json.dump(allres, open(os.environ.get("OUTJSON", os.path.join(WORK, "results.json")), "w"), indent=1)

if __name__ == "__main__":
    main(f"{SET}-")
