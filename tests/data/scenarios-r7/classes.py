"""Round 7 by class: recall, strict precision and runs wholly right per class of fault, from the
runner's results.json (one or more: WORK/results.json of each seed), as README "Scenarios r7" lists them.

Usage: python3 classes.py RESULTS.json [RESULTS.json ...]
"""
import json
import sys

CLASSES = {  # class -> its scenarios (r7-NN)
    "clean runs of odd shapes": [1, 11, 19, 27, 33, 40, 43],
    "platform tool faults": [2, 3, 5, 12, 22, 32],
    "two faults at two levels in one supernode or host": [13, 14, 21, 23],
    "a whole domain slow with a much slower card inside": [4, 34],
    "a slow switch beside a dead or near-dead device behind it": [6, 15, 24, 28, 29],
    "both ends of one cable": [30],
    "the only spine, or a spine one host is beyond": [20, 35],
    "a faint card, a faint whole pod, a slow host": [9, 16, 36, 37],
    "symptoms a pair shows beside a latency link": [17, 25, 26],
    "transients, late faults on a retest's control": [7, 8, 38, 39],
    "a card's every NVLink down; a latency link on a two-pair tier": [31, 45],
    "a tier with one pair only": [41, 42, 44],
    "refused: no planned measurement can show it": [10, 18, 46],
}


def tally(runs: list[dict], numbers: list[int]) -> tuple[int, int, int, int, int, int]:
    """(found, truth items, exact graded findings, graded findings, runs wholly right, runs)."""
    found = total = exact = graded = right = n = 0
    for results in runs:
        for key, a in results.items():
            if int(key[3:5]) not in numbers:
                continue
            refusal = len(a["found"]) if "refusal" in a else 0
            g = [x for x in a["findings"] if x[4] in ("critical", "warning", "error")]
            n += 1
            found += len(a["found"])
            total += len(a["found"]) + len(a["missed"])
            graded += len(g) + refusal
            exact += len(g) - len(a["fp"]) - len(a["redundant"]) + refusal
            right += not (a["missed"] or a["fp"] or a["redundant"] or a["wrong_level"] or a["wrong_iso"])
    return found, total, exact, graded, right, n


if __name__ == "__main__":
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    for name, numbers in CLASSES.items():
        f, t, e, g, r, n = tally(runs, numbers)
        print(f"| {name} | {len(numbers)} | {f}/{t} | {e}/{g} | {r}/{n} |")
