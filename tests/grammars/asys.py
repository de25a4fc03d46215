"""asys tables, from the grammar in sncheck/vendors/ascend/asys.py (hicann/oam-tools: view/table.py
generate_report, health/asys_health.py, diagnose/asys_diagnose.py): health of a group, of one device
with its error codes (five and '......' past five), and the diagnoses with their sections."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator
from grammars.npu_smi import _DCMI

_STATES = ("Healthy", "Warning", "Alarm", "Critical", "Unknown")


def _table(header: list[list[str]], data: dict[str, list[list[str]]], split: bool) -> list[str]:
    """generate_report's lines (oam-tools src/asys/view/table.py), the leading blank line first."""
    rows = header + [r for k, v in data.items() for r in [[k, "0"]] + v]
    widths = [min(max(len(r[i]) for r in rows), 100) + 5 for i in range(2)]

    def rule(fill: str, first: str = "") -> str:
        cells = [(first if i == 0 else "").ljust(w, fill) for i, w in enumerate(widths)]
        return (" +" + fill + (fill + "+ ").join(cells) + fill + "+ ").replace(f"{fill}+ {fill}", f"{fill}+{fill * 2}")

    def row(r: list[str]) -> str:
        return " | " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " | "
    out = ["", rule("-")] + [row(h) for h in header] + [rule("=")]
    for key, rs in data.items():
        if key != "none":
            out.append(rule("-", "--" + key))
        for r in rs:
            out.append(row(r))
            if split:
                out.append(rule("-"))
    if not split:
        out.append(rule("-"))
    return out


@generator("asys")
def asys_tables(rng: random.Random) -> Iterator[Variant]:
    for n in (1, 16):  # asys health: a group
        states = ["Healthy"] * n
        if n > 1:
            states[rng.randrange(n)] = rng.choice(_STATES[1:])
        overall = next((s for s in ("Unknown", "Critical", "Alarm", "Warning") if s in states), "Healthy")
        lines = ["asys health"] + _table([[f"Group of {n} Device", f"Overall Health: {overall}"]],
                                         {"none": [[f"Device ID: {i}", s] for i, s in enumerate(states)]}, True)
        yield Variant("asys", f"health {n} devices {overall}", "\n".join(lines) + "\n",
                      (("reports[0].overall", overall), ("len(reports[0].devices)", n)), fails=overall != "Healthy")
    for codes in (0, 1, 7):  # asys health -d: its codes, five and '......' past five
        listed = [[f"0x{rng.getrandbits(32):08x}", "lp pmbus error"] for _ in range(min(codes, 5))]
        if codes > 5:
            listed.append(["......", "......"])
        state = "Healthy" if not codes else "Warning"
        lines = ["asys health -d=3"] + _table([["Device ID: 3", f"Overall Health: {state}"],
                                               ["", f"ErrorCode Num: {codes}"]], {"none": listed}, True)
        values: list[tuple[str, object]] = [("reports[0].overall", state),
                                            ("len(reports[0].error_codes)", min(codes, 5))]
        yield Variant("asys", f"health -d {codes} codes", "\n".join(lines) + "\n", tuple(values), fails=bool(codes))
    for mode, section, name in (("stress_detect", " Performance ", "Stress Detect"), ("cpu_detect", " Hardware ",
                                                                                     "CPU Detect"),
                                ("hbm_detect", " Hardware ", "HBM Detect")):
        for n in (1, 4):
            res = ["Pass"] * n
            if n > 1 and rng.random() < 0.6:
                res[rng.randrange(n)] = rng.choice(("Warn", "Fail"))
            shown = ", ".join(res) if len(set(res)) > 1 or n == 1 else f"{res[0]} - All"
            head = [[f"Group of {n} Device" if n > 1 else "Device ID: 0", "Diagnostic Result"]]
            rows = [[name, shown]]
            if mode == "hbm_detect":
                ecc = [str(rng.randrange(10)) for _ in range(n)]
                rows = [[name, shown], ["", "(" + ", ".join(ecc) + ")"]] if n > 1 else [[name, f"{shown}({ecc[0]})"]]
            lines = [f"asys diagnose{' -d=0' if n == 1 else ''} -r={mode}"] + _table(head, {section: rows}, False)
            yield Variant("asys", f"diagnose {mode} {n}", "\n".join(lines) + "\n",
                          ((f"reports[0].results.{name}", shown),), fails=shown.startswith(("Warn", "Fail"))
                          or "Warn" in shown or "Fail" in shown)


@generator("ascend-dmi")
def ascend_dmi(rng: random.Random) -> Iterator[Variant]:
    for n in (2, 16):  # ascend-dmi --bw -t p2p: both matrices, a row a device
        lines: list[str] = []
        values: list[tuple[str, object]] = []
        for title in ("Unidirectional Peer to Peer Test", "Bidirectional Peer to Peer Test"):
            if lines:
                lines.append("")
            lines += [title, "       " + "".join(f"{j:<8}" for j in range(n)).rstrip()]
            for i in range(n):
                cells = ["0" if i == j else f"{rng.uniform(300, 800):.1f}" for j in range(n)]
                lines.append(f"{i:<7}" + "".join(f"{c:<8}" for c in cells).rstrip())
                values.append((f"matrices.{title}.{i}.{(i + 1) % n}", float(cells[(i + 1) % n])))
        yield Variant("ascend-dmi", f"p2p {n}", "\n".join(lines) + "\n", tuple(values))
    for rows in (1, 8):  # ascend-dmi --bw -t h2d: the judge's count says whether every row is there
        lines = ["Bandwidth Test", "ID  Size(Bytes)  Execute Times  Bandwidth(GB/s)  Elapsed Time(us)"]
        bw = [round(rng.uniform(20, 60), 3) for _ in range(rows)]
        lines += [f"{i:<4}{536870912:<13}{50:<15}{b:<17}{rng.randrange(400000, 500000)}" for i, b in enumerate(bw)]
        yield Variant("ascend-dmi", f"bandwidth {rows}", "\n".join(lines) + "\n",
                      (("len(bandwidth)", rows), (f"bandwidth[{rows - 1}].GBps", bw[-1])), count=rows)
    for dtype, devices in (("FP16", ["0/1"]), ("BF16", [f"{i // 2}/{i % 2}" for i in range(16)])):  # ascend-dmi -f
        rule = "-" * 89
        lines = [rule, f"    {'Device':<14}{'Execute Times':<21}{'Duration(ms)':<20}{'TFLOPS@' + dtype:<19}Power(W)", rule]
        tf = [round(rng.uniform(300, 800), 3) for _ in devices]
        lines += [f"    {d:<14}{'432,000,000':<21}{1703:<20}{t:<19}{rng.uniform(200, 400):.1f}" for d, t in zip(devices, tf)]
        lines.append(rule)
        yield Variant("ascend-dmi", f"compute {dtype} {len(devices)}", "\n".join(lines) + "\n",
                      (("len(compute)", len(devices)), ("compute[0].tflops", tf[0])))


@generator("ascend-dmi")
def ascend_dmi_failed(rng: random.Random) -> Iterator[Variant]:
    """DCMI's init failure (libdcmi's lines, as npu-smi prints them) instead of any table."""
    lines = rng.choice(_DCMI)
    yield Variant("ascend-dmi", f"DCMI init failed: {lines[-1]}", "\n".join(lines) + "\n",
                  (("tool_failed[0]", lines[-1]),), fails=True, finding=f"ascend-dmi failed before printing its output ({lines[-1]})")
