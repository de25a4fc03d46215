"""Round 9 by class: recall, strict precision and runs wholly right per class of fault, from the
runner's results.json (one or more: WORK/results.json of each seed), counted as round 7's
(../scenarios-r7/classes.py, `tally`), as README "Scenarios r9" lists them.

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

CLASSES = {  # class -> its scenarios (r9-NN)
    "clean runs of the new shapes": [1, 12, 21],
    "a leaf-to-spine cable down (one or two)": [2, 3, 9, 28],
    "a whole leaf slow (at every size, or only above 16 MiB)": [4, 11, 17, 27],
    "a spine of a rail group dead; a spine no measured pair crosses (refused)": [7, 8],
    "a bad night: faults in two or three supernodes at once": [5, 18, 25],
    "flapping: a NIC or a leaf until the retest, beside a persistent fault": [6, 16, 24, 29],
    "the smallest supernode of a mixed fleet (one 2-card host)": [13, 14, 15, 19],
    "a slow leaf and a slow card behind it": [10],
    "platform facts of two vendors in one night": [20],
    "boards of a multi-host domain: a board, a card, the whole domain faint": [22, 23, 26],
}

if __name__ == "__main__":
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    for name, numbers in CLASSES.items():
        f, t, e, g, r, n = R7.tally(runs, numbers)
        print(f"| {name} | {len(numbers)} | {f}/{t} | {e}/{g} | {r}/{n} |")
