"""The plain ``nvidia-smi`` table, from its grammar (sncheck/vendors/nvidia/smi_table_grammar.py:
NVIDIA's documentation and the real captures): the 2-line GPU block to 440, the 3-line block
with ``MIG M.`` from 450 in the narrow (to 525) and the wide (530+) box, its banner's rule joined
by '+' on 580; 1 to 16 GPUs; a MIG-enabled GPU's ``MIG devices:`` box after the table, and that
box pasted alone (an excerpt: no GPUs); the
Processes box in the old and the GI/CI layout; ``ERR!`` cells and volatile uncorrected ECC."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

# (driver, CUDA, widths of the three cells, block lines, process layout)
_LAYOUTS = {"418": ("418.87.01", "10.1", (31, 22, 22), 2, "old"),
            "525": ("525.125.06", "12.0", (31, 22, 22), 3, "gi"),
            "550": ("550.90.07", "12.4", (41, 24, 22), 3, "gi"),
            "580": ("580.105.08", "13.0", (41, 24, 22), 3, "gi"),  # the banner's rule joined by '+'
            "610": ("610.57.04", "13.3", (41, 24, 22), 3, "gi"),  # 'KMD Version', 'CUDA UMD Version'
            # Windows: the header's 'TCC/WDDM' column for Persistence-M, the cell the driver model
            "527w": ("527.41", "N/A", (31, 22, 22), 3, "gi")}
_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2...", "NVIDIA GeForce ...")
_MIG = (18, 22, 11, 23)  # the 'MIG devices:' box's cells as 470 prints them (nvitop-PR 8)


def _mig_box(gpu: int, instances: int) -> list[str]:
    """The ``MIG devices:`` box nvidia-smi prints after the GPU table of a MIG-enabled GPU."""
    total = sum(_MIG) + 3
    lines = ["+" + "-" * total + "+", "|" + " MIG devices:".ljust(total) + "|", _rule(_MIG, "+", "+", "-"),
             _row([" GPU  GI  CI  MIG ", "         Memory-Usage ", "        Vol", "         Shared        "], _MIG),
             _row(["      ID  ID  Dev ", "           BAR1-Usage ", " SM     Unc", " CE  ENC  DEC  OFA  JPG"], _MIG),
             _row(["", "", "        ECC", ""], _MIG), _rule(_MIG, "|", "+", "=")]
    for k in range(instances):
        lines += [_row([f"  {gpu}    {3 + k}   0   {k}  ", f"  {1000 + k:>6}MiB / 19968MiB ", " 28      0 ",
                        "  2   0    1    0    0 "], _MIG),
                  _row(["", "      4MiB / 32767MiB ", "", ""], _MIG), _rule(_MIG, "+", "+", "-")]
    return lines


def _row(cells: list[str], widths: tuple[int, ...]) -> str:
    return "|" + "|".join(c.ljust(w) for c, w in zip(cells, widths)) + "|"


def _rule(widths: tuple[int, ...], edge: str, joint: str, fill: str) -> str:
    return edge + joint.join(fill * w for w in widths) + edge


@generator("nvidia-smi")
def nvidia_smi(rng: random.Random) -> Iterator[Variant]:
    for name, (driver, cuda, widths, block, plist) in _LAYOUTS.items():
        for n in (1, 8, 16):
            total = sum(widths) + 2
            lines = ["Mon Jan 20 10:18:26 2025"] if rng.random() < 0.6 else []
            head = f" NVIDIA-SMI {driver}   Driver Version: {driver}   CUDA Version: {cuda}" if name < "610" else \
                f" NVIDIA-SMI {driver}   KMD Version: {driver}   CUDA UMD Version: {cuda}"
            edge = "+" if name >= "580" else "|"  # 580: '+---+---+---+' under the banner, '|---+' before
            windows = name.endswith("w")
            lines += ["+" + "-" * total + "+", "|" + head.ljust(total) + "|", _rule(widths, edge, "+", "-")[:-1] + "+",
                      _row([" GPU  Name            TCC/WDDM" if windows else " GPU  Name        Persistence-M",
                            " Bus-Id        Disp.A ", " Volatile Uncorr. ECC "], widths),
                      _row([" Fan  Temp  Perf  Pwr:Usage/Cap", "         Memory-Usage ", " GPU-Util  Compute M. "],
                           widths)]
            if block == 3:
                lines.append(_row(["", "", "               MIG M. "], widths))
            lines.append(_rule(widths, "|", "+", "="))
            values: list[tuple[str, object]] = [("driver_version", driver), ("cuda_version", None if cuda == "N/A" else cuda),
                                                ("len(gpus)", n)]
            fails = False
            err = rng.randrange(n) if rng.random() < 0.3 else None
            ecc = rng.randrange(n) if rng.random() < 0.3 else None
            gpu_name = rng.choice(_NAMES)
            room = 16 if windows else 18  # 'WDDM' takes two more places than 'On'
            if widths[0] < 40 and len(gpu_name) > room:  # the narrow box cuts the name to fit
                gpu_name = gpu_name[:room - 3] + "..."
            mode = rng.choice(("WDDM", "TCC")) if windows else "On"
            mig = block == 3 and n == 8 and rng.random() < 0.5  # GPU 0 in MIG mode: its devices' box follows
            starts = []  # where each GPU's block begins: a reporter's excerpt starts inside one
            for i in range(n):
                starts.append(len(lines))
                bus = f"00000000:{0x19 + i * 0x0b:02X}:00.0"
                temp, power, cap, used, tot = rng.randrange(20, 80), rng.randrange(40, 700), 700, rng.randrange(1, 80000), 81559
                fan = "ERR!" if i == err else "N/A"
                ecc_n = rng.randrange(1, 9) if i == ecc else 0
                lines += [_row([f"{i:>4}  {gpu_name:<{widths[0] - 11 - len(mode)}}  {mode}  ", f" {bus} Off ",
                                f"{ecc_n:>21} "], widths),
                          _row([f" {fan:<4}  {temp}C    P0   {power:>4}W / {cap}W ", f"  {used:>6}MiB / {tot}MiB ",
                                f"     {rng.randrange(0, 101)}%      Default "], widths)]
                if block == 3:
                    lines.append(_row(["", "", "              Enabled " if mig and i == 0 else "             Disabled "],
                                      widths))
                lines.append(_rule(widths, "+", "+", "-"))
                values += [(f"gpus[index={i}].driver_model", mode if windows else None),
                           (f"gpus[index={i}].persistence_mode", None if windows else "On"),
                           (f"gpus[index={i}].bus_id", bus), (f"gpus[index={i}].temp_C", temp),
                           (f"gpus[index={i}].power_W", power), (f"gpus[index={i}].memory_used_MiB", used),
                           (f"gpus[index={i}].ecc_uncorrected", ecc_n)]
                fails |= i == err or ecc_n > 0
            if err is not None:
                values.append((f"gpus[index={err}].fan", "ERR!"))
            if n == 8:  # a paste of the middle of the table: from GPU 0's second line through GPU 3's rule
                part = lines[starts[0] + 1:starts[4]]
                kept = [(at, v) for at, v in values if any(at.startswith(f"gpus[index={i}]") for i in (1, 2, 3))]
                yield Variant("nvidia-smi", f"{name} excerpt of GPUs 1-3", "\n".join(part) + "\n",
                              tuple(kept + [("len(gpus)", 3), ("driver_version", None)]), fails=True)
            if mig:
                box = _mig_box(0, rng.randint(1, 3))
                lines += [""] + box
                values.append(("gpus[index=0].mig_mode", "Enabled"))
                # the box pasted alone: nvidia-smi's, no GPU table in it
                yield Variant("nvidia-smi", f"{name} MIG devices box alone", "\n".join(box) + "\n",
                              (("len(gpus)", 0), ("driver_version", None)), fails=True)
            procs = rng.randrange(0, 3)
            lines += ["", "+" + "-" * total + "+"]
            if plist == "old":
                lines += ["|" + " Processes:".ljust(total - 12) + "GPU Memory |",
                          "|" + "  GPU       PID   Type   Process name".ljust(total - 12) + "Usage      |"]
            else:
                lines += ["|" + " Processes:".ljust(total) + "|",
                          "|" + "  GPU   GI   CI        PID   Type   Process name".ljust(total - 12) + "GPU Memory |",
                          "|" + "        ID   ID".ljust(total - 12) + "Usage      |"]
            lines.append("|" + "=" * total + "|")
            for p in range(procs):
                gi = "" if plist == "old" else "  N/A  N/A"
                row = f"    {p % n}{gi}    {4242 + p:>6}      C   python3"
                lines.append("|" + row.ljust(total - 12) + f"{1000 + p:>7}MiB |")
                values.append((f"processes[pid={4242 + p}].memory_MiB", 1000 + p))
            if not procs:
                lines.append("|" + "  No running processes found".ljust(total) + "|")
            lines.append("+" + "-" * total + "+")
            end = len(lines)  # the Processes box's closing rule: what says it is whole
            values.append(("len(processes)", procs))
            yield Variant("nvidia-smi", f"{name} {n} GPUs", "\n".join(lines) + "\n", tuple(values), fails=fails,
                          end=end, count=n)
    yield Variant("nvidia-smi", "no driver", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                  "driver. Make sure that the latest NVIDIA driver is installed and running.\n",
                  (("len(gpus)", 0),), fails=True)
