"""Fifteen recorded runs whose outputs a refactor must leave unchanged (issue 27).

Each case drives the CLI in-process (mock runs over the shipped inventories and fault
plans, a pre-upgrade gate with a state store and its isolation steps, ``watch`` over
recorded dumps, and the old results in ``tests/data/run-614f5fd`` read back through
``history``, ``status``, ``diff`` and every report format) and keeps what a user sees:
the exit code, ``results.json``, ``report.html``, ``junit.xml``, ``sncheck.prom`` and the
command's stdout, normalised for run ids, clock times, transaction ids, temporary paths and
the shipped rules files' sha256 (a rules edit that changes no finding changes no output; and
``evidence.not_run``, gone with the typed record, is left out of results.json). The test
(``tests/test_reference_runs.py``) compares each output's sha256 and a readable summary
(verdict, findings, isolation steps) with ``tests/data/reference/expected.json``.

Regenerate only when an output changes on purpose (say why in the commit), and keep the
normalised outputs to diff against:

    PYTHONPATH=. python3 tests/reference_runs.py --record            # rewrites expected.json
    PYTHONPATH=. python3 tests/reference_runs.py --dump /tmp/before  # the normalised outputs
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/reference"
EXPECTED = DATA / "expected.json"
INV = ROOT / "fixtures/inventories"
FAULTS = ROOT / "fixtures/faults"
OLD = ROOT / "tests/data/run-614f5fd"

REPORTS = ("results.json", "report.html", "junit.xml", "sncheck.prom")
FORMATS = "html,junit,prometheus"

_RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{4}\b")
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_TXN = re.compile(r'"txn": "[0-9a-f]{32}"')  # an isolation transaction's id (actions/transaction.py)
# a run's length: wall time, as the clock times it comes from (the report's and diff's, 70246f5)
_DURATION = re.compile(r'(<dt>duration</dt><dd>)\d+ s(</dd>)|("duration_s": )\d+(?:\.\d+)?')
_EPOCH = re.compile(r"(sncheck_run_(?:started|finished)[^ \n]* )\d+(?:\.\d+)?")


@dataclass
class Case:
    name: str
    argv: list[str]  # {out}, {out2}, {state}, {old} are replaced by the case's paths
    outputs: tuple[str, ...] = REPORTS
    after: list[list[str]] = field(default_factory=list)  # more commands on the same paths


def run_case(mock: str, inventory: str, playbook: str = "pre-upgrade-gate", faults: str | None = None,
             seed: int = 0, *extra: str, out: str = "{out}") -> list[str]:
    argv = ["run", playbook, "-i", str(INV / f"{inventory}.yaml"), "--backend", "mock", "--seed", str(seed),
            "--out", out, "--format", FORMATS, "-q", *extra]
    if faults:
        argv += ["--faults", faults if "/" in faults else str(FAULTS / f"{faults}.yaml")]
    return argv if mock == "run" else [mock, *argv[2:]]


CASES: list[Case] = [
    Case("demo-mixed-nightly", run_case("run", "demo-2sn", "nightly-stress", "demo-mixed", 1)),
    Case("demo-all-types", run_case("run", "demo-2sn", faults="demo-all-types", seed=5)),
    Case("demo-host-level", run_case("run", "demo-2sn", faults="demo-host-level", seed=6)),
    Case("demo-clean-post-delivery", run_case("run", "demo-2sn", "post-delivery", seed=2)),
    Case("demo-transient", run_case("run", "demo-2sn", "post-delivery", str(DATA / "faults-transient.yaml"), 11)),
    Case("demo-scoped", run_case("run", "demo-2sn", "post-delivery", "demo-mixed", 9, "--targets", "node003/gpu2")),
    # A pre-upgrade gate recording into a state store, its isolation steps on the hostfile
    # (applied), then a second night on the same store, and the store read back.
    Case("gate-state", run_case("run", "demo-2sn", faults="demo-mixed", seed=3)
         + ["--state-dir", "{state}", "--via", "hostfile", "--apply"],
         after=[run_case("run", "demo-2sn", "post-delivery", "demo-all-types", 4, out="{out2}")
                + ["--state-dir", "{state}", "--via", "hostfile"],
                ["status", "--state-dir", "{state}"], ["status", "--state-dir", "{state}", "--json"],
                ["status", "--history", "--state-dir", "{state}"], ["history", "--runs", "--state-dir", "{state}"],
                ["history", "node003/gpu2", "--state-dir", "{state}"], ["history", "scale_up", "--state-dir", "{state}"],
                ["diff", "{out}", "{out2}", "--json"]]),
    Case("nvl72-rack", run_case("run", "nvl72-rack", "post-delivery", "platform-nvl72", 7)),
    Case("mi300x-stress", run_case("run", "mi300x-pod", "nightly-stress", str(DATA / "faults-mi300x.yaml"), 8)),
    Case("nvl72-stress-critical", run_case("stress", "nvl72", seed=12)
         + ["--gate", "critical"]),
    Case("demo-golden", run_case("golden", "demo-2sn", faults="demo-all-types", seed=10)),
    Case("watch-dumps", ["watch", str(DATA / "watch-dumps"), "--once", "--out", "{out}", "--format", FORMATS,
                         "-q", "--state-dir", "{state}"],
         after=[["status", "--state-dir", "{state}"]]),
    Case("watch-ras", ["watch", str(ROOT / "fixtures/real/nccl-ras"), "-i", str(DATA / "ras-inventory.yaml"),
                       "--once", "--out", "{out}", "--format", FORMATS, "-q"]),
    Case("old-results", ["history", "--runs", "--state-dir", "{state}"], outputs=(),
         after=[["history", "node012/gpu3", "--state-dir", "{state}"], ["status", "--state-dir", "{state}"],
                ["status", "--history", "--state-dir", "{state}", "--json"],
                ["diff", "{old}", "{old}", "--json"], ["report", "{old}"]]),
]


def _drop_not_run(v):
    """``evidence.not_run`` is gone (issue 27: what a finding rests on is its ``basis``, said
    by the flags): it is left out of the comparison."""
    if isinstance(v, dict):
        return {k: _drop_not_run(x) for k, x in v.items() if not (k == "not_run" and x is True)}
    if isinstance(v, list):
        return [_drop_not_run(x) for x in v]
    return v


def normalise_results(text: str) -> str:
    return json.dumps(_drop_not_run(json.loads(text)), indent=2, ensure_ascii=False) + "\n"


def _rules_digests() -> dict[str, str]:
    """Each shipped rules file's sha256 (as results.json and the report print it) -> a name:
    a rules edit that changes no finding changes no output, and a digest the run got wrong
    is still not replaced."""
    return {hashlib.sha256(p.read_bytes()).hexdigest(): f"<RULES_SHA {p.name}>"
            for p in sorted((ROOT / "fixtures/rules").glob("*.yaml"))}


def normalise(text: str, tmp: Path) -> str:
    text = text.replace(str(tmp), "<TMP>").replace(str(ROOT), "<ROOT>")
    for sha, name in _rules_digests().items():
        text = text.replace(sha, name)
    text = _RUN_ID.sub("<RUN_ID>", text)
    text = _EPOCH.sub(r"\1<EPOCH>", text)
    text = _TXN.sub('"txn": "<TXN>"', text)
    text = _DURATION.sub(lambda m: f"{m[1]}<DURATION>{m[2]}" if m[1] else f'{m[3]}"<DURATION>"', text)
    return _ISO.sub("<TIME>", text)


def _render_reports(run_dir: Path, out: Path) -> str:
    """Every report format rendered again from an old run directory's results and rows."""
    from sncheck.report import FORMATS as ALL, get_renderer
    from sncheck.store.rundir import read_frames

    from sncheck.store.results import read_record

    record = read_record(run_dir)
    rows = read_frames(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, (_, filename) in sorted(ALL.items()):
        get_renderer(name)(record, rows, out / filename)
    return ""


def _invoke(argv: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from sncheck.cli.main import main

    r = CliRunner().invoke(main, argv)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"{argv}: {r.exception!r}\n{r.output}") from r.exception
    return r.exit_code, r.stdout


def play(case: Case, tmp: Path) -> dict[str, str]:
    """The case's normalised outputs: name -> text (``exit`` holds the exit codes)."""
    out, state = tmp / "out", tmp / "state"
    old = tmp / "old"
    if case.name == "old-results":
        shutil.copytree(OLD, old)
        state = old / "state"
    subs = {"{out}": str(out), "{out2}": str(tmp / "out2"), "{state}": str(state), "{old}": str(old / "run")}
    texts: dict[str, str] = {}
    codes = []
    for i, argv in enumerate([case.argv, *case.after]):
        argv = [subs.get(a, a) for a in argv]
        if argv[0] == "report":  # not a command: every renderer over an old run directory
            _render_reports(Path(argv[1]), tmp / "rendered")
            for p in sorted((tmp / "rendered").iterdir()):
                texts[f"rendered/{p.name}"] = normalise(p.read_text(), tmp)
                if p.name == "results.json":
                    texts[f"rendered/{p.name}"] = normalise_results(texts[f"rendered/{p.name}"])
            continue
        code, stdout = _invoke(argv)
        codes.append(code)
        texts[f"stdout-{i}"] = normalise(stdout, tmp)
    texts["exit"] = " ".join(map(str, codes))
    if state.is_dir():  # what an applied isolation wrote (hostfile, exclude list), and the audit log
        for p in sorted(state.rglob("*")):
            if p.is_file() and p.suffix in (".txt", ".jsonl"):
                texts[f"state/{p.relative_to(state)}"] = normalise(p.read_text(), tmp)
    for name in case.outputs:
        for key, d in ((name, out), (f"2/{name}", tmp / "out2")):
            if d.is_dir():
                p = d / name
                texts[key] = normalise(p.read_text(), tmp) if p.is_file() else "<missing>"
                if name == "results.json" and p.is_file():
                    texts[key] = normalise_results(texts[key])
    return texts


def summary(texts: dict[str, str]) -> dict:
    """What a reviewer reads first: exit codes, verdict, findings and isolation steps."""
    s: dict = {"exit": texts["exit"]}
    if texts.get("results.json", "<missing>") != "<missing>":
        r = json.loads(texts["results.json"])
        s["verdict"] = r["verdict"]
        s["findings"] = [f"{f['severity']} {f['entity']} {f['rule']}" for f in r["findings"]]
        s["isolation"] = [f"{e['action']} {e['entity']}" for e in r.get("isolation", [])]
    return s


def digest(texts: dict[str, str]) -> dict[str, str]:
    return {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in sorted(texts.items())}


def play_all(base: Path, only: Callable[[str], bool] = lambda _: True) -> dict[str, dict[str, str]]:
    got = {}
    for case in CASES:
        if only(case.name):
            (base / case.name).mkdir(parents=True)
            got[case.name] = play(case, base / case.name)
    return got


def main(argv: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = play_all(Path(tmp))
    if argv[:1] == ["--record"]:
        EXPECTED.write_text(json.dumps({name: {"summary": summary(t), "sha256": digest(t)} for name, t in got.items()},
                                       indent=1, sort_keys=True) + "\n")
    elif argv[:1] == ["--dump"]:
        for name, texts in got.items():
            for key, text in texts.items():
                p = Path(argv[1]) / name / key
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
