"""What the plan measures over each fabric element of an r9 inventory: a check that a truth can show.

Reads only the inventory, the connectivity plan (`sncheck.probeplan`) and the fabric model
(`sncheck.fabric.Fabric.path`), never localization. For each scale-out pair of the default plan,
its path's NICs, cables and switches; prints, per element, how many measured pairs cross it.

Usage: python3 paths.py INVENTORY.yaml [ELEMENT ...]   (ELEMENT: print the pairs that cross it)
"""
import collections
import sys

from sncheck.probeplan import connectivity_plan
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology


def crossing(inv_path):
    topo = Topology(load_inventory(inv_path))
    fab = topo.fabric
    by = collections.defaultdict(list)
    for r in connectivity_plan(topo).rounds:
        if r.phase != "scale_out":
            continue
        for a, b in r.pairs:
            p = fab.path(a, b)
            for e in (*p.nics, *p.cables, *p.switches):
                by[e].append(f"{a}<->{b}")
    return by


if __name__ == "__main__":
    by = crossing(sys.argv[1])
    if len(sys.argv) > 2:
        for e in sys.argv[2:]:
            print(e, len(by.get(e, [])), *sorted(set(by.get(e, []))))
    else:
        for e in sorted(by):
            print(len(set(by[e])), e)
