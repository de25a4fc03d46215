"""The stress groups' measurements :func:`sncheck.health.groups.group_busbw` judges, and its frame
worked out once for the same ones (issue 31).

A stress layer asks group_busbw of the same groups up to four times a run: the slow groups before and
after their reruns, the groups beyond their culprits, the group rule's judging (after the narrowing, whose
pair rows are no group's): 1.1 s each at 16,384 cards. The frame is kept per topology for the measured
groups (a digest of their values) and the design, until the rule's evaluation takes it: from there the
evaluation's own cache holds it, as every metric's, so no frame outlives the layer's judging."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import pandas as pd

from sncheck.store.frames import kind_rows

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.topology import Topology

IDS = ["group", "group_kind", "collective"]
MEASURED = [*IDS, "size_bytes", "ranks", "time_us"]


def measured(rows, not_groups: Collection[str]) -> pd.DataFrame:
    """The ok collective rows of two ranks or more whose ``group_kind`` is none of ``not_groups``
    (``MEASURED``' columns); the ids as categories in text order (what the groups are sorted by)."""
    coll = kind_rows(rows, "collective", [*MEASURED, "status"])
    if coll.empty:
        return coll
    coll = coll[~coll["group_kind"].astype(str).isin(list(not_groups)) & (coll["status"] == "ok")
                & (coll["time_us"].astype(float) > 0) & (coll["ranks"].astype(float) >= 2)]
    ids = {c: pd.Categorical(coll[c]).remove_unused_categories() for c in IDS}
    out = {c: v.set_categories(sorted(str(x) for x in v.categories)) for c, v in ids.items()}
    return pd.DataFrame(out | {"size_bytes": coll["size_bytes"].to_numpy(), "ranks": coll["ranks"].to_numpy(),
                               "time_us": coll["time_us"].to_numpy(float)})


def judged_once(coll: pd.DataFrame, ctx: "DetectContext", judge: Callable[[pd.DataFrame, "DetectContext"], pd.DataFrame]
                ) -> pd.DataFrame:
    """``judge(coll, ctx)``, or the frame it gave last for the same measurements and design under
    this topology; an evaluation's read (``ctx.cache`` set: the rule's, the last) takes it out."""
    key = (_digest(coll), ctx.design)
    held = _JUDGED.get(ctx.topo)
    frame = held[1] if held is not None and held[0] == key else judge(coll, ctx)
    if ctx.cache is not None:
        _JUDGED.pop(ctx.topo, None)
    else:
        _JUDGED[ctx.topo] = (key, frame)
    return frame.copy(deep=False)  # (a caller's column set or dropped is its own)


def kept(topo: "Topology") -> bool:
    """Whether a frame is kept for ``topo``."""
    return topo in _JUDGED


_JUDGED: "WeakKeyDictionary[Topology, tuple[tuple, pd.DataFrame]]" = WeakKeyDictionary()


def _digest(coll: pd.DataFrame) -> bytes:
    """The measurements as a digest of their values (categories by their text) and their count."""
    hashed = pd.util.hash_pandas_object(coll, index=False).to_numpy()
    return hashlib.blake2b(hashed.tobytes(), digest_size=32).digest() + len(coll).to_bytes(8, "little")
