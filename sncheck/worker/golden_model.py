"""The golden model: a tiny GPT trained data-parallel for N steps, and its curve file.

Data are sequences from a fixed random Markov chain (each token has a few likely
successors), generated from the seed, so the loss really falls (from ln(vocab) towards
the chain's entropy) and nothing is downloaded. Each step draws one global batch from
(seed, step); a rank trains on its slice. Gradients are averaged over equal slices, so
the curve is the same whatever the number of ranks (when it divides the global batch),
up to float reduction order, and a solo run on one card is comparable to the group run.

Communication share is measured with a DDP comm hook that runs each gradient bucket's
all-reduce and waits for it, timing launch to completion. Waiting gives up DDP's
overlap of communication with backward, so ``comm_s`` is the full time spent in
gradient all-reduce (an upper bound of what overlap would leave exposed) and the rest
of the step is compute. ``step_time_s`` is the slowest member's time from forward to
optimizer step (the step ends when the last rank does); ``comm_s`` is the members' mean;
``comm_share`` = comm_s / step_time_s. ``loss`` is the mean of the members' losses
(equal slices: the global-batch loss) before the step's update.

Plain SGD with momentum is used, not Adam: Adam normalises gradient scale, so a card
that sends huge gradients would not make training diverge, while on real clusters it
does.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

from sncheck.rows import golden_row
from sncheck.worker.golden_config import GoldenConfig
from sncheck.worker.faults import wait_s

try:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
except ImportError:  # the module's constants and config import without torch; the
    pass               # functions that train need it and are never called without it

DIVERGE_NOISE = 10.0  # gradient noise std of a diverging card; clean grads are ~1e-2


# --------------------------------------------------------------------------- model

@functools.cache
def _tiny_gpt_class():
    import torch.nn as nn  # noqa: PLC0415 -- torch: an optional extra; this module imports without it

    class Block(nn.Module):
        def __init__(self, cfg: GoldenConfig) -> None:
            super().__init__()
            d = cfg.d_model
            self.heads = cfg.n_heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class TinyGPT(nn.Module):
        """Token + position embeddings, pre-norm causal blocks, a linear head."""

        def __init__(self, cfg: GoldenConfig) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
            self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
            self.ln = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    return TinyGPT


def build_model(cfg: GoldenConfig):
    """A fresh TinyGPT (weights from torch's current seed)."""
    return _tiny_gpt_class()(cfg)


# --------------------------------------------------------------------------- data

def markov_chain(cfg: GoldenConfig, seed: int) -> torch.Tensor:
    """Transition matrix (vocab x vocab): each token has ``successors`` likely next tokens."""
    g = torch.Generator().manual_seed(seed)
    succ = torch.stack([torch.randperm(cfg.vocab, generator=g)[: cfg.successors] for _ in range(cfg.vocab)])
    probs = torch.rand(cfg.vocab, cfg.successors, generator=g) + 0.2
    trans = torch.zeros(cfg.vocab, cfg.vocab)
    trans.scatter_(1, succ, probs / probs.sum(1, keepdim=True))
    return trans


def global_batch(cfg: GoldenConfig, trans: torch.Tensor, seed: int, step: int) -> torch.Tensor:
    """The step's whole batch (global_batch x seq_len+1 tokens), the same on every rank."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step + 1)
    x = torch.empty(cfg.global_batch, cfg.seq_len + 1, dtype=torch.long)
    x[:, 0] = torch.randint(0, cfg.vocab, (cfg.global_batch,), generator=g)
    for t in range(cfg.seq_len):
        x[:, t + 1] = torch.multinomial(trans[x[:, t]], 1, generator=g).squeeze(1)
    return x


def my_slice(batch: torch.Tensor, member: int, n: int) -> torch.Tensor:
    per = max(1, batch.shape[0] // n)
    idx = [(member * per + i) % batch.shape[0] for i in range(per)]
    return batch[idx]


# --------------------------------------------------------------------------- training

class _Comm:
    """DDP comm hook state: times each bucket's all-reduce and acts faults out."""

    def __init__(self, ctx: Any, pg, n: int) -> None:
        self.ctx, self.pg, self.n = ctx, pg, n
        self.step_t0 = 0.0
        self.comm_s = 0.0
        self.late = False

    def start_step(self, t0: float) -> None:
        self.step_t0, self.comm_s, self.late = t0, 0.0, False

    def before_reduce(self, grads: "torch.Tensor") -> None:
        f = self.ctx.faults
        _perturb(f, grads)
        if not self.late:
            # a slow card computed slower, so it arrives late to the first all-reduce
            self.late = True
            _wait(f.op_delay_s(time.perf_counter() - self.step_t0, 2 * (self.n - 1)))


def _perturb(faults: Any, grads: "torch.Tensor") -> None:
    faults.corrupt_(grads)
    if faults.diverge:
        grads.add_(torch.randn_like(grads) * DIVERGE_NOISE)


def _wait(seconds: float) -> None:
    wait_s(seconds)


# No return annotation: DDP rejects any but the evaluated Future[Tensor], and this
# module's annotations are strings (it must import without torch).
def _timed_allreduce_hook(state: _Comm, bucket):
    buf = bucket.buffer()
    state.before_reduce(buf)
    t0 = time.perf_counter()
    dist.all_reduce(buf, group=state.pg)
    state.ctx.sync()
    state.comm_s += time.perf_counter() - t0
    buf.div_(state.n)
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future(devices=[buf.device] if buf.is_cuda else None)
    fut.set_result(buf)
    return fut


def run_golden(ctx: Any, plan: dict, config: dict) -> None:
    """Train each plan group in turn; rank 0 writes one ``golden`` row per step."""
    from sncheck.worker.collectives import usable_groups  # noqa: PLC0415 -- it needs torch at import; this module must not

    cfg = GoldenConfig.from_dict(config)
    steps, seed = int(plan.get("steps", 60)), int(plan.get("seed", 0))
    trans = markov_chain(cfg, seed)
    for g, pg in usable_groups(ctx, plan.get("groups") or [], "golden", 1):
        members = [ctx.index[m] for m in g["members"]]
        # By the group's kind, as the mock does: a one-card host is still a replica
        # ("group"); "solo" is the narrowing pass that trains a card alone.
        stage = "solo" if g.get("kind") == "card" else "group"
        ctx.progress(f"golden: {g['id']} ({stage}, {steps} steps)")
        run = _Run(ctx, cfg, seed, members, pg) if ctx.rank in members else None
        for step in range(steps):
            rec = run.step(trans, step) if run else None
            gathered = ctx.gather(rec)
            if gathered is not None:
                ctx.write(_golden_row(g["id"], stage, step, [gathered[r] for r in members]))
        del run


class _Run:
    """One rank's model, optimizer and comm hook for one group's run."""

    def __init__(self, ctx: Any, cfg: GoldenConfig, seed: int, members: list[int], pg) -> None:
        self.ctx, self.cfg, self.seed = ctx, cfg, seed
        self.n = len(members)
        self.member = members.index(ctx.rank)
        torch.manual_seed(seed)  # the same initial weights on every member
        model = build_model(cfg).to(ctx.device)
        self.comm = _Comm(ctx, pg, self.n) if self.n > 1 else None
        if self.comm:
            from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: PLC0415 -- torch: an optional extra; this module imports without it
            model = DDP(model, process_group=pg,
                        device_ids=[ctx.device.index] if ctx.is_cuda else None)
            model.register_comm_hook(self.comm, _timed_allreduce_hook)
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        # noise and fault draws of this rank follow the seed, too
        torch.manual_seed(seed * 7919 + ctx.rank)

    def _solo_faults(self, t0: float) -> None:
        """Without DDP the hook never runs: act faults on the gradients here."""
        for p in self.model.parameters():
            if p.grad is not None:
                _perturb(self.ctx.faults, p.grad)
        _wait(self.ctx.faults.op_delay_s(time.perf_counter() - t0, 0))

    def step(self, trans: torch.Tensor, step: int) -> dict:
        x = my_slice(global_batch(self.cfg, trans, self.seed, step), self.member, self.n).to(self.ctx.device)
        self.ctx.sync()
        t0 = time.perf_counter()
        if self.comm:
            self.comm.start_step(t0)
        logits = self.model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, self.cfg.vocab), x[:, 1:].reshape(-1))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if not self.comm:
            self._solo_faults(t0)
        self.opt.step()
        value = float(loss.item())  # also waits for the device
        self.ctx.sync()
        elapsed = time.perf_counter() - t0
        self.ctx.heartbeat()
        return {"loss": value, "step_s": elapsed, "comm_s": self.comm.comm_s if self.comm else 0.0}


def _golden_row(group: str, stage: str, step: int, recs: list[dict]) -> dict:
    step_s = max(r["step_s"] for r in recs)
    comm_s = statistics.fmean(r["comm_s"] for r in recs)
    least = min(r["comm_s"] for r in recs) if len(recs) > 1 else None  # the last to arrive: transfer only
    return golden_row(group, stage, step, statistics.fmean(r["loss"] for r in recs), step_s, comm_s, least)
