"""The accounts done before adding cards (``sncheck plan``): memory, communication, time.

* :mod:`.memory`: per-card memory (weights, gradients, optimizer state, activations);
* :mod:`.placement`: which cards each parallel group sits on, and the tier it crosses;
* :mod:`.comm`: each parallelism's collectives in a training step (size, count, group);
* :mod:`.tiers`: each tier's figures (measured, platform design, ``--design``) and a
  collective's time on it (alpha-beta, nccl-tests bus bandwidth);
* :mod:`.timing`: compute, communication and step time, the communication share and its band;
* :mod:`.golden`: the same accounts for the golden model, against what the golden layer measured.

The package sits with ``health`` in the import order: it reads ``config``, ``topology``,
``store`` and ``vendors``; ``layers``, ``watch`` and ``cli`` read it.
"""

from sncheck.ledger.memory import (GiB, Ledger, Model, PRECISION_BYTES, Training, activations, check_layout, gib,
                                   ledger, parse_count, parse_layout, parse_memory, platform_memory, replicas)

__all__ = ["GiB", "Ledger", "Model", "PRECISION_BYTES", "Training", "activations", "check_layout", "gib", "ledger",
           "parse_count", "parse_layout", "parse_memory", "platform_memory", "replicas"]
