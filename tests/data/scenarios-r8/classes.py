"""Round 8 by class: recall, strict precision and runs wholly right per class of fault, from the
runner's results.json (one or more: WORK/results.json of each seed), counted as round 7's
(../scenarios-r7/classes.py, `tally`), as README "Scenarios r8" lists them.

Usage: python3 classes.py RESULTS.json [RESULTS.json ...]
"""
import importlib.util
import json
import os
import sys

_spec = importlib.util.spec_from_file_location(
    "classes_r7", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios-r7", "classes.py"))
R7 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R7)

CLASSES = {  # class -> its scenarios (r8-NN)
    "clean runs of odd shapes": [1, 9, 16, 24, 33],
    "vendors side by side: each one's own tool facts": [2, 4, 7, 35],
    "the only spine, or a spine shared by two pods": [5, 17, 18],
    "a switch (a leaf of four rails, a pod's leaf) and a card or NIC elsewhere or beyond": [12, 19, 28],
    "two faults on one path": [13, 20],
    "an uplink cable down (one switch port of a spine's)": [22],
    "a slow card, host or domain on odd sizes (16 cards, one host, 2 trays)": [6, 10, 11, 25, 26, 27, 34],
    "a slow tray inside a slow domain": [37],
    "a fault beside a noisy healthy card": [15, 31],
    "intermittent: transients and rare jitter": [21, 30, 32],
    "NICs, one-way links, dead links, links only under all-to-all": [3, 23, 29, 36, 38],
    "refused: no planned measurement can show it": [8, 14],
}

if __name__ == "__main__":
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    for name, numbers in CLASSES.items():
        f, t, e, g, r, n = R7.tally(runs, numbers)
        print(f"| {name} | {len(numbers)} | {f}/{t} | {e}/{g} | {r}/{n} |")
