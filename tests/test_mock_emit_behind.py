"""The mock's batches go to the sink on a thread while the next batch is simulated
(sncheck/backends/behind.py; issue 31: the gate's target is wall time on 2 cores): the
next batch's draws overlap the sink's part of the one before, one batch is in flight at
most, and a sink that refuses a batch stops the measurement there, its error raised in
the caller, no later batch emitted (as without the thread)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from sncheck.backends import behind, mock, mockp2p
from sncheck.backends.mock import MockBackend
from sncheck.errors import HarnessError
from sncheck.layers import stress
from sncheck.layers.base import LayerContext
from sncheck.probeplan import connectivity_plan
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
FAULTS = "faults:\n  - {type: down_host, target: node007}\n  - {type: slow_card, target: node003/gpu2, factor: 0.7}\n"
WAIT_S = 120  # only a broken overlap waits this long (a busy machine never needs it)


class Sink:
    """Keeps each batch's kind and thread; ``refuse``: the batch number (1-based) it raises on."""

    def __init__(self, refuse: int | None = None, hold: threading.Event | None = None) -> None:
        self.kinds: list[str] = []
        self.threads: list[str] = []
        self.rows: list[dict] = []
        self.refuse, self.hold = refuse, hold
        self.inside = 0
        self.most_inside = 0
        self.lock = threading.Lock()

    def __call__(self, row: dict) -> None:
        self.rows.append(row)

    def batch(self, kind: str, columns: dict) -> None:
        with self.lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            self.kinds.append(kind)
            self.threads.append(threading.current_thread().name)
            if self.refuse is not None and len(self.kinds) == self.refuse:
                raise HarnessError("run directory: writing rows/p2p/part-000002.parquet: No space left on device")
            if self.hold is not None and len(self.kinds) == 1:
                # the first batch waits until the second is being simulated: only an overlap lets it go on
                assert self.hold.wait(WAIT_S), "the next batch was not simulated while this one was in the sink"
        finally:
            with self.lock:
                self.inside -= 1


def _backend() -> MockBackend:
    return MockBackend(TOPO, load_faults_text(FAULTS, TOPO), seed=3)


def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mockp2p, "BATCH_PAIRS", 40)
    monkeypatch.setattr(mock, "BATCH_RANK_ROWS", 40)


def test_the_next_p2p_batch_is_simulated_while_the_last_is_in_the_sink(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_batches(monkeypatch)
    second = threading.Event()
    simulated = mockp2p._simulated
    calls = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            second.set()
        return simulated(*args, **kwargs)

    monkeypatch.setattr(mockp2p, "_simulated", counted)
    sink = Sink(hold=second)
    _backend().p2p(connectivity_plan(TOPO), sink)
    assert len(sink.kinds) == len(calls) > 2 and set(sink.kinds) == {"p2p"}
    assert sink.most_inside == 1   # one batch in the sink at a time
    assert threading.current_thread().name not in sink.threads


@pytest.mark.parametrize("refuse", [1, 2])
def test_a_refused_p2p_batch_stops_the_pairs_there_its_error_raised(monkeypatch: pytest.MonkeyPatch,
                                                                    refuse: int) -> None:
    _small_batches(monkeypatch)
    sink = Sink(refuse=refuse)
    with pytest.raises(HarnessError, match="No space left"):
        _backend().p2p(connectivity_plan(TOPO), sink)
    assert len(sink.kinds) == refuse   # no batch after the refused one


def test_an_interrupted_p2p_writes_the_batch_in_flight_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the next batch is simulated: the batch in the sink still goes through
    before the interrupt leaves p2p (a killed run keeps every completed batch)."""
    _small_batches(monkeypatch)
    simulated = mockp2p._simulated
    calls = []
    done = []

    class Slow(Sink):
        def batch(self, kind: str, columns: dict) -> None:
            super().batch(kind, columns)
            done.append(kind)

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return simulated(*args, **kwargs)

    monkeypatch.setattr(mockp2p, "_simulated", interrupted)
    sink = Slow()
    with pytest.raises(KeyboardInterrupt):
        _backend().p2p(connectivity_plan(TOPO), sink)
    assert done == ["p2p", "p2p"]   # both batches simulated before the interrupt were emitted, whole


def test_an_interrupt_while_waiting_for_the_batch_in_flight_still_writes_it() -> None:
    """reviews16 #5: a real signal (Ctrl-C's KeyboardInterrupt) landing while the caller waits
    for batch 1 to be written: leaving the with-block waits for batch 1 all the same. Before,
    wait() dropped the thread before joining it (and CPython 3.11's interrupted join marks the
    thread stopped), so __exit__ returned while batch 1 was being written: a .tmp part, its
    rows in neither rows/ nor results. Whatever the machine's speed, a batch that is written
    after the block is left fails here; before the fix it was, but for a caller 0.4 s slow."""
    written: list[int] = []
    second = threading.Event()

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    def write(batch: int) -> None:
        second.wait(WAIT_S)
        time.sleep(0.1)  # the caller now waits for this batch (or is about to: either way a case)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)  # Ctrl-C lands
        time.sleep(0.4)  # the sink is the slower side
        written.append(batch)

    old = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt), behind.Behind() as b:
            b.emit(write, 1)
            second.set()
            b.emit(write, 2)
        assert written == [1]
    finally:
        signal.signal(signal.SIGUSR1, old)


def _stress(sink: Sink) -> None:
    b = _backend()
    ctx = LayerContext(TOPO, b, sink, {}, {"max_bytes": 1 << 20, "repeats": 2}, lambda _m: None)
    b.collectives(stress.build_plan(ctx), sink)


def test_stress_batches_go_out_in_order_with_the_unreachable_host_between(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_batches(monkeypatch)
    sink = Sink()
    _stress(sink)
    assert sink.most_inside == 1 and {"collective", "rank"} == set(sink.kinds)
    assert [r["kind"] for r in sink.rows] == ["not_run"] and "node007" in sink.rows[0]["entity"]
    # the same batches, in the same order, as a caller that waits for each one
    monkeypatch.setattr(behind.Behind, "emit", lambda self, fn, *args: fn(*args))
    same = Sink()
    _stress(same)
    assert same.kinds == sink.kinds and same.rows == sink.rows


def test_a_refused_stress_batch_stops_the_sweeps_there(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_batches(monkeypatch)
    sink = Sink(refuse=2)
    with pytest.raises(HarnessError, match="No space left"):
        _stress(sink)
    assert len(sink.kinds) == 2
