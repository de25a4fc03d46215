"""CloudMatrix384 node output for the simulator, from real captures, with the platform
faults acted out: ``npu_alarm`` (the die's Health "Alarm" in ``npu-smi info`` and in its
``-t health``) and ``hccn_link_down`` (the NPU's ``hccn_tool -net_health`` "Socket
fail", as the 910B driver's tool_ops.c prints status 1: hccn_tool_grammar.NET_HEALTH, and its ``-link``
DOWN; the RoCE plane only, the UB plane stays clean); ``ecc_uncorrectable`` (count) the die's HBM
double-bit error counts in its ``-t ecc``. Captures: npu-smi info of an A3 node (ascend/10),
-t health / -t ecc / a chip's -t board of the MindCluster doc (ascend/12), -t topo (ascend/06), spod-info
(ascend/16, SDID per node), hccn_tool link and fec (ascend/11). No clean optical or
"Success" net_health capture is stored: optical is ascend/13's module with its injected
faults undone, net_health "Success" is the healthy state the hccn_tool docs name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sncheck.vendors.captures import capture
from sncheck.vendors.sim import HostState, ToolOutput
from sncheck.vendors.ascend import sweep
from sncheck.vendors.ascend.hccn_tool_grammar import NET_HEALTH

INFO = "ascend/10_npu-smi_info_A3_910C_16chips_vllm-ascend-issue3002.txt"
DOC = "ascend/12_npu-smi_info_health_ecc_board_usages_mindcluster_doc.txt"
FAULTDIAG = "ascend/13_npu_info_before_910A_faultdiag_test_fixture_socket_failed_optical.txt"
_BASE_SDID = 16777216
ACTED = {"ascend-cm384": {
    "ecc_uncorrectable": "npu-smi info -t ecc: the die's HBM Double Bit Error Count (and aggregate) = count",
    "npu_alarm": "npu-smi info: the die's Health Alarm; its -t health Alarm",
    "hccn_link_down": "hccn_tool: the NPU's -link DOWN and -net_health Socket fail (RoCE plane only)",
}}
RENDERED_CARDS = {"ascend-cm384": 16}  # the A3 node capture lists 16 dies


def _after(text: str, command: str) -> str:
    return text.split(command + "\n", 1)[1].split("\n\n", 1)[0]


def info(alarm_dies: Sequence[int] = ()) -> str:
    lines = capture(INFO).splitlines()
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        cells = nxt.strip("|").split("|")[0].split() if nxt.startswith("|") else []
        if len(cells) == 2 and cells[1].isdecimal() and int(cells[1]) in alarm_dies and "Ascend910" in line:
            lines[i] = line.replace("| OK            |", "| Alarm         |", 1)
    return "\n".join(lines) + "\n"


def healthy_optical() -> str:
    raw = _after(capture(FAULTDIAG), "/usr/local/Ascend/driver/tools/hccn_tool -i 0 -optical -g")
    return (raw.replace("present              : not present", "present              : present")
            .replace("Rx Power1            : 0.0054 mW", "Rx Power1            : 1.0213 mW")
            .replace("Tx Power0            : 4.4035 mW", "Tx Power0            : 1.4035 mW")
            .replace("Rx Los Flag          : 0xff", "Rx Los Flag          : 0x0")
            .replace("Rx LoL Flag          : 0xff", "Rx LoL Flag          : 0x0")) + "\n"


def _hbm_double_bit(ecc: str, count: int) -> str:
    """A die's ``-t ecc`` with ``count`` HBM double-bit errors (the uncorrectable kind)."""
    out = []
    for line in ecc.splitlines():
        key = line.split(":", 1)[0].strip()
        if key in ("HBM Double Bit Error Count", "HBM Double Bit Aggregate Total Err Cnt"):
            line = line.rsplit(":", 1)[0] + f": {count}"
        out.append(line)
    return "\n".join(out) + ("\n" if ecc.endswith("\n") else "")


def board(die: int, chips: int = 2) -> str:
    """``npu-smi info -t board -i N -c C`` of die ``die`` (NPU die // chips, chip die % chips): the
    MindCluster doc's chip board (ascend/12), its NPU and Chip ID the die's, its VDie and NDie ID's
    first group moved by the die's index (one id per die; :func:`sncheck.vendors.sim.own_ids`
    makes them each host's own)."""
    text = _after(capture(DOC), "/usr/local/bin/npu-smi info -i 0 -c 0 -t board")
    out = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        name = key.strip()
        if name in ("VDie ID", "NDie ID"):
            first, _, rest = value.strip().partition(" ")
            value = f" {int(first, 16) ^ die:08X} {rest}"
        elif name in ("NPU ID", "Chip ID"):
            value = f" {die // chips if name == 'NPU ID' else die % chips}"
        out.append(key + sep + value if sep else line)
    return "\n".join(out) + "\n"


def _sweep(view: str, devices: int, body: str, special: dict[int, str]) -> str:
    return "".join(f"\n== device {i} {view}\n{special.get(i, body)}" for i in range(devices))


def outputs(host: str, index: int, faults: Sequence[Any], down_in_domain: Sequence[int] = ()) -> dict[str, str]:  # noqa: ARG001 -- the vendor simulator interface: no IMEX domain here
    alarm = [int(f.target.rsplit("gpu", 1)[1]) for f in faults if f.type == "npu_alarm"]
    roce_down = [int(f.target.rsplit("gpu", 1)[1]) for f in faults if f.type == "hccn_link_down"]
    ecc_dies: dict[int, int] = {}
    for f in faults:
        if f.type == "ecc_uncorrectable":
            die = int(f.target.rsplit("gpu", 1)[1])
            ecc_dies[die] = ecc_dies.get(die, 0) + int(f.count or 1)
    doc = capture(DOC)
    health = _after(doc, "/usr/local/bin/npu-smi info -i 0 -c 0 -t health").strip() + "\n"
    ecc = doc.split("-t ecc\n", 1)[1].split("/usr/local/bin")[0]
    # tool_net_health_exec's TOOL_PRINT_INFO("net health status: %s", g_net_health_status[1]) (tool_ops.c of the
    # ascend910B driver, the A3's): 'Socket fail'; faultdiag's 910A capture (ascend/13) says 'Socket failed', a
    # wording no source we hold prints (parse30), so the simulator prints the grammar's
    socket_failed = f"net health status: {NET_HEALTH[1]}"
    return {
        "info": info(alarm),
        "health": _sweep("health", 16, health, {d: health.replace(": OK", ": Alarm", 1) for d in alarm}),
        "ecc": _sweep("ecc", 16, ecc, {d: _hbm_double_bit(ecc, n) for d, n in ecc_dies.items()}),
        "board": _sweep("board", 16, "", {d: board(d) for d in range(16)}),
        "topo": capture("ascend/06_npu-smi_info_t_topo_910B_hccs_arthurchiao.txt"),
        "spod": capture("ascend/16_npu-smi_info_t_spod-info_A3_superpod384_shmem_doc.txt")
        .replace(f"SDID : {_BASE_SDID}", f"SDID : {_BASE_SDID + 16 * index}"),
        "roce_link": _sweep("link", 16, "link status: UP\n", {d: "link status: DOWN\n" for d in roce_down}),
        "roce_net_health": _sweep("net_health", 16, "net health status: Success\n",
                                  {d: socket_failed + "\n" for d in roce_down}),
        "roce_optical": _sweep("optical", 16, healthy_optical(), {}),
        "roce_fec": _sweep("fec", 16, "fec mode: rs FEC mode\n", {}),
    }


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the CloudMatrix384 node ``state`` (:mod:`sncheck.vendors.sim`),
    or None for a command it does not run."""
    out = outputs(state.host, state.index, state.faults, state.down_in_domain).get(command)
    return None if out is None else ToolOutput(0, out)


assert sweep  # the sweep layout ("== device <n> <view>") is the one sweep.parse_sweep reads
