"""Random fault scenarios on demo-2sn for detection accuracy (tests and benchmark).

Each fault sits on its own host (two faults on one card are ambiguous by nature), and
every fault has exactly one right culprit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

HOSTS = [f"node{i:03d}" for i in range(1, 17)]
SN = {h: 0 if i < 8 else 1 for i, h in enumerate(HOSTS)}
TYPES = ("slow_card", "degraded_link", "dead_link", "down_host", "corrupt_card", "jittery_card",
         "high_latency_card", "diverge")


def scenario(seed: int, max_faults: int = 4) -> tuple[list[str], set[tuple[str, str]]]:
    rnd = random.Random(seed)
    hosts = rnd.sample(HOSTS, 8)
    lines, culprits = [], set()
    for ftype in rnd.sample(TYPES, rnd.randint(1, max_faults)):
        h = hosts.pop()
        card = f"{h}/gpu{rnd.randrange(4)}"
        if ftype == "slow_card":
            lines.append(f"{{type: slow_card, target: {card}, factor: {rnd.uniform(0.5, 0.9):.2f}}}")
            culprits.add((card, "card"))
        elif ftype in ("degraded_link", "dead_link"):
            if rnd.random() < 0.5:  # inside the host
                a, b = sorted(rnd.sample(range(4), 2))
                link = f"{h}/gpu{a}<->{h}/gpu{b}"
            else:  # rail-aligned across supernodes, to a host that has no fault
                other = next(x for x in hosts if SN[x] != SN[h]) if any(SN[x] != SN[h] for x in hosts) else None
                if other is None:
                    continue
                hosts.remove(other)
                k = rnd.randrange(4)
                x, y = sorted([f"{h}/gpu{k}", f"{other}/gpu{k}"])
                link = f"{x}<->{y}"
            factor = f", factor: {rnd.uniform(0.2, 0.6):.2f}" if ftype == "degraded_link" else ""
            lines.append(f'{{type: {ftype}, target: "{link}"{factor}}}')
            culprits.add((link, "link"))
        elif ftype == "down_host":
            lines.append(f"{{type: down_host, target: {h}}}")
            culprits.add((h, "host"))
        elif ftype == "jittery_card":
            lines.append(f"{{type: jittery_card, target: {card}, probability: {rnd.uniform(0.1, 0.3):.2f}, "
                         f"factor: {rnd.uniform(5, 20):.1f}}}")
            culprits.add((card, "card"))
        elif ftype == "high_latency_card":
            lines.append(f"{{type: high_latency_card, target: {card}, factor: {rnd.uniform(2.5, 5):.1f}}}")
            culprits.add((card, "card"))
        else:
            lines.append(f"{{type: {ftype}, target: {card}}}")
            culprits.add((card, "card"))
    return lines, culprits


# --------------------------------------------------------------------------- hard cases

# What each hard-benchmark case injects; "found" means any acceptable culprit named.
HARD_CASES = TYPES + ("faint_card", "collective_corruption", "ecc_uncorrectable", "remap_pending",
                      "nvlink_down", "ib_port_down", "thermal_throttle", "missing_tool",
                      "two_on_one_host", "link_between_sick_cards", "host_and_card")


@dataclass(frozen=True)
class Injected:
    """One injected fault: its case, its fault line, and the culprits that name it right.

    A fault the hardware shows at two levels (a port down is a host fact and a card whose
    scale-out pairs fail) is found when either is named, and neither is a false positive.
    A card fault that nvidia-smi reports (ECC, a pending remap, NVLink down, a thermal
    slowdown) names the card in the tool's output: only the card is right.
    """

    case: str
    line: str
    accept: frozenset[tuple[str, str]]
    # also found when all of these are named: a dead link between two sick cards is no
    # link finding by DESIGN.md ("a link finding means the link itself, with both cards
    # healthy elsewhere"); isolating both cards takes it out of service
    all_of: frozenset[tuple[str, str]] = frozenset()

    def found(self, named: set[tuple[str, str]]) -> bool:
        return any(self.matches(c) for c in named) or bool(self.all_of and self.all_of <= named)

    def matches(self, culprit: tuple[str, str]) -> bool:
        if culprit in self.accept:
            return True
        # a card's links count where the card itself is acceptable (ib_port_down: its rail)
        entity, kind = culprit
        return kind == "link" and any(k == "card" and e in entity.split("<->") for e, k in self.accept
                                      if self.case == "ib_port_down")


def hard_scenario(seed: int, max_cases: int = 4) -> list[Injected]:
    """1 to ``max_cases`` cases of :data:`HARD_CASES`, each on hosts of its own."""
    rnd = random.Random(seed)
    hosts = rnd.sample(HOSTS, 16)
    out: list[Injected] = []

    def card_of(h: str, k: int | None = None) -> str:
        return f"{h}/gpu{rnd.randrange(4) if k is None else k}"

    for case in rnd.sample(HARD_CASES, rnd.randint(1, max_cases)):
        if len(hosts) < 3:
            break
        h = hosts.pop()
        card = card_of(h)
        if case in TYPES:
            lines, culprits = _one(rnd, case, h, card, hosts)
            out += [Injected(case, line, frozenset({c})) for line, c in zip(lines, culprits)]
        elif case == "faint_card":
            out.append(Injected(case, f"{{type: slow_card, target: {card}, factor: 0.9}}",
                                frozenset({(card, "card")})))
        elif case == "collective_corruption":
            out.append(Injected(case, f"{{type: collective_corruption, target: {card}}}",
                                frozenset({(card, "card")})))
        elif case == "ecc_uncorrectable":
            # nvidia-smi names the card (its GPU section): the card is the culprit, not its host
            out.append(Injected(case, f"{{type: ecc_uncorrectable, target: {card}, count: {rnd.randint(1, 9)}}}",
                                frozenset({(card, "card")})))
        elif case == "remap_pending":
            out.append(Injected(case, f"{{type: remap_pending, target: {card}}}", frozenset({(card, "card")})))
        elif case == "nvlink_down":
            out.append(Injected(case, f"{{type: nvlink_down, target: {card}, links: {rnd.randint(2, 9)}}}",
                                frozenset({(card, "card")})))
        elif case == "ib_port_down":
            port = rnd.randint(1, 4)
            out.append(Injected(case, f"{{type: ib_port_down, target: {h}, port: {port}}}",
                                frozenset({(h, "host"), (f"{h}/gpu{port - 1}", "card"),
                                           (f"{h}/nic{port - 1}", "nic")})))
        elif case == "thermal_throttle":
            out.append(Injected(case, f"{{type: thermal_throttle, target: {card}, factor: "
                                      f"{rnd.uniform(0.6, 0.85):.2f}}}",
                                frozenset({(card, "card")})))
        elif case == "missing_tool":
            tool = rnd.choice(("dcgmi", "ibstat"))
            out.append(Injected(case, f"{{type: missing_tool, target: {h}, tool: {tool}}}",
                                frozenset({(h, "host")})))
        elif case == "two_on_one_host":
            a, b = (f"{h}/gpu{k}" for k in rnd.sample(range(4), 2))
            out.append(Injected(case, f"{{type: slow_card, target: {a}, factor: {rnd.uniform(0.5, 0.8):.2f}}}",
                                frozenset({(a, "card")})))
            out.append(Injected(case, f"{{type: corrupt_card, target: {b}}}", frozenset({(b, "card")})))
        elif case == "link_between_sick_cards":
            a, b = sorted(f"{h}/gpu{k}" for k in rnd.sample(range(4), 2))
            out.append(Injected(case, f"{{type: slow_card, target: {a}, factor: {rnd.uniform(0.5, 0.8):.2f}}}",
                                frozenset({(a, "card")})))
            out.append(Injected(case, f"{{type: high_latency_card, target: {b}, factor: "
                                      f"{rnd.uniform(2.5, 5):.1f}}}", frozenset({(b, "card")})))
            out.append(Injected(case, f'{{type: dead_link, target: "{a}<->{b}"}}',
                                frozenset({(f"{a}<->{b}", "link")}), frozenset({(a, "card"), (b, "card")})))
        elif case == "host_and_card":
            out.append(Injected(case, f"{{type: missing_tool, target: {h}, tool: dcgmi}}",
                                frozenset({(h, "host")})))
            out.append(Injected(case, f"{{type: corrupt_card, target: {card}}}", frozenset({(card, "card")})))
    return out


def _one(rnd: random.Random, ftype: str, h: str, card: str, hosts: list[str]) -> tuple[list[str], list]:
    """One fault of the basic types, as :func:`scenario` draws it."""
    if ftype == "slow_card":
        return [f"{{type: slow_card, target: {card}, factor: {rnd.uniform(0.5, 0.9):.2f}}}"], [(card, "card")]
    if ftype in ("degraded_link", "dead_link"):
        if rnd.random() < 0.5 or not any(SN[x] != SN[h] for x in hosts):
            a, b = sorted(rnd.sample(range(4), 2))
            link = f"{h}/gpu{a}<->{h}/gpu{b}"
        else:
            other = next(x for x in hosts if SN[x] != SN[h])
            hosts.remove(other)
            k = rnd.randrange(4)
            x, y = sorted([f"{h}/gpu{k}", f"{other}/gpu{k}"])
            link = f"{x}<->{y}"
        factor = f", factor: {rnd.uniform(0.2, 0.6):.2f}" if ftype == "degraded_link" else ""
        return [f'{{type: {ftype}, target: "{link}"{factor}}}'], [(link, "link")]
    if ftype == "down_host":
        return [f"{{type: down_host, target: {h}}}"], [(h, "host")]
    if ftype == "jittery_card":
        return [f"{{type: jittery_card, target: {card}, probability: {rnd.uniform(0.1, 0.3):.2f}, "
                f"factor: {rnd.uniform(5, 20):.1f}}}"], [(card, "card")]
    if ftype == "high_latency_card":
        return [f"{{type: high_latency_card, target: {card}, factor: {rnd.uniform(2.5, 5):.1f}}}"], [(card, "card")]
    return [f"{{type: {ftype}, target: {card}}}"], [(card, "card")]


def judge(injected: list[Injected], found: set[tuple[str, str]]) -> tuple[dict[str, list[int]], list]:
    """Per case: [injected, found]; and the findings no injected fault explains."""
    per: dict[str, list[int]] = {}
    for inj in injected:
        tally = per.setdefault(inj.case, [0, 0])
        tally[0] += 1
        tally[1] += inj.found(found)
    extras = [c for c in found if not any(inj.matches(c) for inj in injected)]
    return per, extras
