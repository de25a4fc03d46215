"""sncheck under cProfile with CPU time as its clock (a shared machine's load moves wall time).

Usage: python3 scripts/profile-cpu.py OUT.prof run pre-upgrade-gate -i inv.yaml --faults faults.yaml ...
(the arguments after OUT.prof are sncheck's). Read it with
python3 -c "import pstats; pstats.Stats('OUT.prof').sort_stats('cumulative').print_stats(60)".
The clock is the process's (every thread's) CPU time, charged to the function running in the
main thread; the profiler itself adds about a third to Python-heavy code.
"""

import cProfile
import runpy
import sys
import time

out = sys.argv[1]
sys.argv = ["sncheck", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)
profile.enable()
try:
    runpy.run_module("sncheck", run_name="__main__")
except SystemExit:
    pass
finally:
    profile.disable()
    profile.dump_stats(out)
