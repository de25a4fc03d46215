"""Round 10 by class: recall, strict precision and runs wholly right per class of fault, from the
runner's results.json (one or more: WORK/results.json of each seed), counted as round 7's
(../scenarios-r7/classes.py, `tally`), as README "Scenarios r10" lists them.

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

CLASSES = {  # class -> its scenarios (r10-NN)
    "clean runs of the new shapes": [1, 18],
    "a top-of-rack leaf (every rail of its hosts): slow, dead, flapping": [2, 3, 17],
    "every NIC of one host slow (the leaf and the host healthy)": [4],
    "a leaf-to-spine cable down (alone, beside a slow card)": [5, 13],
    "a spine slow or dead; one no pair crosses (refused)": [11, 12, 24],
    "a rail leaf slow": [22],
    "faults only a stress size shows (leaf, NIC, link above 64 MiB)": [9, 10, 25],
    "corruption: every payload, reductions only": [6, 7, 29, 30],
    "links: scale-out slow, latency, inside a host": [8, 14, 23, 27],
    "a supernode slow; two slow cards of one rail": [15, 26],
    "host down; rare jitter; divergence": [16, 17, 23],
    "platform facts: NVLinks, port down, throttle, ECC, remap": [19, 20, 21, 28],
    "flapping (until the retest) beside a persistent fault": [6, 17, 28, 29],
}

if __name__ == "__main__":
    # r7's tally reads a key's number at [3:5] ("r9-01"); "r10-01" holds it at [4:6]
    runs = [{"rX-" + k[4:]: a for k, a in json.load(open(p)).items()} for p in sys.argv[1:]]
    for name, numbers in CLASSES.items():
        f, t, e, g, r, n = R7.tally(runs, numbers)
        print(f"| {name} | {len(numbers)} | {f}/{t} | {e}/{g} | {r}/{n} |")
