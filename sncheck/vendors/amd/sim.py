"""MI300X tool output for the simulator, from real captures, with ``xgmi_link_down`` acted
out: the card's XGMI link to its neighbour (gpu N <-> gpu N^1) is gone, so
``rocm-smi --showtopo`` shows that pair over PCIE, 3 hops, weight 52 (the values of the
real PCIe-only capture amd/16). Captures: amd-smi list (amd/01; the blog's eight BDFs), amd-smi monitor (amd/05), ecc blocks (amd/09),
metric (amd/04, the blog author's "[output truncated]" marker dropped), rocm-smi
--showtopo (amd/13), ibstat (ib/04)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sncheck.vendors.captures import capture
from sncheck.vendors.sim import HostState, ToolOutput
from sncheck.vendors.infiniband import sim as infiniband_sim

SHOWTOPO = "amd/13_rocm-smi_showtopo_mi308x_8gpu_xgmi_lowpower_warning.txt"
ACTED = {"amd-mi300x": {
    "ecc_uncorrectable": "amd-smi metric --ecc-blocks: the GPU's UMC UNCORRECTABLE_COUNT = count",
    "thermal_throttle": "amd-smi metric: the GPU's THROTTLE_STATUS THROTTLED",
    "ib_port_down": "ibstat (a real 12-adapter RoCE node): the rail's 400G adapter State Down, Physical state Polling",
    "xgmi_link_down": "rocm-smi --showtopo: the pair gpu N, gpu N^1 over PCIE, 3 hops, weight 52",
}}
RENDERED_CARDS = {"amd-mi300x": 8}  # the showtopo and monitor captures list 8 GPUs
_PCIE = {"Weight": "52", "Hops": "3", "Link Type": "PCIE"}


def showtopo(down: Sequence[tuple[int, int]] = ()) -> str:
    """``rocm-smi --showtopo`` with the XGMI links ``down`` (GPU index pairs) over PCIe."""
    out = []
    table = None
    for line in capture(SHOWTOPO).splitlines():
        if "between two GPUs" in line:
            table = line.strip("= ").split(" between")[0]
        cells = line.split()
        # a row starts with its GPU at the margin; the header row (indented) names the columns
        if table in _PCIE and re.match(r"GPU\d+\s", line) and len(cells) > 2:
            row = int(cells[0][3:])
            for a, b in down:
                if row in (a, b):
                    cells[(b if row == a else a) + 1] = _PCIE[table]
            line = cells[0].ljust(7) + "".join(c.ljust(13) for c in cells[1:]).rstrip()
        out.append(line)
    return "\n".join(out) + "\n"


def per_card(text: str, cards: int, edit=None) -> str:
    """A one-GPU amd-smi capture (``GPU: 0`` and its block) as every card's block, in
    order, each ``edit(index, block)`` where given (the command line it starts with kept)."""
    head, sep, block = text.partition("GPU: 0\n")
    if not sep:
        raise LookupError("the capture has no 'GPU: 0' block")
    block = block.rstrip("\n") + "\n"
    return head + "".join(f"GPU: {i}\n" + (edit(i, block) if edit else block) for i in range(cards))


# the blog's 8x MI300X node: GPU 0..7 at these buses (amd/01 lists 0-2, its note all eight)
BLOG_BDFS = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0", "0000:a6:00.0",
             "0000:c6:00.0", "0000:e5:00.0")


def gpu_list(bdfs: Sequence[str] = BLOG_BDFS) -> str:
    """``amd-smi list`` of a host whose GPU n sits at ``bdfs[n]``: amd/01's layout (its
    command line, ``GPU: n``, indented BDF and UUID, a ' ' separator line), its UUID's
    per-card first byte set to the card's (the capture shows three real ones)."""
    text = capture("amd/01_amd-smi_list_mi300x_8gpu_blog_truncated.txt")
    head = text[:text.index("GPU: 0\n")]
    uuid = re.search(r"UUID: \S{2}(\S+)", text)
    rest = uuid.group(1) if uuid else "ff74a1-0000-1000-8054-e92b0a5d57c8"
    return head + "".join(f"GPU: {i}\n    BDF: {b}\n    UUID: {i:02x}{rest}\n \n" for i, b in enumerate(bdfs))


def _card_faults(faults: Sequence[Any], host: str, index: int, ftype: str) -> list[Any]:
    return [f for f in faults if f.type == ftype and f.target == f"{host}/gpu{index}"]


def ecc_blocks(host: str, cards: int, faults: Sequence[Any]) -> str:
    """``amd-smi metric --ecc-blocks`` for every card; ``ecc_uncorrectable`` (count) sets
    the card's UMC (HBM) UNCORRECTABLE_COUNT, where amd-smi counts HBM errors."""
    def edit(i: int, block: str) -> str:
        count = sum(int(f.count or 1) for f in _card_faults(faults, host, i, "ecc_uncorrectable"))
        if not count:
            return block
        umc, sep, rest = block.partition("        SDMA:")
        return umc.replace("UNCORRECTABLE_COUNT: 0", f"UNCORRECTABLE_COUNT: {count}", 1) + sep + rest
    return per_card(capture("amd/09_amd-smi_metric_ecc_blocks_all_zero_incl_xgmi_wafl_changelog.txt"), cards, edit)


def metric(host: str, cards: int, faults: Sequence[Any]) -> str:
    """``amd-smi metric`` for every card; ``thermal_throttle`` makes its THROTTLE_STATUS
    THROTTLED, as amd-smi prints a throttled GPU."""
    def edit(i: int, block: str) -> str:
        if _card_faults(faults, host, i, "thermal_throttle"):
            return block.replace("THROTTLE_STATUS: UNTHROTTLED", "THROTTLE_STATUS: THROTTLED")
        return block
    text = capture("amd/04_amd-smi_metric_mi300x_blog_truncated.txt").replace("[output truncated]\n", "")
    return per_card(text, cards, edit)


def outputs(host: str, index: int, faults: Sequence[Any], down_in_domain: Sequence[int] = (),  # noqa: ARG001 -- the vendor simulator interface: no tray index or IMEX domain here
            cards: int = 8) -> dict[str, str]:
    down = []
    for f in faults:
        if f.type == "xgmi_link_down":
            gpu = int(f.target.rsplit("gpu", 1)[1])
            down.append((gpu, gpu ^ 1))
    return {
        "list": gpu_list(BLOG_BDFS[:cards] if cards <= len(BLOG_BDFS) else
                         [f"0000:{i:02x}:00.0" for i in range(1, cards + 1)]),
        "monitor": capture("amd/05_amd-smi_monitor_putm_mi300x_8gpu_blog.txt"),
        "showtopo": showtopo(down),
        "ecc_blocks": ecc_blocks(host, cards, faults),
        "metric": metric(host, cards, faults),
        # the real RoCE node's 12 adapters: 8 x 400G (the rails), 4 x 100G; ib_port_down on its rail
        "ibstat": infiniband_sim.render_ibstat(HostState(host, cards, "amd-mi300x", tuple(faults)),
                                               infiniband_sim.ROCE_CAPTURE),
    }


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the MI300X host ``state`` (:mod:`sncheck.vendors.sim`),
    or None for a command it does not run."""
    out = outputs(state.host, state.index, state.faults, state.down_in_domain, state.cards).get(command)
    return None if out is None else ToolOutput(0, out)
