"""Generated inputs (hypothesis): the CLI answers each with exit 0, 1 or 2, in one line
when it refuses, never a traceback, and within a time bound per case.

Inventories, playbooks, fault plans and rules are generated as YAML documents that are
mostly well formed with some fields replaced by values of any type (numbers of every
size, NaN and infinities, strings, lists, mappings, nulls), and as raw text; tool
outputs are real captures that are cut, spliced and sprinkled with random text.

Budget (CI): the sum of ``max_examples`` below is the number of generated cases run;
it is printed by ``test_case_count`` and quoted in README.md.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.config.faultplan import FAULT_TYPES
from sncheck.run.inputs import load_faults_text, load_inventory_text, load_playbook_text
from sncheck.probeplan import size_sweep
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
CASE_SECONDS = 10.0  # per generated case, CLI start included (the machine is shared)

# name -> max_examples; their sum is the number of generated cases
BUDGET = {"inventory": 60, "inventory_text": 40, "playbook": 300, "faults": 200, "rules": 50,
          "tool_output": 60, "mock_run": 8}


def _settings(name: str):
    return settings(max_examples=BUDGET[name], deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


junk = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
    | st.sampled_from(["", "-", "--all", "node[1-3]", "n[1-100000000]", "1e400", "450 GB/s", "3 us", "64K",
                       "all_reduce", "slow_card", "p2p_bandwidth", ".nan", "a<->b", "node001/gpu0"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def maybe(valid: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly a valid value (9 in 10), sometimes anything at all."""
    return st.integers(0, 9).flatmap(lambda i: junk if i == 0 else valid)


def mostly(valid: st.SearchStrategy, edge: st.SearchStrategy) -> st.SearchStrategy:
    """A valid value 7 times in 8, else an edge case."""
    return st.integers(0, 7).flatmap(lambda i: edge if i == 0 else valid)


def document(fields: dict[str, st.SearchStrategy], required: tuple[str, ...] = ()) -> st.SearchStrategy:
    """A mapping of these fields (each maybe junk; those not ``required`` may be left out)."""
    return maybe(st.fixed_dictionaries({k: maybe(v) for k, v in fields.items() if k in required},
                                       optional={k: maybe(v) for k, v in fields.items() if k not in required}))


def run_cli(args: list[str]):
    started = time.monotonic()
    result = CliRunner().invoke(main, args)
    elapsed = time.monotonic() - started
    out = result.output
    assert result.exit_code in (0, 1, 2), (result.exit_code, out[-2000:])
    assert "Traceback" not in out, out[-2000:]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 2:
        errors = [ln for ln in out.splitlines() if ln.startswith(("sncheck: error:", "Error:"))]
        assert len(errors) == 1, out[-2000:]
    assert elapsed < CASE_SECONDS, f"{elapsed:.1f} s for {args}"
    return result


def write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, allow_unicode=True))
    return path


# -- inventories -----------------------------------------------------------------------

hostlists = st.sampled_from(["node[001-004]", "n[1-2],m1", "a[1-3]b[1-2]", "x1", "r[01-10]"]) | st.lists(
    st.sampled_from(["h1", "h2", "h3[1-2]"]), min_size=1, max_size=3, unique=True)
supernode = document({"name": st.sampled_from(["sn0", "sn1", "sn2", "-x", "a b"]), "hosts": hostlists,
                      "cards_per_host": st.integers(1, 8) | st.integers(-2, 2000)},
                     required=("name", "hosts", "cards_per_host"))
inventory = document({
    "name": st.text(max_size=10),
    "design": document({"scale_up": document({"bandwidth": st.sampled_from(["450 GB/s", "400 Gb/s", 12, "x"]),
                                              "latency": st.sampled_from(["3 us", "2 ms", 0, "-1 us"])})}),
    "supernodes": st.lists(supernode, min_size=1, max_size=3),
    "backend": st.sampled_from(["mock", "local", "ssh", "tcp"]) | document({"type": st.just("mock"),
                                                                             "dist_backend": st.just("gloo")}),
    "ssh": document({"user": st.just("root"), "port": st.integers(-1, 70000),
                     "connect_timeout": st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=4),
                     "command_timeout": st.integers(-5, 10 ** 9), "forks": st.integers(-1, 10 ** 6)}),
    "hosts": st.dictionaries(st.sampled_from(["node001", "n1", "zz"]),
                             document({"address": st.sampled_from(["127.0.0.1", "1.2.3.4; rm -rf /"]),
                                       "port": st.integers(0, 70000), "cards": st.integers(-1, 5000)}),
                             max_size=2),
    "launcher": document({"type": st.sampled_from(["mpirun", "srun", "bash"]),
                          "extra_args": st.lists(st.text(max_size=5), max_size=3)}),
}, required=("supernodes",))


@_settings("inventory")
@given(doc=inventory)
def test_generated_inventories(tmp_path_factory, doc):
    path = write(tmp_path_factory.mktemp("inv"), "inv.yaml", doc)
    result = run_cli(["inventory", "check", str(path)])
    assert result.exit_code in (0, 2)


@_settings("inventory_text")
@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_generated_inventory_text(tmp_path_factory, text):
    path = write(tmp_path_factory.mktemp("inv"), "inv.yaml", text)
    assert run_cli(["inventory", "check", str(path)]).exit_code in (0, 2)


# -- playbooks: validated, and whatever is accepted is bounded work ---------------------

sizes = mostly(st.sampled_from([1, 8, "64K", "1M", "16M", "1G", 4096]),
              st.sampled_from(["4G", "17G", 0, -8, "1e400", 1.5]))
layer = st.one_of(
    st.sampled_from(["connectivity", "stress", "golden", "nap"]),
    st.fixed_dictionaries({"stress": st.fixed_dictionaries(  # well formed, the sweep generated
        {"min_bytes": sizes, "max_bytes": sizes, "step_factor": mostly(st.integers(1, 4), st.integers(-1, 10 ** 9))})}),
    st.fixed_dictionaries({"stress": document({
        "collectives": mostly(st.lists(st.sampled_from(["all_reduce", "all_to_all"]), min_size=1, max_size=2,
                                       unique=True), st.lists(st.sampled_from(["all_reduce", "bcast"]), max_size=3)),
        "min_bytes": sizes, "max_bytes": sizes,
        "step_factor": mostly(st.integers(1, 4), st.integers(-1, 10 ** 9)),
        "iters": mostly(st.integers(1, 5), st.integers(-1, 10 ** 7)),
        "warmup": mostly(st.integers(0, 3), st.integers(-3, -1)),
        "repeats": mostly(st.integers(1, 3), st.just(0)),
        "duration": mostly(st.sampled_from([0.1, 1, 3600]), st.floats(allow_nan=True, allow_infinity=True))})}),
    st.fixed_dictionaries({"connectivity": document({"bw_bytes": sizes,
                                                     "lat_iters": mostly(st.integers(1, 50), st.integers(-1, 10 ** 7))})}),
    st.fixed_dictionaries({"golden": document({"steps": mostly(st.integers(1, 50), st.integers(-1, 10 ** 7)),
                                               "reference": st.text(max_size=5)})}))
playbook = document({"name": st.text(max_size=8), "layers": st.lists(layer, min_size=1, max_size=3),
                     "gate": st.sampled_from(["critical", "warning", "warning", "fatal"]), "confirm": st.booleans(),
                     "layout": document({"tp": st.integers(-1, 8), "dp": st.integers(0, 4)})},
                    required=("layers",))


@_settings("playbook")
@given(doc=playbook)
def test_generated_playbooks_are_refused_or_bounded(doc):
    text = yaml.safe_dump(doc)
    started = time.monotonic()
    try:
        pb = load_playbook_text(text, "pb.yaml")
    except ConfigError as e:
        assert str(e).startswith("pb.yaml") and "\n" not in str(e)
        return
    finally:
        assert time.monotonic() - started < CASE_SECONDS
    for spec in pb.layers:
        if spec.name == "stress":  # what a run would sweep: finite and short
            sweep = size_sweep(spec.options.get("min_bytes", 8), spec.options.get("max_bytes", 1 << 30),
                               spec.options.get("step_factor", 2))
            assert len(sweep) <= 64
            assert math.isfinite(spec.options.get("duration", 1.0))


# -- fault plans -----------------------------------------------------------------------

TOPO = Topology(load_inventory_text(
    "supernodes:\n  - {name: sn0, hosts: 'n[1-2]', cards_per_host: 2}\n"
    "  - {name: sn1, hosts: 'n[3-4]', cards_per_host: 2}\n", "inv.yaml"))
targets = st.sampled_from(["n1/gpu0", "n2/gpu1", "n1", "n1/gpu0<->n1/gpu1", "n1/gpu0<->n3/gpu0", "n9/gpu0",
                           "--all"])
fault = document({"type": st.sampled_from(sorted(FAULT_TYPES)), "target": targets,
                  "factor": st.floats(allow_nan=True, allow_infinity=True),
                  "probability": st.floats(allow_nan=True, allow_infinity=True),
                  "count": st.integers(-1, 10 ** 9), "links": st.integers(-1, 20), "port": st.integers(-1, 9),
                  "tool": st.sampled_from(["dcgmi", "rm -rf /", ""]), "transient": st.booleans()},
                 required=("type", "target"))


@_settings("faults")
@given(doc=document({"faults": st.lists(fault, max_size=4)}, required=("faults",)))
def test_generated_fault_plans(doc):
    try:
        plan = load_faults_text(yaml.safe_dump(doc), TOPO, "faults.yaml")
    except ConfigError as e:
        assert str(e).startswith("faults.yaml") and "\n" not in str(e)
        return
    for f in plan.faults:  # anything accepted is finite: no NaN reaches the physics
        for v in (f.factor, f.probability):
            assert v is None or (math.isfinite(v) and v > 0)


# -- rules -----------------------------------------------------------------------------

rule = document({"name": st.text(min_size=1, max_size=6), "op": st.sampled_from(
    ["ratio_to_design", "peer_outlier", "threshold", "counter_nonzero", "missing", "golden_band", "eval"]),
    "metric": st.sampled_from(["p2p_bandwidth", "p2p_latency", "host_fact", "golden_loss", "nope"]),
    "severity": st.sampled_from(["critical", "warning", "info", "fatal"]),
    "scope": st.sampled_from(["card", "link", "host", "supernode", "rack"]),
    "below": st.floats(allow_nan=True, allow_infinity=True), "above": st.integers(-5, 10 ** 20),
    "method": st.sampled_from(["ratio", "robust_z", "mean"]), "per": st.sampled_from(["pair", "card"]),
    "min_peers": st.integers(-1, 10), "statuses": st.lists(st.text(max_size=4), max_size=2),
    "enabled": st.booleans()}, required=("name", "op", "metric", "severity"))


@_settings("rules")
@given(doc=document({"rules": st.lists(rule, min_size=1, max_size=3)}, required=("rules",)))
def test_generated_rules(tmp_path_factory, doc):
    path = write(tmp_path_factory.mktemp("rules"), "rules.yaml", doc)
    assert run_cli(["rules", "check", str(path)]).exit_code in (0, 2)


# -- tool outputs ----------------------------------------------------------------------

CAPTURES = sorted(p for p in (ROOT / "fixtures" / "real").rglob("*") if p.is_file() and p.name != "00_INDEX.txt"
                  and p.stat().st_size < 200_000)
TOOLS = ["nccl-tests", "rccl-tests", "nvidia-smi-q", "nvidia-smi-topo", "nvlink-status", "nvlink-errors",
         "nvidia-smi-query-gpu", "ibstat", "dcgmi-diag", "not-a-tool"]


@st.composite
def tool_output(draw) -> str:
    base = draw(st.sampled_from(CAPTURES)).read_text(encoding="utf-8", errors="replace")
    lines = base.splitlines(keepends=True)
    cut = draw(st.integers(0, len(lines)))
    head = lines[:cut]
    noise = draw(st.lists(st.text(max_size=40) | st.sampled_from(
        ["#wrong\n", "  8  2  float  sum  -1  1.0  0.0  0.0  7  1.0  0.0  0.0  N/A\n", "| Result | Fail |\n",
         "NCCL WARN Bootstrap: connection refused\n", "," * 50 + "\n", "\x00\x01\x02\n"]), max_size=4))
    at = draw(st.integers(0, len(head)))
    return "".join(head[:at] + noise + head[at:])


@_settings("tool_output")
@given(tool=st.sampled_from(TOOLS), text=tool_output())
def test_generated_tool_outputs(tmp_path_factory, tool, text):
    path = write(tmp_path_factory.mktemp("log"), "all_reduce_perf.log", text)
    run_cli(["parse", tool, str(path)])


# -- a few whole mock runs with generated playbook options ------------------------------

@_settings("mock_run")
@given(min_bytes=st.sampled_from([1, 8, "4K"]), max_bytes=st.sampled_from([8, "64K", "1M"]),
       factor=st.integers(1, 64), iters=st.integers(0, 3))
def test_generated_mock_runs(tmp_path_factory, min_bytes, max_bytes, factor, iters):
    tmp = tmp_path_factory.mktemp("run")
    inv = write(tmp, "inv.yaml", "supernodes:\n  - {name: sn0, hosts: 'n[1-2]', cards_per_host: 2}\n"
                                  "design:\n  scale_up: {bandwidth: 450, latency: 3}\n"
                                  "  scale_out: {bandwidth: 50, latency: 15}\n")
    pb = write(tmp, "pb.yaml", {"layers": [{"stress": {"min_bytes": min_bytes, "max_bytes": max_bytes,
                                                       "step_factor": factor, "iters": iters}}]})
    result = CliRunner().invoke(main, ["run", str(pb), "-i", str(inv), "--backend", "mock", "-q",
                                       "--out", str(tmp / "out")])
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if factor < 2:  # a sweep that cannot grow never ends: refused in one line
        assert result.exit_code == 2 and ("step_factor" in result.output or "iters" in result.output), result.output
    if result.exit_code != 2:  # a run that ran left its results
        assert (tmp / "out" / "results.json").is_file()


def test_case_count():
    """The number of generated cases this file runs (quoted in README.md)."""
    total = sum(BUDGET.values())
    print(f"hypothesis: {total} generated cases")
    assert total == 718
