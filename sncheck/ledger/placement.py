"""Where a layout's parallel groups sit: inside one host, one scale-up domain, or across.

Ranks are numbered as Megatron-LM's ``RankGenerator`` numbers them with its default order
``tp-cp-ep-dp-pp`` (tensor parallelism fastest, pipeline slowest; no context parallelism)
and expert tensor parallelism 1, as in the memory ledger:

* a pipeline stage is a block of TP x DP consecutive ranks; stage boundaries pair rank r
  with r + TP x DP;
* a TP group is TP consecutive ranks; a dense DP group the ranks of one TP position in a
  stage (stride TP);
* an EP group is EP consecutive ranks of a stage (stride 1: the expert mesh is
  ``etp-ep-edp-pp`` with ETP 1); an expert-DP group the ranks of one EP position (stride EP).

Ranks fill the scale-up domains in order. Where whole units of lcm(TP, EP) cards fit in a
domain (as :mod:`sncheck.health.capacity` places them), a domain takes as many units as its
cards hold and its leftover cards stay idle; where a unit is larger than a domain, ranks
fill every card and the groups must span domains. Inside a domain, ranks fill its hosts in
order. Ranks beyond the inventory's domains go to more domains of the same size (the
layout does not fit what is there; the accounts say what it would cost if it were bought).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sncheck.errors import ConfigError
from sncheck.config.playbook import ParallelLayout
from sncheck.model import Tier


@dataclass(frozen=True)
class Domains:
    """The scale-up domains ranks are placed in: each one's cards (healthy ones, with -i and
    --state-dir), its cards per host, and the size of any domain beyond them."""

    sizes: tuple[int, ...]
    host_cards: tuple[int, ...]
    names: tuple[str, ...] = ()
    extra_size: int = 0            # 0: the domains' largest
    extra_host_cards: int = 0

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 0 or max(self.sizes) < 1:
            raise ConfigError("a scale-up domain needs at least one card")
        if len(self.host_cards) != len(self.sizes) or min(self.host_cards) < 1:
            raise ConfigError("each scale-up domain needs its cards per host (at least 1)")

    @classmethod
    def uniform(cls, domain_cards: int, host_cards: int | None = None) -> "Domains":
        """Domains of ``domain_cards`` cards each (hosts of ``host_cards``; default one host a domain)."""
        if domain_cards < 1:
            raise ConfigError(f"a scale-up domain needs at least one card, got {domain_cards}")
        return cls((domain_cards,), (host_cards or domain_cards,))

    @property
    def largest(self) -> int:
        return self.extra_size or max(self.sizes)


@dataclass(frozen=True)
class Span:
    """Where the worst group of one kind sits, and how many of its kind cross each tier."""

    tier: str                  # the slowest tier its traffic crosses
    groups: int                # groups of this kind
    crossing: int              # of which span more than one domain
    domains: int               # domains the worst group spans
    hosts: int                 # hosts it spans
    size: int                  # ranks in a group
    peers: dict[str, int]      # for one member of the worst group: its peers per tier

    def to_dict(self) -> dict:
        return {"tier": self.tier, "groups": self.groups, "crossing_domains": self.crossing,
                "domains": self.domains, "hosts": self.hosts, "size": self.size, "peers": dict(self.peers)}


class Placement:
    """Each rank's domain and host, for one layout on some domains."""

    def __init__(self, layout: ParallelLayout, domains: Domains) -> None:
        self.layout, self.domains = layout, domains
        unit = layout.unit
        packs = unit <= max(domains.sizes)  # whole units fit somewhere: place by units, as capacity does
        used = [(s // unit) * unit if packs else s for s in domains.sizes]
        hosts = list(domains.host_cards)
        extra = domains.largest
        extra_used = (extra // unit) * unit if packs else extra
        if extra_used < 1:
            raise ConfigError(f"a group of {unit} cards (lcm of TP and EP) fits in no scale-up domain")
        world = layout.world
        while sum(used) < world:  # the layout needs more domains than there are: more of the same
            used.append(extra_used)
            hosts.append(domains.extra_host_cards or max(domains.host_cards))
        self.used = np.array(used, dtype=np.int64)
        self.host_cards = np.array(hosts, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.used)[:-1]])
        self.inventory_domains = len(domains.sizes)
        self.domain_count = int(np.searchsorted(np.cumsum(self.used), world, side="left")) + 1

    def locate(self, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each rank's domain index, and a host index unique over all domains."""
        ends = np.cumsum(self.used)
        dom = np.searchsorted(ends, ranks, side="right")
        offset = ranks - self.starts[dom]
        host_base = np.concatenate([[0], np.cumsum(-(-self.used // self.host_cards))[:-1]])
        return dom, host_base[dom] + offset // self.host_cards[dom]

    def span(self, groups: np.ndarray) -> Span:
        """Where the groups (one per row, ranks as columns) sit; the worst one decides."""
        n = groups.shape[1]
        dom, host = self.locate(groups)
        ndom = _distinct(dom)
        nhost = _distinct(host)
        worst = int(np.lexsort((nhost, ndom))[-1])
        tier = Tier.SCALE_OUT if ndom[worst] > 1 else Tier.SCALE_UP if nhost[worst] > 1 else Tier.INTRA_HOST
        d, h = dom[worst], host[worst]
        # the member with the most peers beyond its domain (then its host) stands for the group
        out = np.array([(d != d[i]).sum() for i in range(n)])
        up = np.array([((d == d[i]) & (h != h[i])).sum() for i in range(n)])
        i = int(np.lexsort((up, out))[-1])
        peers = {Tier.INTRA_HOST.value: int(n - 1 - out[i] - up[i]), Tier.SCALE_UP.value: int(up[i]),
                 Tier.SCALE_OUT.value: int(out[i])}
        return Span(str(tier), len(groups), int((ndom > 1).sum()), int(ndom[worst]), int(nhost[worst]), n, peers)


def _distinct(a: np.ndarray) -> np.ndarray:
    """Distinct values per row."""
    s = np.sort(a, axis=1)
    return 1 + (np.diff(s, axis=1) != 0).sum(axis=1)


# ------------------------------------------------------------------ the groups

def tp_groups(lay: ParallelLayout) -> np.ndarray:
    return np.arange(lay.world, dtype=np.int64).reshape(-1, lay.tp)


def ep_groups(lay: ParallelLayout) -> np.ndarray:
    return np.arange(lay.world, dtype=np.int64).reshape(-1, lay.ep)


def dp_groups(lay: ParallelLayout) -> np.ndarray:
    """Dense data-parallel groups: per stage, the ranks of one TP position."""
    return _strided(lay, lay.tp, lay.dp)


def edp_groups(lay: ParallelLayout) -> np.ndarray:
    """Expert data-parallel groups: per stage, the ranks of one EP position."""
    return _strided(lay, lay.ep, lay.edp)


def pp_pairs(lay: ParallelLayout) -> np.ndarray:
    """Neighbouring stages' ranks: (r, r + TP x DP) for every rank but the last stage's."""
    first = np.arange(lay.world - lay.stage, dtype=np.int64)
    return np.stack([first, first + lay.stage], axis=1)


def _strided(lay: ParallelLayout, stride: int, size: int) -> np.ndarray:
    stage = lay.stage
    base = np.arange(lay.pp, dtype=np.int64)[:, None] * stage + np.arange(stride, dtype=np.int64)[None, :]
    ranks = base.reshape(-1, 1) + np.arange(size, dtype=np.int64)[None, :] * stride
    return ranks


MAX_WORLD = 1 << 22  # ranks a plan may place: far above any cluster, low enough to stay in memory


def check_world(lay: ParallelLayout) -> None:
    if lay.world > MAX_WORLD:
        raise ConfigError(f"{lay} is {lay.world} ranks, more than the {MAX_WORLD} a plan places")
