"""One rank's context: its card, device, process group, clocks, faults and the rank-0 writer."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from sncheck.worker.device import choose
from sncheck.worker.faults import FaultActor
from sncheck.worker.job import Job


class Ctx:
    """One rank's view: its card, device, clocks, faults and the rank-0 writer."""

    def __init__(self, job: Job, out_path: str, env: dict[str, str]) -> None:
        self.job = job
        self.cards: list[str] = list(job.cards)
        self.rank = int(env["RANK"])
        self.world = int(env["WORLD_SIZE"])
        self.local_rank = int(env.get("LOCAL_RANK", self.rank))
        if self.world != len(self.cards):
            raise ValueError(f"WORLD_SIZE {self.world} but the job lists {len(self.cards)} cards")
        self.card = self.cards[self.rank]
        self.index = {c: i for i, c in enumerate(self.cards)}
        self.seed = job.seed
        self.op_timeout_s = job.op_timeout_s
        self.faults = FaultActor(list(job.faults), self.card, self.seed)
        # the vendor's device and backend (cuda+nccl, npu+hccl through torch_npu), or gloo on CPU
        self.dev = choose(job.dist_backend, job.torch_device, torch, vendor_backend=job.vendor_dist_backend)
        self.backend = self.dev.backend
        self.is_cuda = self.dev.kind == "cuda"
        self.device = self.dev.torch_device(torch, self.local_rank)
        self.offset_ns = 0
        hb_dir = job.heartbeat_dir
        self._hb = Path(hb_dir) / f"rank{self.rank}" if hb_dir else None
        self._last_beat = 0.0
        self._out = open(out_path, "a", encoding="utf-8") if self.rank == 0 else None

    # ---- process group

    def init(self) -> None:
        if self.dev.accelerated:
            self.dev.module(torch).set_device(self.device)
        else:
            torch.set_num_threads(1)  # ranks share the host's cores
        dist.init_process_group(self.backend, init_method="env://", rank=self.rank,
                                world_size=self.world, timeout=self.dist_timeout)
        self.heartbeat()

    @property
    def dist_timeout(self) -> timedelta:
        return timedelta(seconds=2 * self.op_timeout_s)

    def new_group(self, ranks: list[int]):
        return dist.new_group(ranks, timeout=self.dist_timeout)

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
        if self._out:
            self._out.close()

    # ---- time

    def sync(self) -> None:
        """Wait for queued device work, so host timestamps bracket the real op."""
        if self.dev.accelerated:
            self.dev.module(torch).synchronize(self.device)

    def now_ns(self) -> int:
        """This rank's clock, moved onto rank 0's."""
        return time.perf_counter_ns() + self.offset_ns

    def heartbeat(self, every_s: float = 0.0) -> None:
        """Tell the launcher this rank is alive (at most once per ``every_s``)."""
        now = time.monotonic()
        if self._hb and now - self._last_beat >= every_s:
            self._hb.touch()
            self._last_beat = now

    # ---- small collectives

    def barrier(self, group=None) -> None:
        # a tiny all-reduce works the same on gloo, nccl and hccl (nccl's barrier needs device ids)
        dist.all_reduce(torch.zeros(1, device=self.device), group=group)

    def gather(self, obj: Any) -> list | None:
        """Every rank's ``obj`` on rank 0 (None elsewhere); all ranks must call it."""
        out = [None] * self.world if self.rank == 0 else None
        dist.gather_object(obj, out, dst=0)
        return out

    def agree(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank, for decisions that must not diverge."""
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    # ---- output (rank 0)

    def write(self, row: dict) -> None:
        if self._out:
            self._out.write(json.dumps(row) + "\n")
            self._out.flush()

    def progress(self, msg: str) -> None:
        self.write({"_progress": msg})
