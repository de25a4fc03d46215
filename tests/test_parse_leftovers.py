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


def test_a_refused_json_record_has_one_wording_and_the_reader_keeps_why_it_stopped() -> None:
    """nccl_json and nccl_inspector each wrote "not one JSON record" (two copies that had to agree),
    and nccl_inspector.unread told a refusal from a cut by finding that phrase in its own message.
    Now jsonprefix.refused words it for both, and json_stream says whether it refused (Tail.refused)."""
    from sncheck.vendors import jsonprefix
    from sncheck.vendors import nccl_inspector as inspector
    from sncheck.vendors.nccltests import nccl_json

    rec = '{"header": {"id": "0x1", "rank": 0}, "coll_perf": {"coll": "AllReduce", "coll_busbw_gbs": 1.0}}'
    twice = rec.replace('"coll_busbw_gbs": 1.0', '"coll_busbw_gbs": 1.0, "coll_busbw_gbs": 2.0')
    objects, tail = inspector.json_stream(f"{rec}\n{twice}\n")
    said = jsonprefix.refused("line 2", jsonprefix.KeyGivenTwice("coll_busbw_gbs"))
    assert len(objects) == 1 and tail == inspector.Tail(said, refused=True)
    assert inspector.unread(tail, 1) == f"{said} (after 1 records)"
    _, cut = inspector.json_stream(f"{rec}\n{rec[:30]}")
    assert not cut.refused and inspector.unread(cut, 1).startswith("cut short after 1 records (line 2: ")
    line = '{"numCycle": 0, "name": "AllReduce", "size": 8, "type": "float", "redop": "sum", "inPlace": 0, ' \
           '"time": 2.0, "algBw": 1.0, "busBw": 2.0, "busBw": 9.0, "wrong": 0}'
    lines = line.replace(', "busBw": 9.0', "") + "\n" + line.replace('"inPlace": 0', '"inPlace": 1') + "\n"
    errors = nccl_json.parse(nccl_json.load(lines), None, "rccl-tests")["errors"]
    assert jsonprefix.refused("line 2", jsonprefix.KeyGivenTwice("busBw")) in errors, errors
