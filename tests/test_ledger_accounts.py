"""The communication and time accounts against published accounts (within 10%) and by hand.

Published accounts reproduced here:

* Narayanan et al., 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM" (arXiv:2104.04473): section 3.2, tensor parallelism moves
  8bsh(t-1)/t per layer per device for each micro-batch; section 4.1, the scatter/gather
  optimisation sends bsh/t per micro-batch between stages; section 5.1, end-to-end training
  time 8TP/(nX): GPT-3 175B on 300B tokens, 1024 A100s at 140 teraFLOP/s, 34 days; 1T on
  450B tokens, 3072 A100s at 163 teraFLOP/s, 84 days.
* Rajbhandari et al., 2020, "ZeRO" (arXiv:1910.02054), section 7: data parallelism moves
  2 Psi per device a step (reduce-scatter and all-gather), stage 1 and 2 the same, stage 3
  3 Psi (1.5x).
* DeepSeek-V3's expert-parallel all-to-all as worked by G. Lockwood
  (https://glennklockwood.com/garden/expert-parallelism): hidden 7168, 256 routed experts,
  8 active, 4096 tokens a GPU, bf16: 32,640 tokens' hidden states, 468 MB, sent out by each
  GPU per MoE layer's dispatch, the same back; 54 GB of all-to-all traffic per forward
  pass over its 58 MoE layers.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sncheck.config.inventory import TierDesign
from sncheck.errors import ConfigError
from sncheck.config.playbook import ParallelLayout
from sncheck.ledger import Model, Training
from sncheck.ledger.comm import DP, EP, PP, TP, Collective, account, micro_batches
from sncheck.ledger.placement import Domains, Placement, Span, pp_pairs, tp_groups
from sncheck.ledger.tiers import Figures, TierFigures, design_figures, frames_figures, parse_design
from sncheck.ledger.timing import collective_time, time_account
from sncheck.ledger.verdict import band_of, judge

DAY = 86400.0


def one_domain(cards: int) -> Domains:
    return Domains.uniform(cards)


def lines(acct: list[Collective], kind: str) -> list[Collective]:
    return [c for c in acct if c.parallelism == kind]


# ------------------------------------------------------------------ published accounts

def test_megatron_tp_moves_8bsh_per_layer_and_pp_bsh_over_t() -> None:
    # GPT-3 175B's shape (Narayanan et al., table 1): h 12288, 96 layers, s 2048; b 1, t 8, one micro-batch.
    b, s, h, t, L = 1, 2048, 12288, 8, 96
    lay = ParallelLayout(tp=t, pp=2, dp=1)
    acct = account(Model(175e9, hidden=h, layers=L), Training(seq=s, micro_batch=b), lay,
                   Placement(lay, one_domain(64)), m=1)
    tp_bytes = sum(c.bytes_moved for c in lines(acct, TP))
    published = 8 * b * s * h * (t - 1) / t * 2 * (L / 2)   # elements x 2 bytes, the stage's 48 layers
    assert tp_bytes == pytest.approx(published, rel=0.10)
    assert tp_bytes == pytest.approx(published, rel=1e-12)   # and exactly: the same account
    (pp,) = lines(acct, PP)
    assert pp.size_bytes == pytest.approx(b * s * h / t * 2) and pp.count == 2  # bsh/t each way


@pytest.mark.parametrize("params, tokens, gpus, tflops, days, layout", [
    (175e9, 300e9, 1024, 140, 34, (8, 8, 16)),   # GPT-3
    (1e12, 450e9, 3072, 163, 84, (8, 64, 6)),    # the 1T model
])
def test_megatron_end_to_end_training_time(params, tokens, gpus, tflops, days, layout) -> None:
    # The paper counts 8TP FLOPs (full recomputation); MFU counts the model's 6TP: the
    # achieved 140 TFLOP/s is an MFU of 140 x 6/8 of the A100's 312.
    tp, pp, dp = layout
    lay = ParallelLayout(tp=tp, pp=pp, dp=dp)
    assert lay.world == gpus
    seq, batch = 2048, 1536
    acct = time_account(Model(params), lay, seq, batch, micro_batches(batch, 1, dp), [], Figures({}), 312e12,
                        mfu=tflops * 6 / 8 / 312)
    total = acct.step_s * tokens / (seq * batch) - acct.bubble_s * tokens / (seq * batch)
    assert total / DAY == pytest.approx(days, rel=0.10)


@pytest.mark.parametrize("zero, psi_moved", [(0, 2.0), (1, 2.0), (2, 2.0), (3, 3.0)])
def test_zero_data_parallel_volume(zero, psi_moved) -> None:
    # ZeRO section 7 with its running example: Psi = 7.5B, Nd = 64, one step of one micro-batch.
    psi, nd = 7.5e9, 64
    lay = ParallelLayout(dp=nd)
    acct = account(Model(psi), Training(zero=zero), lay, Placement(lay, one_domain(nd)), m=1)
    moved = sum(c.bytes_moved for c in lines(acct, DP)) / 2   # bf16: 2 bytes a parameter
    assert moved == pytest.approx(psi_moved * psi, rel=0.10)
    assert moved == pytest.approx(psi_moved * psi * (nd - 1) / nd, rel=1e-12)  # the ring's (n-1)/n


def test_deepseek_v3_all_to_all_volume() -> None:
    # EP 256 (one expert a GPU), TP 1, 4096 tokens a GPU, top-8, h 7168, 58 MoE layers.
    lay = ParallelLayout(ep=256, dp=256)
    model = Model(671e9, 600e9, hidden=7168, layers=58, top_k=8, experts=256)
    acct = account(model, Training(seq=4096), lay, Placement(lay, one_domain(256)), m=1)
    (ep,) = lines(acct, EP)
    per_dispatch = ep.size_bytes * (ep.ranks - 1) / ep.ranks
    assert per_dispatch / 7168 / 2 == pytest.approx(32_640)                 # tokens' hidden states
    assert per_dispatch == pytest.approx(468e6, rel=0.10)
    forward = ep.bytes_moved / 2                                            # dispatch + combine, forward only
    assert forward == pytest.approx(54e9, rel=0.10)


# ------------------------------------------------------------------ by hand

def test_alpha_beta_ring_tree_and_pairwise_by_hand() -> None:
    fig = TierFigures("scale_up", 10e-6, 10.0, "hand")           # 10 us, 10 GB/s
    # ring all-reduce of 1 MB over 4: 2(4-1) x 10 us + 2 x 3/4 x 1e6 / 1e10 = 60 + 150 us;
    # tree: 2 log2 4 x 10 us + 150 us = 190 us: the faster one
    assert fig.time("all_reduce", 4, 1e6) == (pytest.approx(190e-6), "tree")
    assert fig.time("all_gather", 4, 1e6) == (pytest.approx(3 * 10e-6 + 0.75e-4), "ring")
    assert fig.time("sendrecv", 2, 1e6) == (pytest.approx(10e-6 + 1e-4), "p2p")
    assert fig.time("all_reduce", 1, 1e6) == (0.0, "-")
    # an all-to-all over 8 ranks in 2 domains of 4, hosts of 2: a member has 1 peer on its
    # host, 2 more in its domain, 4 across: each exchange at its own tier
    figs = design_figures({"scale_up": TierDesign(100.0, 2.0), "scale_out": TierDesign(10.0, 10.0)}, "hand")
    lay = ParallelLayout(ep=8, dp=8)
    span = Placement(lay, Domains((4, 4), (2, 2))).span(np.arange(8).reshape(1, 8))
    assert (span.tier, span.domains, span.hosts, span.peers) == (
        "scale_out", 2, 4, {"intra_host": 1, "scale_up": 2, "scale_out": 4})
    S = 8e6
    c = Collective(EP, "all_to_all", S, 1, 8, "", span)
    expect = 3 * (2e-6 + S / 8 / 100e9) + 4 * (10e-6 + S / 8 / 10e9)
    assert collective_time(c, figs)[0] == pytest.approx(expect)


def test_measured_curve_interpolated_and_moved_to_other_group_sizes() -> None:
    curve = {("all_reduce", 4): (np.array([1e3, 1e6]), np.array([100e-6, 1000e-6]))}
    fig = TierFigures("scale_up", 10e-6, 1e6 * 1.5 / 1000e-6 / 1e9, "hand", curve)
    assert fig.time("all_reduce", 4, 1e6) == (pytest.approx(1000e-6), "measured")           # measured point
    assert fig.time("all_reduce", 4, math.sqrt(1e3 * 1e6))[0] == pytest.approx(math.sqrt(100e-6 * 1000e-6))
    assert fig.time("all_reduce", 4, 2e6)[0] == pytest.approx(2000e-6)                      # bus bandwidth held
    assert fig.time("all_reduce", 4, 10)[0] == pytest.approx(100e-6)                        # latency floor
    # 8 ranks: f/f_m = (2 x 7/8) / (2 x 3/4); t = f/f_m x 1000 us + (14 - 6 f/f_m) x 10 us
    k = (2 * 7 / 8) / (2 * 3 / 4)
    assert fig.time("all_reduce", 8, 1e6)[0] == pytest.approx(k * 1000e-6 + (14 - 6 * k) * 10e-6)
    # an all-gather on a tier that measured all-reduce only: its bus bandwidth, its own steps
    k = (3 / 4) / (2 * 3 / 4)
    assert fig.time("all_gather", 4, 1e6)[0] == pytest.approx(k * 1000e-6 + (3 - 6 * k) * 10e-6)


def test_rows_make_figures_per_tier() -> None:
    hosts = {"a": "sn0", "b": "sn0", "c": "sn1"}
    p2p = pd.DataFrame([
        {"kind": "p2p", "layer": "connectivity", "confirms": None, "status": "ok", "tier": "scale_up",
         "bw_GBps": bw, "lat_us": lat} for bw, lat in ((400, 2.0), (420, 3.0), (380, 100.0))]
        + [{"kind": "p2p", "layer": "confirm", "confirms": "a/gpu0", "status": "ok", "tier": "scale_up",
            "bw_GBps": 1.0, "lat_us": 1e6}])                                        # a retest's: left out
    coll = pd.DataFrame([
        {"kind": "collective", "layer": "stress", "confirms": None, "status": "ok", "group": g, "group_kind": k,
         "ranks": n, "collective": "all_reduce", "size_bytes": size, "time_us": t, "wrong": w}
        for g, k, n, size, t, w in (
            ("host:a", "host", 4, 1 << 20, 50.0, 0), ("host:a", "host", 4, 1 << 20, 70.0, 0),
            ("host:a", "host", 4, 1 << 20, 1.0, 5),                                   # wrong: left out
            ("pair:a/gpu0<->c/gpu0", "pair", 2, 1 << 20, 900.0, 0),
            ("pair:a/gpu0<->x/gpu0", "pair", 2, 1 << 20, 1.0, 0))])                    # unknown host
    figs = frames_figures(p2p, coll, hosts, "rows")
    up, host, out = figs.get("scale_up"), figs.get("intra_host"), figs.get("scale_out")
    assert up.alpha_s == pytest.approx(3e-6) and up.p2p_GBps == 400 and not up.curves
    assert host.curves[("all_reduce", 4)][1].tolist() == [pytest.approx(60e-6)]       # the median of 50, 70
    assert out.curves[("all_reduce", 2)][1].tolist() == [pytest.approx(900e-6)]
    assert figs.get("scale_out").source == "rows"


def test_placement_follows_megatron_order_and_capacity_units() -> None:
    # TP 8, EP 64, PP 6, DP 8 on NVL72 racks (72 cards, trays of 4): a rack holds one
    # unit of lcm(8, 64) = 64 cards (8 idle), which is one pipeline stage (TP x DP = 64):
    # TP and EP inside a rack, PP across racks.
    lay = ParallelLayout(tp=8, ep=64, pp=6, dp=8)
    place = Placement(lay, Domains((72,), (4,)))
    assert place.domain_count == 6 and place.used.tolist()[:6] == [64] * 6
    assert place.span(tp_groups(lay)).tier == "scale_up" and place.span(tp_groups(lay)).crossing == 0
    pp = place.span(pp_pairs(lay))
    assert (pp.tier, pp.crossing, pp.groups) == ("scale_out", 5 * 64, 5 * 64)
    # TP 16 on supernodes of 8 cards (hosts of 4): every TP group spans 2 supernodes
    lay = ParallelLayout(tp=16, dp=2)
    span = Placement(lay, Domains((8, 8), (4, 4))).span(tp_groups(lay))
    assert (span.tier, span.domains, span.hosts, span.crossing, span.groups) == ("scale_out", 2, 4, 2, 2)


def test_tp_across_supernodes_is_a_warning_and_the_share_says_why() -> None:
    model, train = Model(7e9, hidden=4096, layers=32), Training(seq=4096)
    figs = design_figures({"scale_up": TierDesign(450.0, 3.0), "scale_out": TierDesign(50.0, 15.0)}, "hand")
    lay = ParallelLayout(tp=16, dp=2)
    acct = account(model, train, lay, Placement(lay, Domains((8, 8, 8, 8), (4,) * 4)), m=4)
    t = time_account(model, lay, 4096, 8, 4, acct, figs, 989e12, 0.4)
    v = judge(t, 8)
    assert v.band == "high" and not v.under_upper_band
    assert any(r.startswith("TP=16 spans 2 supernodes of 8: its all-gathers and reduce-scatters run at "
                            "scale-out speed") for r in v.reasons), v.reasons
    assert v.warnings and v.warnings[0].startswith("TP=16 spans 2 supernodes of 8 (2 of 2 TP groups cross)")
    inside = ParallelLayout(tp=8, dp=4)
    acct = account(model, train, inside, Placement(inside, Domains((8, 8, 8, 8), (4,) * 4)), m=2)
    t2 = time_account(model, inside, 4096, 8, 2, acct, figs, 989e12, 0.4)
    # a micro-batch's TP traffic: 16-way across at 50 GB/s against 8-way inside at 450
    assert t.exposed[TP] / 4 > 5 * t2.exposed[TP] / 2
    assert t2.share < t.share and judge(t2, 8).warnings == []


def test_pipeline_bubble_and_overlap_by_hand() -> None:
    # 1B dense, PP 2, DP 2, m 4; no TP: slots are compute + the PP send; DP after the flush.
    model = Model(1e9, hidden=2048, layers=16)
    lay = ParallelLayout(pp=2, dp=2)
    figs = design_figures({"scale_up": TierDesign(100.0, 5.0)}, "hand")
    acct = account(model, Training(seq=1024), lay, Placement(lay, one_domain(4)), m=4)
    t = time_account(model, lay, 1024, 8, 4, acct, figs, 100e12, 0.5)
    compute = 6 * 1e9 * 8 * 1024 / 4 / 50e12
    pp_send = 5e-6 + 1024 * 2048 * 2 / 100e9
    dp_ar = figs.get("scale_up").time("all_reduce", 2, 1e9 / 2 * 2)[0]
    slot = compute / 4 + 2 * pp_send
    assert t.compute_s == pytest.approx(compute)
    assert t.bubble_s == pytest.approx(slot)
    assert t.step_s == pytest.approx(5 * slot + dp_ar)
    assert t.exposed == pytest.approx({PP: 8 * pp_send, DP: dp_ar})
    assert t.share == pytest.approx((8 * pp_send + dp_ar) / t.step_s)
    # --overlap: PP sends hide behind each slot's compute, the all-reduce behind 2/3 of the last slot's
    o = time_account(model, lay, 1024, 8, 4, acct, figs, 100e12, 0.5, overlap=True)
    assert o.exposed[PP] == 0.0
    assert o.exposed[DP] == pytest.approx(max(0.0, dp_ar - 2 / 3 * compute / 4))
    assert o.step_s == pytest.approx(5 * compute / 4 + o.exposed[DP])


def test_bands_and_bad_inputs() -> None:
    assert [band_of(x) for x in (0.0, 0.099, 0.1, 0.299, 0.3, 1.0)] == ["low", "low", "middle", "middle",
                                                                        "high", "high"]
    with pytest.raises(ConfigError, match="global batch"):
        micro_batches(100, 1, 8)
    for bad in ("scale_up=900GB/s", "fabric=1GB/s@1us", "scale_up=fast@3us", "scale_up=900GB/s@-1us"):
        with pytest.raises(ConfigError):
            parse_design((bad,))
    assert parse_design(("scale_out=400Gb/s@5us",)).get("scale_out").bandwidth_GBps == 50.0
    with pytest.raises(ConfigError, match="no figures for the scale_out tier"):
        Figures({}).get("scale_out")
    lay = ParallelLayout(tp=2)
    with pytest.raises(ConfigError, match="--hidden and --layers"):
        account(Model(1e9), Training(), lay, Placement(lay, one_domain(2)), 1)
    with pytest.raises(ConfigError, match="divide the 6 experts"):
        from sncheck.ledger import ledger
        ledger(Model(1e9, 5e8, experts=6), Training(), tp=4, ep=4, pp=1, dp=1)


def test_span_reports_the_worst_group() -> None:
    # domains of 6 cards, TP 4: units of 4 pack one a domain (2 idle); TP never crosses
    lay = ParallelLayout(tp=4, dp=3)
    span = Placement(lay, Domains((6,), (6,))).span(tp_groups(lay))
    assert isinstance(span, Span) and span.crossing == 0 and span.tier == "intra_host"


def test_a_non_finite_measurement_is_no_tier_figure() -> None:
    """final review: plan --measured refuses a run holding an inf bandwidth (d24a99e), but the
    golden layer's forecast reads the run's own rows through frames_figures, where an inf
    bandwidth was kept (only NaN left out) and the tier's figure could read inf. An inf is no
    figure, as a missing value is not."""
    p2p = pd.DataFrame([
        {"kind": "p2p", "layer": "connectivity", "confirms": None, "status": "ok", "tier": "scale_up",
         "bw_GBps": bw, "lat_us": lat} for bw, lat in ((400, 2.0), (420, 3.0), (float("inf"), float("inf")),
                                                       (float("inf"), 4.0))])
    up = frames_figures(p2p, pd.DataFrame(), {}, "rows").get("scale_up")
    assert up.p2p_GBps == 410 and up.alpha_s == pytest.approx(3e-6)
