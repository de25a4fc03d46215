"""nvbandwidth, from its grammar (sncheck/vendors/nvidia/nvbandwidth.py: NVIDIA/nvbandwidth's
output.cpp and common.h, and the captures): the version header of v0.2/v0.4 (NOTE before
the CUDA lines) and v0.6 on, the device list, per test 'Running NAME.', its titled matrix
(a row per CPU or per GPU, N/A or 0.00 on a GPU's own diagonal), SUM (every version) and
COEFFICIENT_OF_VARIATION (v0.10); 'Waived:' lines; the pattern check and CUDA failures."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

# test -> (title, rows are GPUs)
_TESTS = {
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", False),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", False),
    "host_to_device_bidirectional_memcpy_ce": ("memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)", False),
    "device_to_device_memcpy_read_ce": ("memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", True),
    "device_to_device_memcpy_write_ce": ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", True),
    "device_to_device_bidirectional_memcpy_read_ce": ("memcpy CE GPU(row) <-> GPU(column) bandwidth (GB/s)", True),
    "host_to_device_memcpy_sm": ("memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)", False),
    "device_to_device_memcpy_read_sm": ("memcpy SM GPU(row) <- GPU(column) bandwidth (GB/s)", True),
    "host_device_latency_sm": ("memory latency SM CPU(row) <-> GPU(column) (ns)", False),
}


def _matrix(rng: random.Random, n: int, square: bool, old: bool, lead: str) -> tuple[list[str], dict]:
    """common.h's operator<<: ' ' then each column in 10 wide, then per row its index and
    each value in 10 wide with 2 decimals ('N/A' on a GPU's own diagonal from v0.5, 0.00 before)."""
    lines = [" " + "".join(f"{c:>10}" for c in range(n))]
    cells: dict[str, dict[str, float | None]] = {}
    for r in range(n if square else 1):
        row = []
        for c in range(n):
            v = None if square and r == c else round(rng.uniform(20, 900), 2)
            row.append(("0.00" if old else "N/A") if v is None else f"{v:.2f}")
            cells.setdefault(str(r), {})[str(c)] = v
        lines.append(f"{lead}{r}" + "".join(f"{x:>10}" for x in row))
    return lines, cells


@generator("nvbandwidth")
def nvbandwidth(rng: random.Random) -> Iterator[Variant]:
    for version in ("v0.4", "v0.6", "v0.8", "v0.10"):
        minor = int(version.split(".")[1])
        for n in sorted({1, rng.choice((2, 4, 8))}):
            note = ["NOTE: This tool reports current measured bandwidth on your system.",
                    "Additional system-specific tuning may be required to achieve maximal peak bandwidth.", ""]
            lines = [f"nvbandwidth Version: {version}", f"Built from Git version: {version}", ""]
            lines += note if minor < 6 else []
            lines += ["CUDA Runtime Version: 12040", "CUDA Driver Version: 12040", "Driver Version: 550.54.15", ""]
            devices = (len(lines), len(lines) + n)  # a reporter's '...' may stand for the device list
            lines += [f"Device {i}: NVIDIA H100 80GB HBM3 (00000000:{0x18 + i:02x}:00)" for i in range(n)] + [""]
            names = rng.sample(sorted(_TESTS), rng.randrange(2, 5))
            if n == 1 and all(_TESTS[t][1] for t in names):  # one GPU waives every GPU-to-GPU test
                names.append("host_to_device_memcpy_ce")
            fail = rng.random() < 0.25 and not (n == 1 and _TESTS[names[-1]][1])  # the last test runs and fails
            values: list[tuple[str, object]] = [("version", version)]
            ran, end = 0, 0
            for k, name in enumerate(names):
                title, square = _TESTS[name]
                if square and n == 1:
                    lines.append("Waived: ")  # a GPU to GPU test on one GPU
                    continue
                lines.append(f"Running {name}.")
                ran += 1
                if fail and k == len(names) - 1:
                    lines += [" Invalid value when checking the pattern at 0x70a640000000",
                              " Current offset [ 0/2097152 ]", "Aborted (core dumped)"]
                    end = len(lines)
                    break
                mat, cells = _matrix(rng, n, square, minor < 5, " " if minor in (6, 8) else "")
                lines += [title] + mat + [""]
                total = round(sum(v for row in cells.values() for v in row.values() if v is not None), 2)
                lines.append(f"SUM {name} {total:.2f}")  # every version (common.h @ v0.1 on)
                values.append((f"tests.{name}.sum", total))
                if minor >= 10:
                    lines.append(f"COEFFICIENT_OF_VARIATION {name} 0.01")
                lines.append("")
                end = len(lines) - 1  # through the last test's last line: Waived and NOTE lines carry no value
                r, c = rng.choice([(r, c) for r in cells for c in cells[r] if cells[r][c] is not None])
                values.append((f"tests.{name}.matrix.{r}.{c}", cells[r][c]))
            if minor >= 6 and not fail:
                lines += ["NOTE: The reported results may not reflect the full capabilities of the platform.",
                          "Performance can vary with software drivers, hardware clocks, and system topology.", ""]
            values.append(("len(tests)", ran))
            yield Variant("nvbandwidth", f"{version} {n} GPUs {len(names)} tests{' fails' if fail else ''}",
                          "\n".join(lines) + "\n", tuple(values), fails=fail, count=ran, end=end, elide=devices)
            if minor >= 6 and not fail:
                # the file saved without printInfo's last newlines (harvest 28's v0.8 run): its last line,
                # 'Performance can vary ... topology.' whole, ends a whole output (nvbandwidth.CLOSING)
                yield Variant("nvbandwidth", f"{version} {n} GPUs saved without its final newline",
                              "\n".join(lines).rstrip("\n"), tuple(values), count=ran, end=end, elide=devices)
    yield Variant("nvbandwidth", "CUDA error", "nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\n"
                  "CUDA Runtime Version: 12040\nCUDA Driver Version: 12040\nDriver Version: 550.54.15\n\n"
                  "Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)\n\nRunning host_to_device_memcpy_ce.\n"
                  "[CUDA_ERROR_OUT_OF_MEMORY] out of memory\n", (("len(tests)", 1),), fails=True, count=1)
