"""``sncheck plan``: the memory, communication and time accounts of a layout (:mod:`sncheck.ledger`)."""

from __future__ import annotations

import json
import sys

import click

from sncheck.cli.main import handle_errors
from sncheck.cli.numbers import finite, whole
from sncheck.cli.paths import directory, input_file
from sncheck.cli.plan_text import show
from sncheck.config.jsonio import read_json
from sncheck.errors import ConfigError
from sncheck.ledger import Model, Training, parse_count, parse_layout, parse_memory
from sncheck.ledger.accounts import Cluster, Options, Plan, plan, rank
from sncheck.ledger.tiers import measured_figures, parse_design
from sncheck.run.inputs import load_inventory
from sncheck.ledger.timing import DEFAULT_MFU
from pathlib import Path


@click.command("plan")
@click.option("--params", required=True, help="Model parameters: 1.8T, 70B, 175e9.")
@click.option("--expert-params", default="0", show_default=True, help="Of which in experts (MoE), e.g. 1.6T.")
@click.option("--layout", required=True, help="tp=8,ep=8,pp=16,dp=4; dp=... takes as many replicas as fit (-i).")
@click.option("--compare", "compare", multiple=True, metavar="LAYOUT",
              help="Another layout to rank beside --layout by step time and share (repeatable).")
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8", "fp32"]), default="bf16", show_default=True)
@click.option("--optimizer", type=click.Choice(["adam", "sgd"]), default="adam", show_default=True)
@click.option("--seq", type=whole(1, 1 << 24), default=4096, show_default=True, help="Sequence length.")
@click.option("--micro-batch", type=whole(1, 1 << 16), default=1, show_default=True)
@click.option("--global-batch", type=whole(1, 1 << 30),
              help="Sequences a training step (default: 4 x PP micro-batches a replica).")
@click.option("--hidden", type=whole(1, 1 << 20), help="Hidden size (activations, TP/EP/PP traffic).")
@click.option("--layers", type=whole(1, 1 << 16), help="Transformer layers (activations, TP/EP/PP traffic).")
@click.option("--heads", type=whole(1, 1 << 16), help="Attention heads (only for --recompute none).")
@click.option("--top-k", type=whole(1, 64), default=1, show_default=True, help="Experts per token (MoE).")
@click.option("--experts", type=whole(1, 1 << 20), help="Routed experts per MoE layer (default: EP).")
@click.option("--moe-every", type=whole(1, 1 << 16), default=1, show_default=True,
              help="Every n-th layer is a MoE layer.")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="selective", show_default=True)
@click.option("--zero", type=whole(0, 3), default=0, show_default=True, help="ZeRO stage.")
@click.option("--card-memory", help="Memory per card (80GB); default: the inventory platform's.")
@click.option("--reserve", default="0GB", show_default=True, help="Per card, for the CUDA context and fragmentation.")
@click.option("--measured", "measured", type=input_file("json", dirs=True),
              help="Tier figures from a run directory (its connectivity and stress rows) or a baseline JSON.")
@click.option("--design", "design", multiple=True, metavar="TIER=BW@LAT",
              help="A tier's figures where neither --measured nor the inventory has them: scale_out=400Gb/s@5us.")
# floors: --peak-tflops 1e-300 printed a step of 10^290 s and "leave the network alone" (hostile r15)
@click.option("--mfu", type=finite(0.001, 1), default=DEFAULT_MFU, show_default=True,
              help="Model FLOPs utilisation: the share of the card's peak the model's 6N FLOPs a token reach.")
@click.option("--peak-tflops", type=finite(0.001, 1e6),
              help="Dense TFLOP/s per card in the training precision (default: the platform's).")
@click.option("--overlap", is_flag=True, help="DP gradients and PP sends overlap compute (Megatron's --overlap-*).")
@click.option("--domain", "domain_cards", type=whole(1, 1 << 22),
              help="Without -i: cards per scale-up domain.")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
              help="Inventory: supernodes (scale-up domains), platform (card memory, peak, design values).")
@click.option("--state-dir", type=directory(),
              help="State store: leave its quarantined and isolated entities out of the capacity.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def plan_cmd(params: str, expert_params: str, layout: str, compare: tuple[str, ...], precision: str, optimizer: str,
             seq: int, micro_batch: int, global_batch: int | None, hidden: int | None, layers: int | None,
             heads: int | None, top_k: int, experts: int | None, moe_every: int, recompute: str, zero: int,
             card_memory: str | None, reserve: str, measured: str | None, design: tuple[str, ...], mfu: float,
             peak_tflops: float | None, overlap: bool, domain_cards: int | None, inventory_path: str | None,
             state_dir: str | None, as_json: bool) -> None:
    """Do the accounts before adding cards: memory, communication and time of a training layout.

    Memory per card (weights, gradients, optimizer state, activations) against the card;
    with -i, how many replicas fit in the healthy cards once the state store's isolations
    are out. With tier figures (--measured RUN, the inventory's platform, or --design):
    each parallelism's collectives a step (size, count, the tier each crosses), their time
    from an alpha-beta model on that tier, compute at --mfu of the peak, and the
    communication share against the 10% and 30% bands. Formulas: README "The accounts".
    Exit: 0 fits and share under 30% (with --compare: the first-ranked layout), 1 not, 2 bad input.

    \b
    Examples:
      sncheck plan --params 70B --layout tp=8,pp=4,dp=2 --hidden 8192 --layers 80 --card-memory 80GB
      sncheck plan --params 70B --layout tp=8,pp=2,dp=4 --hidden 8192 --layers 80 \\
          -i fixtures/inventories/nvl72-rack.yaml --measured runs/nightly --global-batch 512
      sncheck plan --params 1.8T --expert-params 1.6T --experts 128 --top-k 2 --hidden 12288 --layers 128 \\
          --layout tp=8,ep=64,pp=6,dp=... --compare tp=16,ep=64,pp=6,dp=4 -i cm384.yaml --zero 1
    """
    model = Model(parse_count(params), parse_count(expert_params) if expert_params not in ("0", "") else 0.0,
                  hidden, layers, heads, top_k, experts, moe_every)
    train = Training(precision, optimizer, seq, micro_batch, recompute, zero)
    layouts = [parse_layout(x) for x in (layout, *compare)]
    cluster = Cluster(load_inventory(inventory_path), state_dir) if inventory_path else None
    opts = Options(reserve=parse_memory(reserve, allow_zero=True), global_batch=global_batch, mfu=mfu,
                   peak_tflops=peak_tflops, overlap=overlap, domain_cards=domain_cards)
    if card_memory:
        opts.card_memory, opts.memory_source = parse_memory(card_memory), "--card-memory"
    elif cluster is not None and cluster.memory() is not None:
        opts.card_memory, opts.memory_source = cluster.memory(), f"platform {getattr(cluster.platform, 'name', '?')}"
    opts.figures = _figures(measured, design, cluster)
    if measured and cluster is None and domain_cards is None:
        opts.domain_cards, opts.host_cards = _run_domain(measured)
    plans: list[Plan] = []
    for lay in layouts:
        dp = lay["dp"]
        if opts.global_batch is None and plans and plans[0].global_batch:
            opts.global_batch = plans[0].global_batch  # compared at the first layout's global batch
        plans.append(plan(model, train, int(lay["tp"] or 1), int(lay["ep"] or 1), int(lay["pp"] or 1), dp, opts,
                          cluster))
    ranked = rank(plans) if compare else plans
    doc = {"model": {"params": model.params, "expert_params": model.expert_params, "hidden": hidden,
                     "layers": layers, "heads": heads, "top_k": top_k, "experts": experts, "moe_every": moe_every},
           "training": train.__dict__, "card_memory_source": opts.memory_source,
           "tiers": opts.figures.to_dict() if opts.figures else None, **plans[0].to_dict()}
    if compare:
        doc["compare"] = [{"rank": i + 1, **p.to_dict()} for i, p in enumerate(ranked)]
    if as_json:
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        show(model, train, plans, ranked if compare else None, opts)
    sys.exit(0 if ranked[0].ok else 1)


def _figures(measured: str | None, design: tuple[str, ...], cluster: Cluster | None):
    """Per tier, in order: the measured run, the inventory's design (platform) values, --design."""
    figs = measured_figures(measured, cluster.name if cluster else None) if measured else None
    for more in (cluster.figures() if cluster else None, parse_design(design) if design else None):
        if more is not None:
            figs = more if figs is None else figs.merged(more)
    return figs


def _run_domain(measured: str) -> tuple[int | None, int | None]:
    """Without -i: the measured run's supernodes as the scale-up domains."""

    p = Path(measured)
    results = (p if p.is_file() else p / "results.json")
    doc = read_json(results, "a run's results.json")
    topo = (doc.get("topology") if isinstance(doc, dict) else None) or {}
    sns = [s for s in topo.get("supernodes") or [] if isinstance(s, dict) and s.get("hosts")]
    cards, hosts = topo.get("cards"), sum(len(s["hosts"]) for s in sns)
    if not sns or not isinstance(cards, int) or not hosts or cards % hosts:
        raise ConfigError("cannot tell the scale-up domain from the run's topology: give -i INVENTORY or --domain",
                          str(results))
    per_host = cards // hosts
    return max(len(s["hosts"]) for s in sns) * per_host, per_host
