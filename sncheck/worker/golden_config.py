"""The golden model's shape (:class:`GoldenConfig`): what the worker trains and the ledger
forecasts. Standard library only: the control side reads it without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, fields

from sncheck.errors import ConfigError


@dataclass(frozen=True)
class GoldenConfig:
    vocab: int = 128
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 32
    global_batch: int = 32
    lr: float = 0.5
    momentum: float = 0.9
    successors: int = 4  # Markov chain branching: entropy ~ln(successors)

    @property
    def params(self) -> int:
        """TinyGPT's parameters, counted from its layers (tests hold it to the built model's)."""
        d = self.d_model
        block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
        return (self.vocab + self.seq_len) * d + self.n_layers * block + 2 * d + d * self.vocab

    @property
    def gradient_bytes(self) -> int:
        """fp32 gradients all-reduced a step."""
        return 4 * self.params

    @classmethod
    def from_dict(cls, d: dict) -> "GoldenConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown golden_config key(s): {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known))}")
        return cls(**d)
