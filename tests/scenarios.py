"""Random fault scenarios on demo-2sn for detection accuracy (tests and benchmark).

Each fault sits on its own host (two faults on one card are ambiguous by nature), and
every fault has exactly one right culprit.
"""

from __future__ import annotations

import random

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
