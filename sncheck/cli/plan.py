"""``sncheck plan``: the memory ledger (:mod:`sncheck.ledger`) against the cards, after isolation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from sncheck.cli.main import handle_errors
from sncheck.cli.paths import directory, input_file
from sncheck.errors import ConfigError
from sncheck.ledger import GiB, Model, Training, gib, ledger, parse_count, parse_layout, parse_memory, platform_memory


@click.command("plan")
@click.option("--params", required=True, help="Model parameters: 1.8T, 70B, 175e9.")
@click.option("--expert-params", default="0", show_default=True, help="Of which in experts (MoE), e.g. 1.6T.")
@click.option("--layout", required=True, help="tp=8,ep=8,pp=16,dp=4; dp=... takes as many replicas as fit (-i).")
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8", "fp32"]), default="bf16", show_default=True)
@click.option("--optimizer", type=click.Choice(["adam", "sgd"]), default="adam", show_default=True)
@click.option("--seq", type=click.IntRange(1, 1 << 24), default=4096, show_default=True, help="Sequence length.")
@click.option("--micro-batch", type=click.IntRange(1, 1 << 16), default=1, show_default=True)
@click.option("--hidden", type=click.IntRange(1, 1 << 20), help="Hidden size (activations need it).")
@click.option("--layers", type=click.IntRange(1, 1 << 16), help="Transformer layers (activations need it).")
@click.option("--heads", type=click.IntRange(1, 1 << 16), help="Attention heads (only for --recompute none).")
@click.option("--top-k", type=click.IntRange(1, 64), default=1, show_default=True, help="Experts per token (MoE).")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="selective", show_default=True)
@click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True, help="ZeRO stage.")
@click.option("--card-memory", help="Memory per card (80GB); default: the inventory platform's.")
@click.option("--reserve", default="0GB", show_default=True, help="Per card, for the CUDA context and fragmentation.")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
              help="Inventory: card count, supernodes and platform (card memory).")
@click.option("--state-dir", type=directory(),
              help="State store: leave its quarantined and isolated entities out of the capacity.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def plan_cmd(params: str, expert_params: str, layout: str, precision: str, optimizer: str, seq: int,
             micro_batch: int, hidden: int | None, layers: int | None, heads: int | None, top_k: int,
             recompute: str, zero: int, card_memory: str | None, reserve: str, inventory_path: str | None,
             state_dir: str | None, as_json: bool) -> None:
    """Do the accounts before adding cards: per-card memory of a training layout.

    Weights, gradients, optimizer state and activations per card (formulas: README "The
    memory ledger") against the card memory, and with -i, how many model replicas (DP)
    still fit in the healthy cards once the state store's isolations are out.
    Exit: 0 fits, 1 does not fit, 2 bad input.

    \b
    Examples:
      sncheck plan --params 70B --layout tp=8,pp=4,dp=2 --hidden 8192 --layers 80 --seq 4096 --card-memory 80GB
      sncheck plan --params 1.8T --expert-params 1.6T --layout tp=8,ep=8,pp=16,dp=... --top-k 2 \\
          --hidden 12288 --layers 128 --seq 8192 -i cluster.yaml --state-dir /var/lib/sncheck
    """
    lay = parse_layout(layout)
    tp, ep, pp = int(lay["tp"]), int(lay["ep"]), int(lay["pp"])  # type: ignore[arg-type]
    model = Model(parse_count(params), parse_count(expert_params) if expert_params not in ("0", "") else 0.0,
                  hidden, layers, heads, top_k)
    train = Training(precision, optimizer, seq, micro_batch, recompute, zero)
    memory, memory_source = (parse_memory(card_memory), "--card-memory") if card_memory else (None, None)
    cap = None
    if inventory_path:
        cap, plat_memory, plat_name = _capacity(inventory_path, state_dir, tp, ep, pp, lay["dp"])
        if memory is None and plat_memory is not None:
            memory, memory_source = plat_memory, f"platform {plat_name}"
    dp = lay["dp"] if lay["dp"] is not None else (cap["max_dp"] if cap else None)
    if dp is None:
        raise ConfigError("dp=... (as many replicas as fit) needs -i INVENTORY to count the cards; or give dp=N")
    dp_for_ledger = max(dp, 1)  # 0 replicas fit: still show what one would need
    led = ledger(model, train, tp, ep, pp, dp_for_ledger, memory, parse_memory(reserve, allow_zero=True))
    fits_memory = led.fits
    fits = (fits_memory is not False) and (cap is None or cap["fits"]) and dp > 0
    doc = {"model": {"params": model.params, "expert_params": model.expert_params, "hidden": hidden,
                     "layers": layers, "heads": heads, "top_k": top_k},
           "training": train.__dict__, "layout": {"tp": tp, "ep": ep, "pp": pp, "dp": dp, "world": tp * pp * dp},
           "per_card": led.to_dict(), "card_memory_source": memory_source, "capacity": cap,
           "fits": fits if fits_memory is not None else (None if fits else False)}
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        _print(model, train, tp, ep, pp, dp, led, memory_source, cap)
    sys.exit(0 if doc["fits"] is not False else 1)


def _capacity(path: str, state_dir: str | None, tp: int, ep: int, pp: int, dp: int | None) -> tuple[dict, float | None, str | None]:
    from sncheck.config.playbook import ParallelLayout
    from sncheck.health.capacity import capacity
    from sncheck.run.inputs import load_inventory
    from sncheck.topology import Topology

    inv = load_inventory(path)
    out: list[str] = []
    if state_dir:
        from sncheck.store.state import StateStore

        with StateStore(Path(state_dir).expanduser()) as store:
            out = [r["entity"] for r in store.current_status()]
    topo = Topology(inv)
    probe = ParallelLayout(tp=tp, ep=ep, pp=pp, dp=dp or _some_dp(tp, ep))
    report = capacity(topo, out, probe)
    plats = {getattr(inv.platform_of(h), "name", None) for h in inv.hosts}
    plat = inv.platform_of(next(iter(inv.hosts))) if len(plats) == 1 else None
    cap = {"total_cards": report.total_cards, "healthy_cards": report.healthy_cards, "out": out,
           "max_dp": report.max_dp, "fits": report.fits if dp else report.max_dp > 0,
           "replica_cards": tp * pp, "warnings": report.warnings}
    return cap, platform_memory(plat), getattr(plat, "name", None)


def _some_dp(tp: int, ep: int) -> int:
    dp = 1
    while (tp * dp) % ep:
        dp += 1
    return dp


def _print(model: Model, train: Training, tp: int, ep: int, pp: int, dp: int, led, memory_source: str | None,
           cap: dict | None) -> None:
    moe = f" ({model.expert_params / 1e9:,.0f}B in experts, top-{model.top_k})" if model.expert_params else ""
    click.echo(f"model: {model.params / 1e9:,.0f}B parameters{moe}; {train.precision}, {train.optimizer}, "
               f"seq {train.seq}, micro-batch {train.micro_batch}, {train.recompute} recompute, ZeRO {train.zero}")
    click.echo(f"layout: TP={tp} EP={ep} PP={pp} DP={dp} (world {tp * pp * dp}); "
               f"{led.params_per_card / 1e9:,.3f}B parameters per card")
    rows = [("weights", led.weights), ("gradients", led.gradients), ("optimizer", led.optimizer),
            ("activations", led.activations), ("reserve", led.reserve)]
    for name, value in rows:
        if name == "reserve" and not value:
            continue
        click.echo(f"  {name:<12} {gib(value):>14}")
    where = f" of {gib(led.card_memory)} ({memory_source})" if led.card_memory else ""
    click.echo(f"  {'total':<12} {gib(led.total):>14}{where}")
    for note in led.notes:
        click.echo(f"note: {note}", err=True)
    if led.fits is None:
        click.echo("memory: cannot say whether it fits: " + (
            "no card memory (give --card-memory, or -i with a platform)" if led.card_memory is None
            else "activations unknown"))
    else:
        head = (led.card_memory or 0) - led.total
        click.echo(f"memory: {'fits' if led.fits else 'does NOT fit'} "
                   f"({'headroom' if head >= 0 else 'short by'} {abs(head) / GiB:,.1f} GiB per card)")
    if cap is not None:
        out = f", {len(cap['out'])} entities out of service" if cap["out"] else ""
        click.echo(f"capacity: {cap['healthy_cards']}/{cap['total_cards']} healthy cards{out}; "
                   f"{cap['max_dp']} replicas of {cap['replica_cards']} cards (TP x PP) fit"
                   + ("" if cap["fits"] else f"; the layout's DP={dp} does NOT fit"))
        for w in cap["warnings"]:
            click.echo(f"warning: {w}", err=True)
