#!/bin/bash
# Usage: bash scripts/fleet-gate-131k.sh TREE OUTDIR  (TREE: a checkout of sncheck; OUTDIR/out.log ends with
# "time USER SYS WALL MAXRSS_KB"; OUTDIR/mon.log samples VmSize/VmHWM/VmRSS and CPU every 3 s)
# the bench's 131,072-card gate (run_fleet's inventory, faults, command line) from TREE, capped at 12 GiB of address space,
# with RSS / address space / CPU sampled from /proc every 3 s
TREE=$1; d=$2; mkdir -p $d; cd $TREE
PYTHONPATH=$TREE python3 -c "
import sys, pathlib; sys.path.insert(0, 'tests/bench')
from bench_fleet_scale import FAULTS, fleet_inventory
d = pathlib.Path('$d'); (d / 'inv.yaml').write_text(fleet_inventory(131072)); (d / 'faults.yaml').write_text(FAULTS)"
cd $d
PYTHONPATH=$TREE prlimit --as=12884901888 nice -n 5 /usr/bin/time -f "time %U %S %e %M" python3 -m sncheck run pre-upgrade-gate -i inv.yaml --faults faults.yaml --seed 1 --out run -q --format html,junit,prometheus > out.log 2>&1 &
sleep 1
pid=$(pgrep -P $(pgrep -P $! | head -1) | head -1)
while kill -0 $! 2>/dev/null; do
  p=$(pgrep -f "sncheck run pre-upgrade-gate -i inv.yaml" | tail -1)
  [ -n "$p" ] && echo "$(date +%T) $(awk '/VmSize|VmRSS|VmHWM/{printf "%s %d ", $1, $2/1024}' /proc/$p/status 2>/dev/null) cpu $(awk '{print ($14+$15)/100}' /proc/$p/stat 2>/dev/null)"
  sleep 3
done > mon.log
wait
echo done >> mon.log
