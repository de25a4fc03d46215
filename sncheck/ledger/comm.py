"""The communication account: each parallelism's collectives in one training step.

Per rank and step, with s the sequence length, b the micro-batch, h the hidden size, L the
layers, m the micro-batches per step (global batch / (b x DP)), k the experts per token,
a = s b h x 2 bytes the 16-bit activations of one micro-batch (4 bytes in fp32), w the
bytes of a parameter in the training precision, and sizes S as nccl-tests sizes them
(:mod:`sncheck.ledger.tiers`):

* **TP with sequence parallelism** (Korthikanti et al., 2022, "Reducing Activation
  Recomputation in Large Transformer Models", section 4.2.2): each transformer layer runs
  two all-gathers and two reduce-scatters of S = a in the forward pass (into and out of
  attention and the MLP) and two of each in the backward pass; over the ring they move
  the bytes of the all-reduces they replace: per layer and micro-batch 8 a (t-1)/t, the
  "8bsh(t-1)/t per layer per device" of Narayanan et al., 2021 ("Efficient Large-Scale
  Language Model Training on GPU Clusters Using Megatron-LM", section 3.2). A MoE layer's
  MLP is its experts: it keeps the attention block's one all-gather and one reduce-scatter
  each way. ``full`` recomputation runs each layer's forward again in the backward pass,
  its collectives too; ``selective`` recomputes attention's core only, which has none.
* **EP** (Lepikhin et al., 2020, GShard; Rajbhandari et al., 2022, DeepSpeed-MoE): each
  MoE layer dispatches the rank's tokens to their k experts and combines them back, an
  all-to-all each, in the forward pass and again (their gradients) in the backward pass:
  S = (s b / TP) k h x 2 bytes, the rank's tokens after sequence parallelism times k;
  each rank sends (EP-1)/EP of it away, routing taken as even. With expert tensor
  parallelism 1 no TP collective runs inside the MoE block (Megatron-Core's all-to-all
  dispatcher).
* **PP** (Narayanan et al., 2021, section 4.1, the scatter/gather optimisation): per
  micro-batch a stage sends its output activations forward and receives the gradient
  back; each TP rank sends its 1/t share: S = a / TP, two sends per micro-batch on a
  middle stage. Non-interleaved 1F1B; the interleaved schedule would send v times as much.
* **DP** (Rajbhandari et al., 2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", section 7): the gradients of the rank's Psi parameters (dense:
  P_dense / (TP x PP), over DP; experts: P_expert / (EP x PP), over TP x DP / EP). ZeRO 0:
  one all-reduce of S = w Psi a step (2 Psi moved); ZeRO 1 and 2: a reduce-scatter of the
  gradients and an all-gather of the updated parameters, once a step as Megatron-LM's
  distributed optimizer does (the same 2 Psi); ZeRO 3: the reduce-scatter once and the
  parameters gathered before each micro-batch's forward and backward pass, 2 m all-gathers
  (3 Psi a step at m = 1, the paper's 1.5x). Gradients are reduced in the training
  precision (Megatron-LM's ``--accumulate-allreduce-grads-in-fp32`` would double it).

Each collective names the worst group of its kind (:mod:`sncheck.ledger.placement`): the
tier its traffic crosses and how many groups span scale-up domains.
"""

from __future__ import annotations

from dataclasses import dataclass

from sncheck.errors import ConfigError
from sncheck.config.playbook import ParallelLayout
from sncheck.ledger import placement as pl
from sncheck.ledger.memory import PRECISION_BYTES, Model, Training
from sncheck.ledger.tiers import busfactor

TP, EP, PP, DP, EDP = "TP", "EP", "PP", "DP", "DP (experts)"
PARALLELISMS = (TP, EP, PP, DP, EDP)
# What --overlap may hide each behind (timing.py); TP and EP sit on the critical path.
OVERLAP = {TP: None, EP: None, PP: "compute", DP: "dp", EDP: "dp"}


@dataclass(frozen=True)
class Collective:
    parallelism: str
    op: str                 # all_gather | reduce_scatter | all_reduce | all_to_all | sendrecv
    size_bytes: float       # S, as nccl-tests sizes it
    count: float            # times a rank runs it in a step
    ranks: int              # its group's size
    what: str               # where in the step it runs
    span: pl.Span

    @property
    def bytes_moved(self) -> float:
        """Bytes a rank sends over the step (the bus bytes: S x busfactor, per run)."""
        return self.size_bytes * busfactor(self.op, self.ranks) * self.count

    def to_dict(self) -> dict:
        return {"parallelism": self.parallelism, "collective": self.op, "size_bytes": self.size_bytes,
                "count": self.count, "ranks": self.ranks, "what": self.what, "bytes_moved": self.bytes_moved,
                "placement": self.span.to_dict()}


def micro_batches(global_batch: int, micro_batch: int, dp: int) -> int:
    """m = global batch / (micro-batch x DP): Megatron-LM's number of micro-batches."""
    if global_batch < 1 or global_batch % (micro_batch * dp):
        raise ConfigError(f"the global batch ({global_batch} sequences) must be a positive multiple of "
                          f"micro-batch x DP = {micro_batch} x {dp}")
    return global_batch // (micro_batch * dp)


def account(model: Model, train: Training, lay: ParallelLayout, place: pl.Placement, m: int) -> list[Collective]:
    """Every collective a rank runs in one training step of ``m`` micro-batches."""
    pl.check_world(lay)
    if (lay.tp > 1 or lay.ep > 1 or lay.pp > 1) and (model.hidden is None or model.layers is None):
        raise ConfigError("the communication account of TP, EP and PP needs --hidden and --layers")
    w = PRECISION_BYTES[train.precision]
    act = 4 if train.precision == "fp32" else 2
    out: list[Collective] = []
    again = train.recompute == "full"  # the forward pass runs twice
    if model.hidden is not None and model.layers is not None:
        s, b, h, L = train.seq, train.micro_batch, model.hidden, model.layers
        moe_layers = L // model.moe_every if model.expert_params else 0
        per_stage, moe_per_stage = L / lay.pp, moe_layers / lay.pp
        dense_per_stage = per_stage - moe_per_stage
        a = s * b * h * act
        if lay.tp > 1:
            span = place.span(pl.tp_groups(lay))
            each_way = 2 * dense_per_stage + moe_per_stage      # per pass, per micro-batch
            n = m * each_way * (3 if again else 2)
            note = (f"{_num(each_way)} per pass per micro-batch ({_num(per_stage)} layers a stage"
                    + (f", {_num(moe_per_stage)} MoE" if moe_per_stage else "") + "), forward and backward"
                    + (", forward again (full recompute)" if again else ""))
            out.append(Collective(TP, "all_gather", a, n, lay.tp, note, span))
            out.append(Collective(TP, "reduce_scatter", a, n, lay.tp, note, span))
        if lay.ep > 1 and moe_per_stage:
            span = place.span(pl.ep_groups(lay))
            size = s * b / lay.tp * model.top_k * h * act
            n = m * moe_per_stage * 2 * (3 if again else 2)
            out.append(Collective(EP, "all_to_all", size, n, lay.ep,
                                  f"dispatch and combine in each of {_num(moe_per_stage)} MoE layers a stage, "
                                  f"top-{model.top_k}, forward and backward" + (", forward again" if again else ""),
                                  span))
        if lay.pp > 1:
            span = place.span(pl.pp_pairs(lay))
            out.append(Collective(PP, "sendrecv", a / lay.tp, 2 * m, 2,
                                  "activations forward and their gradients back, per micro-batch", span))
    for kind, size, params, groups in (
            (DP, lay.dp, model.dense_params / (lay.tp * lay.pp), pl.dp_groups),
            (EDP, lay.edp, model.expert_params / (lay.ep * lay.pp), pl.edp_groups)):
        if size < 2 or params <= 0:
            continue
        span = place.span(groups(lay))
        grads = params * w
        if train.zero == 0:
            out.append(Collective(kind, "all_reduce", grads, 1, size, "gradients, once a step", span))
            continue
        out.append(Collective(kind, "reduce_scatter", grads, 1, size, f"gradients, once a step (ZeRO {train.zero})",
                              span))
        gathers = 2 * m if train.zero == 3 else 1
        out.append(Collective(kind, "all_gather", params * w, gathers, size,
                              "parameters before each micro-batch's forward and backward (ZeRO 3)"
                              if train.zero == 3 else f"updated parameters, once a step (ZeRO {train.zero})", span))
    return out


def _num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.2f}"
