"""The verdict on a layout: its communication share against the practitioners' bands.

Below about 10% of the step, leave the network alone; above about 30%, the network is the
wall, and keeping TP and EP inside one supernode (or buying one that holds them) is the fix.
High-frequency, high-volume traffic (TP every layer, EP's all-to-all every MoE layer)
belongs inside the scale-up domain; a layout that puts a TP or EP group across it is a
warning whatever the share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sncheck.ledger.comm import EP, PP, TP
from sncheck.ledger.timing import TimeAccount

LOW_BAND, HIGH_BAND = 0.10, 0.30
REASON_SHARE = 0.05   # from this share of the step, exposed DP or PP traffic suggests --overlap
_PHRASE = {"all_gather": "all-gathers", "reduce_scatter": "reduce-scatters", "all_reduce": "all-reduces",
           "all_to_all": "all-to-alls", "sendrecv": "sends and receives"}


@dataclass
class Verdict:
    share: float
    band: str                       # "low" | "middle" | "high"
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def under_upper_band(self) -> bool:
        return self.share < HIGH_BAND

    def to_dict(self) -> dict:
        return {"share": self.share, "band": self.band, "bands": [LOW_BAND, HIGH_BAND],
                "reasons": list(self.reasons), "warnings": list(self.warnings)}


def band_of(share: float) -> str:
    return "low" if share < LOW_BAND else "high" if share >= HIGH_BAND else "middle"


def judge(acct: TimeAccount, domain_cards: int) -> Verdict:
    share = acct.share
    band = band_of(share)
    pct = f"{share:.0%}"
    head = {"low": f"communication is {pct} of the step, under {LOW_BAND:.0%}: leave the network alone",
            "middle": f"communication is {pct} of the step, between {LOW_BAND:.0%} and {HIGH_BAND:.0%}: the network "
                      "matters; keep TP and EP inside a supernode and overlap DP",
            "high": f"communication is {pct} of the step, over {HIGH_BAND:.0%}: the network is the wall; keep TP and "
                    "EP inside one supernode, or buy one that holds them"}[band]
    reasons = [head]
    warnings = []
    by_kind: dict[str, list] = {}
    for line in acct.lines:
        by_kind.setdefault(line.collective.parallelism, []).append(line)
    for kind, lines in sorted(by_kind.items(), key=lambda kv: -acct.exposed.get(kv[0], 0.0)):
        c = lines[0].collective
        where = _where(c.span, domain_cards) if kind != PP else (
            f"crosses supernodes between stages ({c.span.crossing} of {c.span.groups} rank pairs)" if c.span.crossing
            else "keeps its stages inside one supernode" if c.span.hosts > 1 else "keeps its stages inside one host")
        part = acct.exposed.get(kind, 0.0) / acct.step_s if acct.step_s else 0.0
        ops = " and ".join(dict.fromkeys(_PHRASE[ln.collective.op] for ln in lines))
        degree = acct.pp if kind == PP else c.ranks  # a PP collective is a pair of neighbouring stages
        text = f"{kind}={degree} {where}: its {ops} run at {_speed(lines[0].tier)}, {part:.0%} of the step"
        if part == 0 and acct.overlap:
            text += " (hidden by --overlap)"
        elif part >= REASON_SHARE and kind not in (TP, EP) and not acct.overlap:
            text += " (exposed: try --overlap)"
        reasons.append(text)
        if kind in (TP, EP) and c.span.crossing:
            warnings.append(f"{kind}={c.ranks} spans {c.span.domains} supernodes of {domain_cards} "
                            f"({c.span.crossing} of {c.span.groups} {kind} groups cross): its traffic runs every "
                            "layer, keep it inside the scale-up domain")
    return Verdict(share, band, reasons, warnings)


def _where(span, domain_cards: int) -> str:
    if span.domains > 1:
        return f"spans {span.domains} supernodes of {domain_cards}"
    if span.hosts > 1:
        return f"spans {span.hosts} hosts inside one supernode"
    return "sits inside one host"


_SPEED = {"intra_host": "intra-host", "scale_up": "scale-up", "scale_out": "scale-out"}


def _speed(tier: str) -> str:
    """``scale_up`` -> "scale-up speed"; an all-to-all's mixed tiers name each."""
    used = [name for t, name in _SPEED.items() if t in tier]
    return " and ".join(used) + " speed"
