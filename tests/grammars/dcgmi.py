"""dcgmi diag tables, from the grammar in sncheck/vendors/nvidia/dcgmi.py (NVIDIA/DCGM
dcgmi/Diag.cpp 3.3.9 and 4.6.0): the header, Metadata, the four categories with their
tests, 3.x result scopes and 4.x per-GPU rows, Warning/Info rows wrapped at 45 characters,
the footer border."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from grammars import Variant, generator

_BORDER = "+---------------------------+------------------------------------------------+"
_SEP = {"Metadata": "|-----  Metadata  ----------+------------------------------------------------|",
        "Deployment": "|-----  Deployment  --------+------------------------------------------------|",
        "Hardware": "+-----  Hardware  ----------+------------------------------------------------+",
        "Integration": "+-----  Integration  -------+------------------------------------------------+",
        "Stress": "+-----  Stress  ------------+------------------------------------------------+"}
_TESTS = {"Deployment": ("software",), "Hardware": ("memory", "diagnostic"), "Integration": ("pcie",),
          "Stress": ("targeted_stress", "targeted_power", "memory_bandwidth")}
_OLD_NAMES = {"software": "Denylist", "memory": "GPU Memory", "diagnostic": "Diagnostic", "pcie": "PCIe",
              "targeted_stress": "Targeted Stress", "targeted_power": "Targeted Power",
              "memory_bandwidth": "Memory Bandwidth"}


def _row(name: str, info: str) -> str:
    return f"| {name:<25} | {info:<46} |"


def _wrapped(name: str, text: str) -> list[str]:
    """DisplayVerboseInfo: the text in 45-character pieces, the name on the first row only."""
    return [_row(name if i == 0 else "", text[i:i + 45]) for i in range(0, len(text), 45)]


@generator("dcgmi-diag")
def dcgmi_diag(rng: random.Random) -> Iterator[Variant]:
    for version in ("3.3.9", "4.2.3", "4.6.0"):
        new = version.startswith("4")
        for gpus in (1, 4, 8):
            case = rng.choice(("pass", "pass", "fail", "warn", "skip"))
            level = rng.choice((1, 2, 3))
            cats = ["Deployment", "Hardware", "Integration"] + (["Stress"] if level >= 3 else [])
            bad_gpu = rng.randrange(gpus)
            lines = (["Successfully ran diagnostic for group."] if new else []) + [
                _BORDER, _row("Diagnostic", "Result"), "+===========================+" + "=" * 48 + "+",
                _SEP["Metadata"], _row("DCGM Version", version), _row("Driver Version Detected", "570.148.08"),
                _row("GPU Device IDs Detected", ", ".join(["2330"] * gpus))]
            values: list[tuple[str, object]] = [("metadata.DCGM Version", version)]
            results = []
            for cat in cats:
                lines.append(_SEP[cat])
                for test in _TESTS[cat][: 1 if level == 1 else None]:
                    name = test if new else _OLD_NAMES[test]
                    result = "Pass"
                    if cat != "Deployment" and case == "skip":
                        result = "Skip"
                    if case == "fail" and test == "memory":
                        result = "Fail"
                    if case == "warn" and test == "pcie":
                        result = "Warn"
                    results.append((name, result))
                    if new:
                        lines.append(_row(name, result))
                        if result in ("Fail", "Warn"):
                            lines += _wrapped("Warning", f"GPU {bad_gpu} has uncorrectable memory errors and row "
                                              "remappings are pending. Run a field diagnostic on the GPU.")
                        # 4.x prints an entity's Warn as 'Fail' (HelperDisplayEntityResults: no DDR_DISPLAY_WARN)
                        shown = "Fail" if result == "Warn" else result
                        lines += [_row("", f"GPU{g}: {shown if g == bad_gpu or result in ('Pass', 'Skip') else 'Pass'}")
                                  for g in range(gpus)]
                    else:
                        scope = "All" if result in ("Pass", "Skip") else f"GPU: {bad_gpu}"
                        lines.append(_row(name, f"{result} - {scope}"))
                        if result in ("Fail", "Warn"):
                            lines += _wrapped("Warning", f"GPU {bad_gpu} Thermal violations totaling 13.3 seconds "
                                              "started at 1.7e+09 (2024-01-01) and ended at 1.7e+09")
                            if gpus > 1:
                                others = [str(g) for g in range(gpus) if g != bad_gpu]
                                lines.append(_row("", f"Pass - GPU{'s' if len(others) > 1 else ''}: {', '.join(others)}"))
            lines.append(_BORDER)
            worst = next((r for r in ("Fail", "Warn") if any(x == r for _, x in results)), None)
            overall = worst or ("Skip" if case == "skip" else "Pass")
            values += [("result", overall), ("len(tests)", len(results))]
            values += [(f"tests[name={n}].result", r) for n, r in results]
            if new and worst:
                values.append((f"gpus[gpu={bad_gpu}].result", worst))
            yield Variant("dcgmi-diag", f"{version} r{level} {gpus} GPUs {case}", "\n".join(lines) + "\n",
                          tuple(values), fails=overall in ("Fail", "Warn"))  # a Warn: a warning, exit 1
            if case == "pass":  # kept as a code comment: a package's example output (harvest7)
                yield Variant("dcgmi-diag", f"{version} r{level} {gpus} GPUs in a code comment",
                              "\n".join(f"  # {ln}" for ln in lines) + "\n", tuple(values))


@generator("dcgmi-diag")
def mig_refusals(rng: random.Random) -> Iterator[Variant]:
    """NVVS's refusal of a MIG layout it cannot test (NvidiaValidationSuite.cpp BuildCommonGpusList): dcgmi
    prints the system error alone, no table (DCGM issues 70 and 94): the diagnostic did not run."""
    gpu = rng.randrange(8)
    for line in (f"GPU {gpu}'s MIG configuration is incompatible with the diagnostic because it prevents access "
                 "to the entire GPU.",
                 "Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled",
                 "MIG is enabled, but no compute instances are configured"):
        yield Variant("dcgmi-diag", f"MIG refusal: {line[:30]}", line + "\n",
                      (("len(tests)", 0), ("errors", line[:40])), fails=True, finding=line[:40])


@generator("dcgmi-diag")
def json_fragments(rng: random.Random) -> Iterator[Variant]:
    """A ``dcgmi diag -j`` document (Diag.cpp 3.3.9's 'DCGM GPU Diagnostic' with 'test_categories',
    per-GPU 'results') pasted from inside an object: from one of its member lines on, or the one
    '"info" :' member DCGM issue 215 quotes alone. The head is gone, so its values belong to no
    test the output names: a fragment (sncheck.vendors.fragment), no test read, exit 1."""
    gpus = rng.choice((1, 2, 8))
    doc = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [
            {"name": "Denylist", "results": [{"gpu_ids": ",".join(map(str, range(gpus))), "status": "PASS"}]}]},
        {"category": "Integration", "tests": [
            {"name": "PCIe", "results": [{"gpu_id": str(g), "status": "Pass",
                                          "info": f"GPU {g} GPU to Host bandwidth:\t\t24.02 GB/s"}
                                         for g in range(gpus)]}]}],
        "version": "3.3.9"}}
    lines = json.dumps(doc, indent=4).splitlines()
    members = [i for i, ln in enumerate(lines) if i > 1 and ln.lstrip().startswith('"')]
    start = rng.choice(members)
    values = (("len(tests)", 0), ("errors", "a fragment starting inside"))
    yield Variant("dcgmi-diag", f"-j from inside an object (line {start + 1})", "\n".join(lines[start:]) + "\n",
                  values, fails=True, finding="a fragment starting inside")
    yield Variant("dcgmi-diag", "-j: one info member alone (DCGM issue 215)",
                  '"info" : "GPU 0 GPU to Host bandwidth:\\t\\t24.02 GB/s, GPU 0 bidirectional latency:\\t\\t5.019 us",\n',
                  values, fails=True, finding="a fragment starting inside")
