"""Issue 28's parse leftovers of stop 42 (note-stop42 "Next" 3 and its final read's "Left"): each
test failed on main before its fix."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
_QUERY_GPU = REAL / ("harvest11/nvidia-smi-query-gpu/01_query_gpu_csv_555.42.02_2x_a100_pcie_vbios_92.00.25.00.08_"
                     "temp_39_37_mem_40960_free_40447_app_clocks_765_1215_8space_indent_hpe-japan-e-learning.txt")


def _parse(tmp_path: Path, view: str, text: str, *extra: str, name: str = "log.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p, CliRunner().invoke(main, ["parse", view, str(p), *extra])


def test_a_pasted_nvidia_smi_command_behind_a_bracketed_or_conda_prompt_is_its_command(tmp_path: Path) -> None:
    """smi_select kept its own prompt form (``\\S*[#$>]``), not delivery.PS1 (as mlxlink did until
    2e88275): behind RHEL's ``[root@h ~]#`` or a conda ``(base) user@h:~$`` prompt the pasted
    ``nvidia-smi --query-gpu`` line read as a data row (an error, exit 1, and the header after it
    not taken as the header), and ``nvidia-smi -q -i 0`` selected nothing."""
    from sncheck.vendors.nvidia.smi_select import pasted_command, selected_gpus

    lines = _QUERY_GPU.read_text(encoding="utf-8").splitlines()[1:]
    command = lines[0].strip().removeprefix("# ")
    for prompt in ("[root@h ~]#", "(base) user@h:~$", "#", "$", "user@h:~$ sudo"):
        text = "\n".join([f"{prompt} {command}", *lines[1:]]) + "\n"
        p, r = _parse(tmp_path, "nvidia-smi-query-gpu", text)
        assert r.exit_code == 0, (prompt, r.output)
        assert [g["temperature.gpu"] for g in json.loads(r.stdout)["gpus"]] == [39, 37], prompt
        assert pasted_command(f"{prompt} nvidia-smi -q -i 0,1") and selected_gpus(f"{prompt} nvidia-smi -q -i 0,1") == 2
    assert not pasted_command("[root@h ~]# ibstat") and selected_gpus("[root@h ~]# nvidia-smi -i 0") is None
