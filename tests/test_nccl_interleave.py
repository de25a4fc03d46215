"""NCCL_DEBUG logs of several processes writing one file without line buffering (issue 28):
debug.cc (NVIDIA/nccl, ncclDebugLog at 2.30) prints each line with one vfprintf to stdout unless
NCCL_DEBUG_FILE names a file (which it makes line-buffered, setlinebuf); stdout into a pipe or a
file is block-buffered, so ranks sharing it (torchrun's children, mpirun without --tag-output)
interleave at any byte of their buffers. The logs here are the nccl-debug generator's whole logs
(tests/grammars/nccl_logs.py), each process's lines written as its own stream and cut into blocks.

What the view can tell: a line holding another process's line (its ':PID:TID [DEV] NCCL' inside)
and an 'Init COMPLETE' whose cudaDev is not its line's [DEV] (two ranks' halves); it says the log
is interleaved (exit 1), reads no value from a cut head (a WARN stays a warning, marked cut, without
its completion numbers) and reads the line that begins inside as a line. A splice that shows no mark
(one rank's head, another's tail of the same message, joined inside a value) cannot be told: the
error says so."""

from __future__ import annotations

import random
import re

from grammars import variants

from sncheck.vendors.nccl.debug_log import parse_nccl_debug

_WHO = re.compile(r"^(?:\[[^\]]*\] )?(\S*):(\d+):\d+ ")


def _streams(text: str) -> list[list[str]]:
    """The log's lines as each process wrote them (by HOST:PID; other lines are the first process's)."""
    by: dict[str, list[str]] = {}
    first = None
    for line in text.split("\n")[:-1]:
        m = _WHO.match(line)
        key = f"{m[1]}:{m[2]}" if m else first or "app"
        first = first or key
        by.setdefault(key, []).append(line)
    return list(by.values())


def _interleave(streams: list[list[str]], rng: random.Random, at_line_start: bool) -> str:
    """The streams written as block-buffered stdio does: each process's bytes in blocks, the blocks
    of all processes in a random order, each process's in its own. Cut at any byte, or
    (``at_line_start``) at line starts but one cut inside a message of each stream (after its prefix
    and level word): the block after it begins with the rest of that line, the one before ends with
    its head, which the next block (another process's, at a line start) joins."""
    blocks = []
    for lines in streams:
        data = "".join(line + "\n" for line in lines)
        if at_line_start:
            starts = [len("".join(x + "\n" for x in lines[:i])) for i in range(1, len(lines))]
            cuts = set(rng.sample(starts, min(3, len(starts))))
            heads = [i for i, x in enumerate(lines) if " NCCL INFO " in x and len(x.split(" NCCL INFO ", 1)[1]) > 8]
            if heads:
                i = rng.choice(heads)
                at = starts[i - 1] if i else 0
                cuts.add(at + lines[i].index(" NCCL INFO ") + len(" NCCL INFO ") + rng.randrange(1, 8))
            cuts = sorted(c for c in cuts if 0 < c < len(data))
        else:
            cuts = sorted(rng.sample(range(1, len(data)), min(3, len(data) - 1)))
        blocks.append([data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)])
    out = []
    while any(blocks):
        out.append(rng.choice([b for b in blocks if b]).pop(0))
    return "".join(out)


def _truth(text: str) -> dict:
    return parse_nccl_debug(text)


def _logs() -> list[str]:
    """The generator's INFO logs of several processes (ranks to interleave)."""
    return [v.text for v in variants("nccl-debug") if " INFO " in v.name and len(_streams(v.text)) > 1]


def test_a_line_another_process_begins_inside_is_cut_not_read_and_the_log_fails() -> None:
    """A block of one process beginning at a line start inside another's line: the line it cuts gives
    no value (the ranks, channels and completion errors read are each a whole line's), the one it begins
    is read, and the log exits 1 naming the line."""
    rng = random.Random(28)
    logs = _logs()
    assert len(logs) >= 4, len(logs)
    told = 0
    for text in logs:
        truth = _truth(text)
        whole_ranks = [r for r in truth["ranks"]]
        for _ in range(20):
            mixed = _interleave(_streams(text), rng, at_line_start=True)
            got = parse_nccl_debug(mixed)
            visible = any(len(re.findall(r":\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)", line)) > 1
                          for line in mixed.split("\n"))
            if visible:
                told += 1
                assert any("interleaved mid-line" in e for e in got["errors"]), got["errors"]
            for r in got["ranks"]:  # each value the rank's own; its host unknown (None) where glued to a cut head
                assert any(all(w[k] == v or k == "host" and v is None for k, v in r.items()) for w in whole_ranks), \
                    (r, mixed)
            for c in got["completion_errors"]:
                assert c in truth["completion_errors"], (c, mixed)
            for w in got["warnings"]:
                whole = [t["message"] for t in truth["warnings"]]
                assert w["message"] in whole or (w.get("cut") and any(t.startswith(w["message"]) for t in whole)), w
            assert got["channels"] <= truth["channels"]
    assert told >= 20, told  # the case is exercised, not skipped


def test_a_rank_line_spliced_from_two_ranks_is_not_a_rank() -> None:
    """rank 0's 'Init COMPLETE' head joined to rank 1's tail (no mark inside the line): its cudaDev is
    rank 1's, its [DEV] rank 0's; not read as a rank, and said."""
    a = "node0:4000:4000 [0] NCCL INFO comm 0x55d0a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x6a2b1e - Init COMPLETE"
    b = "node0:4001:4001 [1] NCCL INFO comm 0x55d0a1 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2b000 commId 0x6a2b1e - Init COMPLETE"
    cut = a.index("cudaDev")
    spliced = a[:cut] + b[cut:]
    got = parse_nccl_debug(f"{spliced}\n{b}\n")
    assert [r["rank"] for r in got["ranks"]] == [1], got["ranks"]
    assert any("interleaved mid-line" in e and "cudaDev 1' on a [0] line" in e for e in got["errors"]), got["errors"]
    assert not parse_nccl_debug(f"{a}\n{b}\n")["errors"]


def test_random_interleavings_read_no_rank_against_its_own_line_and_say_what_they_show() -> None:
    """Blocks cut at any byte (as stdio flushes them): no rank is read whose cudaDev is not its line's
    device, and every log whose lines show another's begins inside one exits 1."""
    rng = random.Random(14)
    for text in _logs():
        for _ in range(20):
            mixed = _interleave(_streams(text), rng, at_line_start=False)
            got = parse_nccl_debug(mixed)
            lines = mixed.split("\n")
            if any(len(re.findall(r":\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)", line)) > 1 for line in lines):
                assert got["errors"], mixed
            for r in got["ranks"]:
                line = next(x for x in lines if f"rank {r['rank']} nranks" in x and f"cudaDev {r['cuda_dev']}" in x)
                # its own device's line, or one that begins at its level word (its prefix in another block)
                assert f"[{r['cuda_dev']}] NCCL INFO" in line or line.startswith("NCCL INFO"), line


def figures(logs: int = 200, seed: int = 2026) -> str:
    """Random interleavings (blocks cut at any byte) of the generator's multi-process INFO logs: how
    many the view says are interleaved, how many read a rank value no whole line holds, and how many
    of those say nothing (``PYTHONPATH=$PWD:$PWD/tests python3 tests/test_nccl_interleave.py``)."""
    rng = random.Random(seed)
    n = told = wrong = silent = 0
    for text in _logs():
        truth = parse_nccl_debug(text)["ranks"]
        for _ in range(logs):
            got = parse_nccl_debug(_interleave(_streams(text), rng, at_line_start=False))
            n += 1
            said = any("interleaved mid-line" in e for e in got["errors"])
            bad = any(not any(all(w[k] == v or v is None for k, v in r.items()) for w in truth) for r in got["ranks"])
            told, wrong, silent = told + said, wrong + bad, silent + (bad and not said)
    return (f"{n} interleaved logs: {told} said interleaved (exit 1); {wrong} read a rank value no whole line "
            f"holds, {silent} of them without saying so")


if __name__ == "__main__":
    print(figures())


def test_the_host_lookups_name_what_the_scans_of_every_host_named() -> None:
    """debug_log.longest_suffix and suffix_owners (reviews14 #4, #6: each glued run and each host
    seen once looked up by its own ends, not by a scan of every host: a clean 16,384-host log took
    35 s) against the scans they replace, on names that end with each other."""
    from sncheck.vendors.nccl.debug_log import longest_suffix, suffix_owners

    rng = random.Random(31)
    names = ["node1", "xnode1", "node11", "1", "ode1", "gpu-a1", "a1", "e1", "n.e1", "", "node1.x"]
    for _ in range(2000):
        hosts = set(rng.sample(names, rng.randrange(0, len(names))))
        text = "".join(rng.choice("node1xa.-") for _ in range(rng.randrange(0, 9))) + rng.choice(names)
        longest = max(map(len, hosts), default=0)
        scan = max((h for h in hosts if text.endswith(h)), key=len, default=None)
        assert (longest_suffix(text, hosts, longest) or None) == (scan or None), (text, hosts)
        ends = suffix_owners(hosts)
        for h in names:
            if h not in hosts:
                owners = [k for k in hosts if k.endswith(h)]
                assert ends.get(h) == (max(owners) if owners else None), (h, hosts)


def test_the_mnnvl_and_torch_views_say_the_interleaving_nccl_debug_says() -> None:
    """nccl-mnnvl and torch-nccl read the same logs' NCCL lines: interleaved mid-line, each says
    nccl-debug's error, its words (debug_log.interleaving: one check). Before, 51 of 300 random
    interleavings of the nccl-mnnvl generator's logs read other values with no error at all; the whole
    logs say nothing."""
    from sncheck.vendors.nccl.debug_log import INTERLEAVED
    from sncheck.vendors.nccl.watchdog import parse_torch_nccl
    from sncheck.vendors.nvidia.fabric import parse_nccl_mnnvl

    rng = random.Random(15)
    told = 0
    for v in variants("nccl-mnnvl"):
        assert not any(INTERLEAVED in e for e in parse_nccl_mnnvl(v.text)["errors"]), v.name
        for k in range(6):
            mixed = _interleave(_streams(v.text), rng, at_line_start=k % 2 == 0)
            debug = [e for e in parse_nccl_debug(mixed)["errors"] if e.startswith(INTERLEAVED)]
            got = [e for e in parse_nccl_mnnvl(mixed)["errors"] if e.startswith(INTERLEAVED)]
            assert got == debug, (v.name, got, debug)
            told += bool(got)
    assert told >= 12, told
    torch = next(v.text for v in variants("torch-nccl") if v.name.startswith("2.3 "))
    log = next(t for t in _logs() if len(_streams(t)) > 2)
    assert not any(INTERLEAVED in e for e in parse_torch_nccl(log + torch)["errors"])
    mixed = _interleave(_streams(log), rng, at_line_start=True)
    debug = [e for e in parse_nccl_debug(mixed)["errors"] if e.startswith(INTERLEAVED)]
    assert debug and [e for e in parse_torch_nccl(mixed + torch)["errors"] if e.startswith(INTERLEAVED)] == debug
