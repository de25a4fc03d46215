"""``sncheck plan``'s text: the three accounts of a layout, and the ranking of several."""

from __future__ import annotations

import click

from sncheck.ledger import GiB, Model, Training, gib
from sncheck.ledger.accounts import Options, Plan

_OP = {"all_gather": "all-gather", "reduce_scatter": "reduce-scatter", "all_reduce": "all-reduce",
       "all_to_all": "all-to-all", "sendrecv": "send/recv"}


def show(model: Model, train: Training, plans: list[Plan], ranked: list[Plan] | None, opts: Options) -> None:
    moe = ""
    if model.expert_params:
        moe = (f" ({model.expert_params / 1e9:,.0f}B in experts, top-{model.top_k}"
               + (f" of {model.experts}" if model.experts else "") + ")")
    click.echo(f"model: {model.params / 1e9:,.0f}B parameters{moe}; {train.precision}, {train.optimizer}, "
               f"seq {train.seq}, micro-batch {train.micro_batch}, {train.recompute} recompute, ZeRO {train.zero}")
    if opts.figures is not None:
        click.echo("tiers: " + "; ".join(
            f"{t} {f.bandwidth_GBps:,.1f} GB/s, {f.alpha_s * 1e6:,.2f} us ({f.source})" for t, f in opts.figures.tiers.items()))
    for i, p in enumerate(plans):
        if i:
            click.echo("")
        _one(p, opts)
    if ranked is not None:
        _ranking(ranked)


def _one(p: Plan, opts: Options) -> None:
    lay, led = p.layout, p.ledger
    dp = lay.dp if p.replicas is None else p.replicas
    click.echo(f"layout: TP={lay.tp} EP={lay.ep} PP={lay.pp} DP={dp} (world {lay.tp * lay.pp * dp}); "
               f"{led.params_per_card / 1e9:,.3f}B parameters per card")
    click.echo("memory account (per card):")
    for name, value in (("weights", led.weights), ("gradients", led.gradients), ("optimizer", led.optimizer),
                        ("activations", led.activations), ("reserve", led.reserve)):
        if name != "reserve" or value:
            click.echo(f"  {name:<12} {gib(value):>14}")
    where = f" of {gib(led.card_memory)} ({opts.memory_source})" if led.card_memory else ""
    click.echo(f"  {'total':<12} {gib(led.total):>14}{where}")
    if led.fits is None:
        click.echo("memory: cannot say whether it fits: " + (
            "no card memory (give --card-memory, or -i with a platform)" if led.card_memory is None
            else "activations unknown"))
    else:
        head = (led.card_memory or 0) - led.total
        click.echo(f"memory: {'fits' if led.fits else 'does NOT fit'} "
                   f"({'headroom' if head >= 0 else 'short by'} {abs(head) / GiB:,.1f} GiB per card"
                   f"{'' if led.activations is not None else ', activations not counted'})")
    cap = p.capacity
    if cap is not None:
        out = f", {len(cap['out'])} entities out of service" if cap["out"] else ""
        click.echo(f"capacity: {cap['healthy_cards']}/{cap['total_cards']} healthy cards{out}; "
                   f"{cap['max_dp']} replicas of {cap['replica_cards']} cards (TP x PP) fit"
                   + ("" if cap["fits"] and p.replicas != 0 else f"; the layout's DP={dp} does NOT fit"))
        for w in cap["warnings"]:
            click.echo(f"warning: {w}", err=True)
    for note in led.notes:
        click.echo(f"note: {note}", err=True)
    if p.comm is not None:
        _comm(p)
    if p.time is not None:
        _time(p)
    for note in p.notes:
        click.echo(f"note: {note}", err=True)


def _comm(p: Plan) -> None:
    d = p.domains
    assert d is not None and p.comm is not None
    names = f" ({', '.join(d.names)})" if d.names else ""
    click.echo(f"communication account (per rank, one step: global batch {p.global_batch}, {p.m} micro-batches "
               f"a replica; scale-up domains of {max(d.sizes)} cards{names}, hosts of {max(d.host_cards)}):")
    click.echo(f"  {'':<13} {'collective':<15} {'size':>11} {'x/step':>9} {'group':>6}  {'crosses':<19} "
               f"{'moved/step':>11}  where")
    for c in p.comm:
        span = c.span
        crosses = span.tier + (f" ({span.crossing}/{span.groups})" if span.crossing else "")
        click.echo(f"  {c.parallelism:<13} {_OP[c.op]:<15} {_bytes(c.size_bytes):>11} {c.count:>9,.0f} "
                   f"{c.ranks:>6}  {crosses:<19} {_bytes(c.bytes_moved):>11}  {c.what}")


def _time(p: Plan) -> None:
    t = p.time
    assert t is not None and p.verdict is not None
    click.echo(f"time account (per step, a rank; compute at {t.mfu:.0%} MFU of {t.peak_flops / 1e12:,.0f} TFLOP/s):")
    click.echo(f"  {'compute':<28} {_secs(t.compute_s):>10}  6 x active params x tokens, over {p.layout.world} cards")
    for line in t.lines:
        c = line.collective
        label = f"{c.parallelism} {_OP[c.op]}"
        click.echo(f"  {label:<28} {_secs(line.total_s):>10}  {c.count:,.0f} x {_secs(line.each_s)} on {line.tier}"
                   f" ({line.algo})")
    if t.pp > 1:
        click.echo(f"  {'pipeline bubble':<28} {_secs(t.bubble_s):>10}  (PP-1)/m of the micro-batch slots")
    click.echo(f"  {'step':<28} {_secs(t.step_s):>10}")
    parts = ", ".join(f"{k} {_secs(v)}" for k, v in t.exposed.items())
    click.echo(f"communication: {_secs(t.comm_s)} a step, {_secs(t.exposed_s)} exposed ({parts}); "
               f"share {t.share:.1%} ({p.verdict.band} band)")
    click.echo("verdict: " + p.verdict.reasons[0])
    for r in p.verdict.reasons[1:]:
        click.echo(f"  {r}")
    for w in p.verdict.warnings:
        click.echo(f"warning: {w}", err=True)


def _ranking(ranked: list[Plan]) -> None:
    click.echo("")
    gb = ranked[0].global_batch
    click.echo(f"compare (global batch {gb}; layouts that fit first, then step time, then share):")
    click.echo(f"  {'#':>2}  {'layout':<26} {'world':>6}  {'fits':<5} {'step':>10} {'share':>7}  band")
    for i, p in enumerate(ranked, 1):
        lay = p.layout
        fits = {True: "yes", False: "NO", None: "?"}[p.fits]
        step = _secs(p.time.step_s) if p.time else "-"
        share = f"{p.time.share:.1%}" if p.time else "-"
        band = p.verdict.band if p.verdict else "-"
        dp = lay.dp if p.replicas is None else p.replicas
        name = f"TP={lay.tp} EP={lay.ep} PP={lay.pp} DP={dp}"
        click.echo(f"  {i:>2}  {name:<26} {lay.tp * lay.pp * dp:>6}  {fits:<5} {step:>10} {share:>7}  {band}")


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def _secs(s: float) -> str:
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.1f} ms"
    return f"{s * 1e6:,.1f} us"
