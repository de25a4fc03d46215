"""Round-8 runner: round 5's runner and scoring (../scenarios-r5/run-r5.py, score.py) on this folder's r8-*.yaml.

Usage (from anywhere; `sncheck` on PATH):  python3 run-r8.py [SCENARIO.yaml ...]
Env as run-r5.py: SEEDS (default "1 2 3"), WORK (default ./r8-work), FORCE=1, OUTJSON.
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("WORK", "r8-work")
_spec = importlib.util.spec_from_file_location("run_r5", os.path.join(HERE, "..", "scenarios-r5", "run-r5.py"))
R5 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R5)
R5.D = HERE  # scenarios and inventories are read from this folder

if __name__ == "__main__":
    R5.main("r8-")
