"""Score a sncheck results.json against a holdout scenario's truth list."""
import json
import re
import sys
import yaml

def canon(entity):
    """A NIC on rail r is scored as the card on rail r (`h/nic4` ~ `h/gpu4`): on rail-aligned
    clusters a scale-out port fault may be named either way."""
    return re.sub(r"/nic(\d+)$", r"/gpu\1", entity)

def kind_of(kind):
    return "card" if kind == "nic" else kind

def norm(entity):
    if "<->" in entity:
        return frozenset(canon(e) for e in entity.split("<->"))
    return canon(entity)

def related(f_entity, t_entity, t_kind):
    fe = norm(f_entity)
    te = norm(t_entity)
    if fe == te:
        return True
    cards = set(fe) if isinstance(fe, frozenset) else {fe}
    if t_kind == "host":
        return any(c == t_entity or c.startswith(t_entity + "/") for c in cards)
    if t_kind == "card":
        return t_entity in cards
    if t_kind == "link":
        return bool(cards & set(te))
    return False

def score(results, truth):
    findings = [f for f in results.get("findings", []) if f.get("severity") in ("critical", "warning", "error")]
    found, missed = [], []
    for t in truth:
        hit = [f for f in findings if norm(f.get("entity", "")) == norm(t["entity"]) and kind_of(f.get("entity_kind")) == kind_of(t["kind"])]
        if not hit and t.get("optional_entity"):
            hit = [f for f in findings if f.get("layer") == t.get("layer")]
        (found if hit else missed).append(t["entity"])
    fp, redundant = [], []
    for f in findings:
        e = f.get("entity", "")
        if any(norm(e) == norm(t["entity"]) and kind_of(f.get("entity_kind")) == kind_of(t["kind"]) for t in truth):
            continue
        if any(t.get("optional_entity") and f.get("layer") == t.get("layer") for t in truth):
            continue
        if any(related(e, t["entity"], t["kind"]) for t in truth):
            redundant.append(e)
        else:
            fp.append(f"{e} [{f.get('entity_kind')}/{f.get('rule')}]")
    return found, missed, fp, redundant

if __name__ == "__main__":
    res = json.load(open(sys.argv[1]))
    truth = yaml.safe_load(open(sys.argv[2])).get("truth") or []
    print(json.dumps(dict(zip(("found", "missed", "fp", "redundant"), score(res, truth)))))
