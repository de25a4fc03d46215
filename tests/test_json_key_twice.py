"""A JSON object that gives a key twice is two outputs spliced (or an edited one): every
JSON view refuses it through jsonprefix.loads, its one home (hostile round 8, H8-08). The
nccl-tests/rccl-tests JSON view read through json.loads and kept the last silently; its
fallbacks (a cut document, JSON lines) must not take the refusal for a cut or a text log."""

from __future__ import annotations

import json
from pathlib import Path

from test_parse_formats import _json_row, _nccl_json, parse

TWICE = "is given twice in one object: two outputs spliced"


def test_an_nccl_tests_document_giving_a_key_twice_is_refused_not_the_last_kept(tmp_path: Path) -> None:
    whole = _nccl_json([_json_row(8, 0.0), _json_row(1024, 0.0)])
    assert parse(tmp_path, "nccl-tests", whole)[0] == 0
    spliced = whole.replace(' "results": [', ' "results": [' + json.dumps(_json_row(8, 0.0)) + '],\n "results": [', 1)
    code, doc, err = parse(tmp_path, "nccl-tests", spliced)
    assert code == 1 and doc["rows"] == [] and any(f"'results' {TWICE}" in e for e in doc["errors"]), doc
    assert not any("cut short" in e for e in doc["errors"]), doc["errors"]
    # ends without a newline: the listing's whole-document check takes it as closed, not a cut
    code, doc, _ = parse(tmp_path, "nccl-tests", spliced.rstrip("\n"))
    assert code == 1 and not any("mid-line" in e or "cut short" in e for e in doc["errors"]), doc["errors"]
    # cut short inside its whole part: the key given twice still named, never a cut document
    cut = spliced[: spliced.index('"average_bus_bandwidith"')]
    code, doc, _ = parse(tmp_path, "nccl-tests", cut)
    assert code == 1 and any(f"'results' {TWICE}" in e for e in doc["errors"]), doc["errors"]


def test_a_json_line_giving_a_key_twice_is_that_line_refused(tmp_path: Path) -> None:
    lines = [json.dumps({"numCycle": 0, "name": "AllReduce", "size": s, "type": "float", "redop": "sum",
                         "inPlace": ip, "time": 20.0, "algBw": 1.0, "busBw": 2.0, "wrong": 0, "ranks": 16})
             for s in (8, 16) for ip in (0, 1)]
    assert parse(tmp_path, "rccl-tests", "\n".join(lines) + "\n")[0] == 0
    for at in (0, 2):   # the first line (the whole text's first value) or another
        spliced = list(lines)
        spliced[at] = spliced[at].replace('"busBw": 2.0', '"busBw": 2.0, "busBw": 900.0')
        code, doc, _ = parse(tmp_path, "rccl-tests", "\n".join(spliced) + "\n")
        assert code == 1 and doc["format"] == "json-lines", doc
        assert f"line {at + 1}: not one JSON record: the key 'busBw' {TWICE}, or an edited one" in doc["errors"], \
            doc["errors"]
        assert len(doc["rows"]) == 2 and 900.0 not in [r[h]["busbw_GBps"] for r in doc["rows"]
                                                       for h in ("in_place", "out_of_place")], doc["rows"]
