"""Which reading judges a group read both ways (a cross group: against its peer rails and against its
tier's design, ``groups.group_busbw``'s ``peers_us`` and ``design_us``): chosen by a rule's own bars."""

from __future__ import annotations

import numpy as np
import pandas as pd


def peers_kept(by_peers: np.ndarray, by_design: np.ndarray, t: np.ndarray, bar: dict[str, float]) -> np.ndarray:
    """Where a group read both ways is judged against its peers: their reading beyond their bar and
    design's within its own (each reading over its bar: below 1 is beyond it)."""
    to_design, to_peers = by_design / t / bar["design_below"], by_peers / t / bar["below"]
    return ~np.isnan(to_peers) & ~np.isnan(to_design) & (to_peers < 1) & (to_design >= 1)


def reading(frame: pd.DataFrame, bar: dict[str, float]) -> pd.DataFrame:
    """:func:`group_busbw`'s frame with each group read both ways judged by these bars (a rule's own):
    its peers' reading where theirs is beyond ``below`` and design's within ``design_below``, else
    design's. The frame keeps the shipped bars' choice; an operator's rule that moves the bars
    chooses by its own (the shipped bars chose for every rule before)."""
    if "peers_us" not in frame or frame.empty:
        return frame
    peers, design = frame["peers_us"].to_numpy(float), frame["design_us"].to_numpy(float)
    both = ~np.isnan(peers) & ~np.isnan(design)
    if not both.any():
        return frame
    t = frame["time_us"].to_numpy(float)
    kept = peers_kept(peers, design, t, bar)
    swap = both & (kept != (frame["basis"].to_numpy() == "peers"))
    if not swap.any():
        return frame
    expected = np.where(swap, np.where(kept, peers, design), frame["expected_us"].to_numpy(float))
    basis = np.where(swap, np.where(kept, "peers", "design"), frame["basis"].to_numpy()).astype(object)
    return frame.assign(expected_us=expected, value=expected / t, excess_us=t - expected, basis=basis)
