"""The interface every backend implements. Backends turn plans into rows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

from sncheck.config.faultplan import TORCH_PROBE_FAULTS, FaultPlan
from sncheck.config.inventory import MAX_TIMEOUT_S, TierDesign
from sncheck.errors import ConfigError
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, StressPlan
from sncheck.rows import not_run_row
from sncheck.topology import Topology
from sncheck.vendors.hostjudge import FactJudge
from sncheck.worker.golden_config import GoldenConfig

Emit = Callable[[dict], None]
Progress = Callable[[str], None]
# Of an output cut for its length (transport.MAX_OUTPUT_BYTES), the head kept as the evidence.
KEPT_OF_CUT = 64 << 10
NEAR_BUDGET_S = 600.0  # real hosts: ten minutes a near suspect, at what its repeats cost there


class Backend(ABC):
    """Executes probes and emits rows (see :mod:`sncheck.rows`) through ``emit``.

    ``emit`` writes each row to the run directory as it arrives, so a killed run keeps
    what it measured. A backend never decides pass or fail.
    """

    name = "base"
    # Whether host_facts can read a command again while its output says "not ready yet"
    # (NVL72 fabric In Progress); a backend that collects every outcome at once cannot.
    rereads_facts = True
    # Seconds a suspect near its bar may spend re-measuring its pairs (sncheck.run.nearbar.NearClock:
    # the batches its measured cost a repeat fits in); the option ``near_budget_s`` overrides it.
    near_budget_s: float | None = NEAR_BUDGET_S

    def __init__(self, topo: Topology, faults: FaultPlan | None = None, seed: int = 0,
                 progress: Progress | None = None, **options) -> None:
        self.topo = topo
        self.faults = faults or FaultPlan()
        self.seed = seed
        self.progress = progress or (lambda _: None)
        self.options = options
        self.transient_ended = False  # set by begin_confirmation: transient faults are over
        given = options.get("near_budget_s")
        if given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))
                                  or not 0 < given <= MAX_TIMEOUT_S):  # the inventory's Seconds: NaN fails too
            raise ConfigError(f"backend option near_budget_s must be a positive number of seconds up to "
                              f"{MAX_TIMEOUT_S:g}, got {given!r}")

    def plan_defaults(self, layer: str) -> dict:  # noqa: ARG002 -- the Backend interface: no defaults unless a backend has its own
        """Plan options that suit this backend (a playbook's options override them).

        Keys: connectivity -> ConnectivityPlan fields; stress -> StressPlan fields plus
        ``min_bytes``, ``max_bytes``, ``step_factor``, ``narrow_sizes``; golden ->
        ``steps``, ``reference`` (the name of the golden curve to compare against).
        """
        return {}

    def default_rules(self) -> str:
        """The shipped rules file that suits this backend's measurement noise."""
        return "default"

    def golden_gradients(self) -> float:
        """Bytes of gradients the golden model all-reduces a step (the ledger's golden
        forecast): the worker's TinyGPT, with this backend's ``golden_config`` overrides."""
        return float(GoldenConfig.from_dict(dict(getattr(self, "golden_config", None) or {})).gradient_bytes)

    def calibrate(self, emit: Emit) -> dict[str, TierDesign]:  # noqa: ARG002 -- the Backend interface: a backend that measures emits its rows
        """Measured design values, for inventories that carry none (the local machine)."""
        return {}

    @abstractmethod
    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None: ...

    @abstractmethod
    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None: ...

    @abstractmethod
    def collectives(self, plan: StressPlan, emit: Emit) -> None: ...

    @abstractmethod
    def golden(self, plan: GoldenPlan, emit: Emit) -> None: ...

    def scale_out(self, plan: ConnectivityPlan, emit: Emit) -> bool:  # noqa: ARG002 -- the Backend interface: a backend that reaches real NICs runs the plan
        """The plan's ``tools`` (perftest between rail-aligned host pairs, nvbandwidth in
        each host): only a backend that reaches real NICs and GPUs runs them. False when
        this backend does not (the layer's summary says so)."""
        return False

    @property
    def fact_judge(self) -> FactJudge:
        """The host-fact judgement of this run (:mod:`sncheck.vendors.hostjudge`), the same
        on every backend; it remembers each host's devices at its first read. Options
        ``fabric_retry_s`` / ``fabric_retry_every_s`` override the platform's window."""
        judge = self.__dict__.get("_fact_judge")
        if judge is None:
            def opt(key: str) -> float | None:
                return float(self.options[key]) if self.options.get(key) is not None else None
            window = opt("fabric_retry_s") if self.rereads_facts else 0.0
            judge = self.__dict__["_fact_judge"] = FactJudge(self.topo.inventory, window_s=window,
                                                             interval_s=opt("fabric_retry_every_s"))
        return judge

    def pass_worker_rows(self, items: list[dict | str], layer: str, host: str, emit: Emit) -> int:
        """Pass on what a worker wrote (:class:`sncheck.rows.JsonLines` items): its
        progress lines to ``progress``, a line that is not a JSON row as a "parse_failed"
        row on ``host`` (never dropped), and every row to ``emit``. Returns the rows passed."""
        n = 0
        for item in items:
            if isinstance(item, str):
                emit(not_run_row(layer, host, "host", "parse_failed",
                                 f"{host}: the torch probe wrote a line that is not JSON: {item[:200]!r}"))
            elif "_progress" in item:
                self.progress(str(item["_progress"]))
            else:
                emit(item)
                n += 1
        return n

    def host_reads(self, hosts: tuple[str, ...], emit: Emit) -> bool:  # noqa: ARG002 -- the Backend interface: a backend with real hosts reads them
        """The reads only a real host has, for a run whose layers read no host facts: the
        kernel log since the last run and the fabric counters' first read (their second is
        :meth:`fabric_counters`, after the layers). False where this backend has none."""
        return False

    def fabric_counters(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """Read the fabric error counters again once a layer's traffic is over (their
        growth is judged, sncheck.health.fabric); a backend without real fabric has none."""

    def preflight(self) -> None:
        """What only a reach of the hosts can check before a run begins (no run directory yet):
        a :class:`sncheck.errors.ConfigError` here is exit 2 and nothing is measured. Nothing
        to check on a backend whose hosts the inventory fully describes."""

    def near_budget(self) -> float | None:
        """The wall time a near suspect's re-measurement may take here (None: no bound but the
        samples' own, :data:`sncheck.run.nearbar.NEAR_SAMPLES`): the option ``near_budget_s``
        (checked when the backend is made), else the inventory's ``backend.near_budget_s``, else
        this backend's own."""
        given = self.options.get("near_budget_s")
        if given is None:
            given = self.topo.inventory.near_budget_s
        return float(given) if given is not None else self.near_budget_s

    def begin_confirmation(self) -> None:
        """Called before confirmation retests: transient faults end here."""
        self.transient_ended = True

    def machine_load(self) -> dict | None:
        """How busy the one machine this backend measures on is, for judging a retest:
        ``{"runnable", "cores", "steal"}``; None where the backend's cards are not on a
        machine shared with its controls' measurement (mock, SSH, Slurm)."""
        return None

    def probe_faults(self) -> list[dict]:
        """The faults in effect that the torch probe acts out, as job data."""
        return [f.to_dict() for f in self.faults.active(self.transient_ended)
                if f.type in TORCH_PROBE_FAULTS]

    # Raw tool output, kept for the evidence bundles (sncheck.store.evidence): the text a
    # parsed fact came from. A backend that reads tools calls keep_output for each.
    def keep_output(self, host: str, tool: str, command: str, stdout: str, stderr: str = "",
                    exit_code: int | None = None, cut_at: int | None = None) -> None:
        """Keep a command's output as the evidence (and for the reads that look into a host's
        outputs: the bus ids of its listing). An output the transport cut (``cut_at``: it
        printed more than that many bytes) is kept by its head, saying so: a 64 MiB text parsed
        again by each such read took a minute (hostile round 16)."""
        if cut_at is not None:
            stdout = stdout[:KEPT_OF_CUT] + f"\n# sncheck: output cut here: the command printed more than " \
                f"{cut_at >> 20} MiB and was killed\n"
        kept = self.__dict__.setdefault("_raw_outputs", {})
        kept.setdefault(host, []).append({"tool": tool, "command": command, "stdout": stdout or "",
                                          "stderr": stderr or "", "exit_code": exit_code})

    def raw_outputs(self, host: str) -> list[dict]:
        """The raw outputs kept for ``host``, in the order they were read."""
        return list(self.__dict__.get("_raw_outputs", {}).get(host, []))

    def kernel_log(self, host: str) -> str | None:  # noqa: ARG002 -- the Backend interface: a backend with real hosts reads their log
        """Kernel log lines about the accelerators (XID, NVRM, AER), bounded; None when
        this backend has no kernel to ask (mock, local)."""
        return None

    def close(self) -> None:
        """Release processes and connections; safe to call twice."""
