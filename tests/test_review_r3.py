"""A reviewer's findings on the parser and ib-counters changes (round 3): each a hostile input
that hung, passed something cut, or judged the wrong entity before. Hangs run under a deadline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.vendors import kernel_log, nccl_ras
from sncheck.vendors.infiniband import counters, mlxlink
from sncheck.vendors.nccltests.parse import parse_nccl_tests
from test_parse_linear import cpu

ROOT = Path(__file__).resolve().parents[1]
NCCL_01 = ROOT / "fixtures/real/nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"


def capped(fn: Callable[[], Any], cap: float) -> Any:
    """``fn()``, failed (not hung) once it has used ``cap`` CPU seconds (test_parse_linear.cpu)."""
    out: list[Any] = []
    assert cpu(lambda: out.append(fn()), cap) < cap and out, f"ran past {cap} CPU seconds (or raised)"
    return out[0]


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- 1: a RAS range of missing ranks is one record, linear in the input ------------------------

_RAS = """Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         8        16        16   RUNNING  INCOMPLETE

Errors
======

#0-0 (0123456789abcdef) INCOMPLETE
  Missing communicator data from 3 ranks
  The missing ranks: {ranks}

Warnings
========
"""


def test_a_missing_ranks_range_is_one_record_and_costs_its_bytes() -> None:
    """'The missing ranks: 0-2000000000' (70 bytes) made one record per rank: 30 s and 2 GB."""
    out = capped(lambda: nccl_ras.parse(_RAS.format(ranks="3, 5-7, 0-2000000000")), 5)
    got = [(r["rank"], r["last_rank"], r["state"]) for r in out["records"]]
    assert got == [(3, None, "INCOMPLETE"), (5, 7, "INCOMPLETE"), (0, 2000000000, "INCOMPLETE")]
    assert out["errors"]  # an INCOMPLETE communicator stays a failure


# -- 2, 3: nccl-tests rows left out, marked or not ----------------------------------------------

def _rows(lines: list[str]) -> list[int]:
    return [i for i, ln in enumerate(lines) if re.match(r"^\s+\d+\s+\d+\s+float", ln)]


def _errors(lines: list[str]) -> list[str]:
    return parse_nccl_tests("\n".join(lines) + "\n")["errors"]


def test_every_size_of_the_banners_loop_has_its_row() -> None:
    """Fixture 01 (minBytes 8 maxBytes 8 GB, step 2 factor: 31 sizes) with rows deleted and no
    marker exited 0; '... 9 rows omitted ...' was skipped with no gap recorded."""
    lines = NCCL_01.read_text().splitlines()
    rows = _rows(lines)
    assert len(rows) == 31 and _errors(lines) == []
    mid = len(rows) // 2
    cut = set(rows[mid - 5:mid + 5])
    for name, text in {
        "ten middle rows": [ln for i, ln in enumerate(lines) if i not in cut],
        "the last (8 GB) row": [ln for i, ln in enumerate(lines) if i != rows[-1]],
        "the first row": [ln for i, ln in enumerate(lines) if i != rows[0]],
    }.items():
        assert any("rows are missing" in e for e in _errors(text)), name
    for marker in ("... 9 rows omitted ...", "...", "...(snip)"):
        marked = [marker if i == rows[mid - 5] else ln for i, ln in enumerate(lines) if i not in cut - {rows[mid - 5]}]
        assert any("reporter's '...'" in e for e in _errors(marked)), marker


def test_a_reduced_max_and_an_excerpt_without_the_banner() -> None:
    """'Reducing maxBytes to N' (common.cu's memory check, after the banner) bounds the loop; an
    excerpt without the banner is judged by the step its rows show."""
    lines = NCCL_01.read_text().splitlines()
    rows = _rows(lines)
    banner = next(i for i, ln in enumerate(lines) if "minBytes" in ln)
    reduced = [ln for i, ln in enumerate(lines) if i != rows[-1]]
    reduced.insert(banner + 1, "#\n# Reducing maxBytes to 6442450944 due to memory limitation")
    assert _errors(reduced) == []  # 8 GB is beyond the reduced bound: 30 sizes
    excerpt = [ln for i, ln in enumerate(lines) if i != banner]
    assert _errors(excerpt) == []
    gone = [ln for i, ln in enumerate(excerpt) if i not in (rows[20] - 1, rows[21] - 1)]
    assert [e for e in _errors(gone) if "missing" in e] == \
        ["rows between 4194304 and 33554432 bytes are missing (the rows' step 2 factor): cut short"]


def test_rows_alternating_with_elisions_cost_rows_not_rows_times_gaps_squared() -> None:
    """2,000 rows each after a '...' (adjacent sizes: the '...' stood for other lines) took over
    60 s: the step was worked out per gap, over every row pair, against a list of the gaps."""
    head = ["#       size         count      type   redop    root     time   algbw   "
            "busbw #wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
            "(GB/s)"]
    body = [ln for k in range(1, 2001) for ln in
            ("...", f"{8 * k:12d}  {2 * k:12d}     float     sum      -1    10.00    0.00    0.00      0    10.00"
                    "    0.00    0.00      0")]
    text = "\n".join(head + body + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.0", ""])
    # an excerpt (no banner): its rows show no one step factor, so no gap is adjacent
    errors = capped(lambda: parse_nccl_tests(text)["errors"], 10)
    assert len(errors) == 1999 and all("names no step" in e for e in errors)  # the first: before every row


# -- 4, 5: ib-counters --since: one rail map, a lost port, an uncovered counter ---------------

def _read(tmp: Path, name: str, ports: dict[str, dict[str, int]]) -> Path:
    path = tmp / name
    path.write_text("".join(f"/sys/class/infiniband/{dev}/ports/1/counters/{c}:{v}\n" for dev, vals in ports.items()
                            for c, v in {"symbol_error": 0, "link_downed": 0, **vals}.items())
                    + counters.END_MARKER + "\n")
    return path


def _judged(*args: object) -> tuple[int, list[tuple[str, str]], str]:
    r = _cli("parse", "ib-counters", *args)
    data = json.loads(r.stdout) if r.stdout.startswith("{") else {}
    return r.exit_code, [(j["rule"], j["entity"]) for j in data.get("judged", [])], r.output


def test_since_a_lost_nic_fails_and_the_others_keep_their_rails(tmp_path: Path) -> None:
    both = _read(tmp_path, "both.txt", {"mlx5_0": {}, "mlx5_1": {}})
    code, judged, out = _judged(_read(tmp_path, "one.txt", {"mlx5_0": {}}), "--since", both)
    assert code == 1 and "mlx5_1 port 1" in out and "missing from this one" in out, out
    earlier = _read(tmp_path, "e.txt", {"mlx5_0": {}, "mlx5_1": {"symbol_error": 5}})
    code, judged, out = _judged(_read(tmp_path, "l.txt", {"mlx5_1": {"symbol_error": 5}}), "--since", earlier)
    # mlx5_1 did not grow, and stays rail 1 (it was judged as mlx5_0's rail 0, a false growth)
    assert judged == [("fabric-errors-before-run", "log/nic1")] and "ib-port-errors-grew" not in out, out
    assert code == 1 and "mlx5_0 port 1" in out


def test_a_counter_no_enabled_rule_judges_is_not_judged(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("extends: default\nrules:\n  - name: ib-port-errors-grew\n    enabled: false\n"
                     "  - name: ib-port-discards-grew\n    enabled: false\n")
    before = _read(tmp_path, "b.txt", {"mlx5_0": {}})
    code, judged, out = _judged(_read(tmp_path, "a.txt", {"mlx5_0": {"link_downed": 500}}), "--since", before,
                                "--rules", rules)
    assert code == 1 and judged == [] and "not judged: counter(s) link_downed, symbol_error" in out, out
    again = tmp_path / "again.txt"  # the same counts read again (a read since itself is refused: hostile r7 IB01)
    again.write_bytes(before.read_bytes())
    assert _judged(again, "--since", before)[0] == 0  # the shipped rules judge every counter read


# -- 6: mlxlink's option bundles in any order; -m's last record ---------------------------------

def test_mlxlink_options_in_any_order_and_a_cut_module_info() -> None:
    real = next((ROOT / "fixtures/real/harvest7/mlxlink").glob("01_*.txt")).read_text()
    assert mlxlink.parse_mlxlink(real)["errors"] == []
    command = next(ln for ln in real.splitlines() if "$ sudo mlxlink" in ln)
    cut = real[:real.index("Physical Counters and BER Info")]
    for flags in ("-cme", "-emc", "-c -m", "-mc"):
        bundled = cut.replace(command, re.sub(r" -[mce]+(?: -[mce]+)*", "", command) + f" {flags}")
        assert any("Physical Counters" in e for e in mlxlink.parse_mlxlink(bundled)["errors"]), flags
    module_only = real.replace(command, re.sub(r" -[mce]+(?: -[mce]+)*", "", command) + " -m")
    inside = module_only[:module_only.index("Rx LOS [per lane]")]
    assert any("Tx Adaptive EQ Fault" in e for e in mlxlink.parse_mlxlink(inside)["errors"])


# -- 7: AER 'Multiple' read as RECEIVED is, ignoring case ---------------------------------------

def test_aer_multiple_ignores_case_as_received_does() -> None:
    for word in ("Multiple", "MULTIPLE", "multiple"):
        out = kernel_log.parse_kernel_log(f"[ 5.1] pcieport 0000:00:1c.5: AER: {word} Corrected error received: "
                                          "0000:00:1c.5\n")
        assert [e.get("multiple") for e in out["events"]] == [True], word


@pytest.mark.parametrize("ranks", ["5-2"])
def test_a_backwards_ras_range_is_a_parse_error(ranks: str) -> None:
    from sncheck.errors import ParseError
    with pytest.raises(ParseError, match="ends before it starts"):
        nccl_ras.parse(_RAS.format(ranks=ranks))


def test_a_runs_second_counter_read_keeps_the_rails_of_the_first() -> None:
    """A run's reads (HostReads.ib): a NIC lost between the read before the traffic and the one
    after moved the other's rail (mlx5_1 read as rail 0 after, rail 1 before)."""
    from types import SimpleNamespace

    from sncheck.backends.hostreads import HostReads
    from sncheck.vendors import facts as hostfacts, registry

    so = registry.counter_reads()["ib-counters"]
    reads = HostReads("inv", None)

    def rails(*devices: str) -> dict[str, int]:
        text = "".join(f"/sys/class/infiniband/{d}/ports/1/counters/symbol_error:0\n" for d in devices)
        out = SimpleNamespace(exit_code=0, stdout=text + counters.END_MARKER + "\n", stderr="", timed_out=False,
                              duration=0.1)
        rows = reads.ib("h1", hostfacts.Expect(cards=0), lambda _cmd: out, {}, 0, so)
        return {p["device"]: p["rail"] for r in rows for p in r["value"]["ports"]}

    assert rails("mlx5_0", "mlx5_1") == {"mlx5_0": 0, "mlx5_1": 1}
    assert rails("mlx5_1") == {"mlx5_1": 1}
