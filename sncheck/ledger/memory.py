"""The memory ledger: per-card memory of a training layout, before adding cards.

Per card, in bytes (Ψ = parameters held by the card):

* **Ψ** = P_dense / (TP × PP) + P_expert / (EP × PP). Dense weights (attention, embeddings,
  shared layers) are split by tensor and pipeline parallelism; expert weights by expert and
  pipeline parallelism, each expert whole on one rank (expert tensor parallelism 1), the
  EP groups carved out of each stage's TP × DP ranks (as in :mod:`sncheck.health.capacity`).
* **weights** = w × Ψ, **gradients** = w × Ψ, with w the bytes of the training precision
  (bf16/fp16 2, fp8 1, fp32 4).
* **optimizer** = o × Ψ: Adam keeps an fp32 master copy and two fp32 moments, o = 12 (8 when
  training in fp32, the weights being the master copy); SGD with momentum o = 8 (4 in fp32).
  This is the ZeRO paper's accounting (Rajbhandari et al., 2020: 2 + 2 + 12 = 16 bytes per
  parameter in mixed precision).
* **ZeRO** (``--zero``): stage 1 divides the optimizer state, 2 also the gradients, 3 also
  the weights, by the data-parallel size that holds copies: DP for dense parameters,
  TP × DP / EP for expert parameters.
* **activations** (Korthikanti et al., 2022, "Reducing Activation Recomputation in Large
  Transformer Models"), 16-bit, with tensor and sequence parallelism, on the first pipeline
  stage, which holds PP micro-batches of L / PP layers in flight under 1F1B, that is L
  layers' worth: per layer s·b·h·(34 + 5·a·s/h) / TP; ``selective`` recomputation (or flash
  attention) drops the 5·a·s/h term: s·b·h·34 / TP; ``full`` recomputation keeps only each
  layer's input, s·b·h·2 / TP. With top-k routing the MLP part (19 of the 34) runs k times:
  34 becomes 15 + 19·k.

Not counted: the CUDA context and allocator fragmentation (a few GiB; ``--reserve``), the
embedding/logit activations of the last stage, and communication buffers.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from sncheck.errors import ConfigError

GiB = float(1 << 30)
PRECISION_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
OPTIMIZERS = ("adam", "sgd")
RECOMPUTE = ("none", "selective", "full")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_count(text: str) -> float:
    """``1.8T``, ``70B``, ``175e9``, ``7M`` -> a number of parameters."""
    # ASCII digits: '\d' and isdecimal() take every script's ('٧B' planned 7e9 parameters; hostile round 20)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:[eE][0-9]+)?)\s*([KMBGT]?)\s*", str(text))
    if not m:
        raise ConfigError(f"{text!r} is not a parameter count like 1.8T, 70B or 175e9")
    value = float(m.group(1)) * _SCALE[m.group(2)]
    if not 0 < value < 1e16:
        raise ConfigError(f"parameter count must be positive and below 1e16, got {text!r}")
    return value


MAX_MEMORY = 1024 ** 5  # bytes: a card's memory (or reserve) above 1 PiB is no card's


def parse_memory(text: str, allow_zero: bool = False) -> float:
    """``80GB``, ``80 GiB``, ``192`` (GiB) -> bytes. GPU memory sizes are binary: 80GB means 80 GiB."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(GiB|GB|G|TiB|TB|T)?\s*", str(text))
    if not m:
        raise ConfigError(f"{text!r} is not a memory size like 80GB")
    factor = GiB * (1024 if (m.group(2) or "G").startswith("T") else 1)
    value = float(m.group(1)) * factor
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"memory must be positive, got {text!r}")
    if value > MAX_MEMORY:  # '99999999TB' planned a card of 10^20 bytes (hostile round 19)
        raise ConfigError(f"memory must be at most 1 PiB (1024TiB) a card, got {text!r}")
    return value


# A parallel degree above the most cards one inventory holds (config/hostlist's cap) plans
# nothing that could run.
MAX_DEGREE = 1_000_000


def parse_layout(text: str) -> dict[str, int | None]:
    """``tp=8,ep=8,pp=16,dp=4`` -> dict; ``dp=...`` (or no dp) means "as many as fit"."""
    out: dict[str, int | None] = {"tp": 1, "ep": 1, "pp": 1, "dp": None}
    seen: set[str] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in out:
            raise ConfigError(f"--layout takes tp=,ep=,pp=,dp= separated by commas; got {part!r}")
        if key in seen:  # 'tp=8,tp=4' planned TP=4 silently: the reader cannot know which was meant
            raise ConfigError(f"--layout names {key} twice: {text!r}")
        seen.add(key)
        value = value.strip()
        if key == "dp" and value in ("...", "…", "", "auto"):
            out["dp"] = None
            continue
        if not (value.isascii() and value.isdecimal()) or not 1 <= int(value) <= MAX_DEGREE:
            raise ConfigError(f"{key} must be a positive integer of at most {MAX_DEGREE}, got {value!r}")
        out[key] = int(value)
    return out


@dataclass(frozen=True)
class Model:
    params: float                  # total parameters
    expert_params: float = 0.0     # of which in experts (MoE)
    hidden: int | None = None
    layers: int | None = None
    heads: int | None = None
    top_k: int = 1
    experts: int | None = None     # routed experts per MoE layer (None: one per EP rank)
    moe_every: int = 1             # every n-th layer is a MoE layer (Megatron's --moe-layer-freq)

    @property
    def dense_params(self) -> float:
        return self.params - self.expert_params

    def active_params(self, ep: int) -> float:
        """Parameters a token passes through: the dense ones and top-k of the experts."""
        if not self.expert_params:
            return self.params
        return self.dense_params + self.expert_params * min(1.0, self.top_k / self.routed_experts(ep))

    def routed_experts(self, ep: int) -> int:
        return self.experts or ep


@dataclass(frozen=True)
class Training:
    precision: str = "bf16"
    optimizer: str = "adam"
    seq: int = 4096
    micro_batch: int = 1
    recompute: str = "selective"
    zero: int = 0


@dataclass(frozen=True)
class Ledger:
    params_per_card: float
    weights: float
    gradients: float
    optimizer: float
    activations: float | None      # None: the model's shape is unknown
    reserve: float
    card_memory: float | None
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + (self.activations or 0.0) + self.reserve

    @property
    def fits(self) -> bool | None:
        """None when it cannot be said: no card memory, or activations unknown while what is
        counted fits (activations only add: what is counted over the card does not fit)."""
        if self.card_memory is None:
            return None
        if self.total > self.card_memory:
            return False
        return None if self.activations is None else True

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(total=self.total, fits=self.fits)
        return {k: (round(v / GiB, 3) if isinstance(v, float) and k not in ("params_per_card",) else v)
                for k, v in d.items()} | {"unit": "GiB", "params_per_card": self.params_per_card}


def check_layout(model: Model, tp: int, ep: int, pp: int, dp: int) -> None:
    for name, v in (("tp", tp), ("ep", ep), ("pp", pp), ("dp", dp)):
        if v < 1:
            raise ConfigError(f"{name} must be at least 1, got {v}")
    if not 0 <= model.expert_params < model.params:
        raise ConfigError("--expert-params must be below --params (the rest is attention, embeddings, ...)")
    if ep > 1 and model.expert_params == 0:
        raise ConfigError(f"EP={ep} splits experts, but --expert-params is 0: give the parameters in experts")
    if (tp * dp) % ep:
        raise ConfigError(f"EP={ep} must divide TP x DP = {tp * dp}: expert-parallel groups are carved "
                          "out of each pipeline stage's TP x DP ranks")
    if model.layers is not None and model.layers % pp:
        raise ConfigError(f"PP={pp} must divide the {model.layers} layers")
    # Megatron's tensor-parallel split: each TP rank takes whole heads and an equal share of the
    # hidden size (and each head an equal share of it): a layout that cannot split them cannot run
    if model.hidden is not None and model.hidden % tp:
        raise ConfigError(f"TP={tp} must divide the hidden size {model.hidden}: each TP rank holds an equal share")
    if model.heads is not None and model.heads % tp:
        raise ConfigError(f"TP={tp} must divide the {model.heads} attention heads: each TP rank holds whole heads")
    if model.heads is not None and model.hidden is not None and model.hidden % model.heads:
        raise ConfigError(f"the {model.heads} attention heads must divide the hidden size {model.hidden}")
    if model.experts is not None and model.experts % ep:
        raise ConfigError(f"EP={ep} must divide the {model.experts} experts: each EP rank holds whole experts")
    if model.experts is not None and model.top_k > model.experts:
        raise ConfigError(f"top-k {model.top_k} is more than the {model.experts} experts")


def ledger(model: Model, train: Training, tp: int, ep: int, pp: int, dp: int,
           card_memory: float | None = None, reserve: float = 0.0) -> Ledger:
    """Per-card memory of ``model`` trained with ``train`` on a TP×PP×DP layout (EP for experts)."""
    check_layout(model, tp, ep, pp, dp)
    if train.precision not in PRECISION_BYTES:
        raise ConfigError(f"precision must be one of {', '.join(PRECISION_BYTES)}, got {train.precision!r}")
    if train.optimizer not in OPTIMIZERS:
        raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {train.optimizer!r}")
    if train.recompute not in RECOMPUTE:
        raise ConfigError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {train.recompute!r}")
    if train.zero not in (0, 1, 2, 3):
        raise ConfigError(f"zero must be 0, 1, 2 or 3, got {train.zero}")
    w = PRECISION_BYTES[train.precision]
    mixed = train.precision != "fp32"
    o = {"adam": 12 if mixed else 8, "sgd": 8 if mixed else 4}[train.optimizer]
    dense = model.dense_params / (tp * pp)
    expert = model.expert_params / (ep * pp)
    dense_dp, expert_dp = dp, tp * dp // ep

    def sharded(per_param: float, stage: int) -> float:
        if train.zero >= stage:
            return per_param * (dense / dense_dp + expert / expert_dp)
        return per_param * (dense + expert)

    weights, grads, opt = sharded(w, 3), sharded(w, 2), sharded(o, 1)
    notes = []
    act = activations(model, train, tp)
    if act is None:
        notes.append("activations not counted: give --hidden and --layers (and --heads without recomputation)")
    return Ledger(dense + expert, weights, grads, opt, act, reserve, card_memory, tuple(notes))


def activations(model: Model, train: Training, tp: int) -> float | None:
    """Bytes of activations on the first pipeline stage (L layers' worth under 1F1B); None if unknown."""
    h, L = model.hidden, model.layers
    if h is None or L is None:
        return None
    sbh = train.seq * train.micro_batch * h
    if train.recompute == "full":
        per_layer = 2.0 * sbh
    else:
        per_layer = (15 + 19 * model.top_k) * sbh
        if train.recompute == "none":
            if model.heads is None:
                return None
            per_layer += 5.0 * model.heads * train.seq * train.seq * train.micro_batch
    return per_layer * L / tp


def replicas(cards: int, tp: int, pp: int, ep: int) -> int:
    """Model replicas (DP) that fit in ``cards`` ignoring placement (capacity() counts placement)."""
    dp = cards // (tp * pp)
    while dp > 0 and (tp * dp) % ep:
        dp -= 1
    return dp


def platform_memory(platform: object | None) -> float | None:
    """A platform's memory per rank in bytes, as its vendor plug-in says (``card_memory_GiB``)."""
    if platform is None:
        return None
    gib = getattr(platform, "card_memory_GiB", None)
    return float(gib) * GiB if gib else None


def gib(x: float | None) -> str:
    return "-" if x is None else f"{x / GiB:,.1f} GiB"

