"""Harvest 14's misses (issue 28's measure, fixtures/real/harvest14): each a grammar the tool's own
source prints that the view did not read, held here as a capture-shaped text. Each test failed on
main before its fix."""

from __future__ import annotations

from sncheck.vendors.parsers import failures, parse_text

def test_flight_recorder_analyzer_heads_of_each_version_are_read() -> None:
    """tools/flight_recorder's report head as 2.5 logs it ('Not all ranks joining collective S at entry R',
    its 'expected ranks: N' a count) and as EntryState.log does from 2.6 ('Not all ranks joining collective,
    sequence number: S'): neither had been read (no watchdog message: a parse error, not a finding)."""
    v25 = ("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
           "missing ranks: {1}\ninput sizes: [[3, 4]]\noutput sizes: [[3, 4]]\nexpected ranks: 2\n"
           "collective state: scheduled\ncollective stack trace:\n")
    [m] = parse_text("torch-nccl", v25)["flight_recorder"]["mismatches"]
    assert (m["seq"], m["record_id"], m["missing_ranks"], m["world_size"], m["expected_ranks"]) == (5, 4, [1], 2, None)
    v26 = ("Not all ranks joining collective, sequence number: 4\ninternal record id: 4\ngroup info: main_comm:gloo\n"
           "collective: nccl:all_reduce\nmissing ranks: {1}\nworld size: 2\nexpected ranks: {0, 1}\n"
           "collective state: scheduled\n")
    data = parse_text("torch-nccl", v26)
    [m] = data["flight_recorder"]["mismatches"]
    assert (m["seq"], m["record_id"], m["pg"], m["expected_ranks"]) == (4, 4, "main_comm:gloo", [0, 1])
    assert any("ranks 1 never joined" in f for f in failures(data)), data

