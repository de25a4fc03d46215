#!/bin/bash
# Usage: bash scripts/fleet-side.sh CARDS BASE_TREE NEW_TREE OUTDIR [REPEATS]
# The bench's mock pre-upgrade gate (tests/bench/bench_fleet_scale.py: fleet_inventory(CARDS), FAULTS, its
# command line) from two checkouts side by side, alternately, the base first, REPEATS times each (2 by
# default): CPU time on this shared machine moves with its load, so compare only runs taken together.
# Prints, a run a line: "TREE run K: user sys wall peak_KiB exit" (GNU time's %U %S %e %M), then whether the
# last two runs hold the same run (scripts/same-run.py: outputs byte-identical, rows equal, stamps masked).
set -u
cards=$1; base=$2; new=$3; d=$4; reps=${5:-2}
mkdir -p "$d"
PYTHONPATH=$new python3 -c "
import sys, pathlib; sys.path.insert(0, '$new/tests/bench')
from bench_fleet_scale import FAULTS, fleet_inventory
d = pathlib.Path('$d'); (d / 'inv.yaml').write_text(fleet_inventory($cards)); (d / 'faults.yaml').write_text(FAULTS)"
cd "$d"
for k in $(seq 1 "$reps"); do
  for side in base new; do
    tree=$base; [ $side = new ] && tree=$new
    rm -rf "run-$side"
    PYTHONPATH=$tree nice -n 5 /usr/bin/time -o "time-$side" -f "%U %S %e %M" python3 -m sncheck run pre-upgrade-gate \
      -i inv.yaml --faults faults.yaml --seed 1 --out "run-$side" -q --format html,junit,prometheus > "out-$side.log" 2>&1
    rc=$?
    echo "$side run $k: $(tail -1 "time-$side") exit $rc  (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
python3 "$new/scripts/same-run.py" run-base run-new "$base" "$new"
