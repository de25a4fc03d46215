"""A run's state store (``--state-dir``): what a :class:`sncheck.run.runner.Run` reads before
it measures and writes once it has decided.

Before: when each entity was last released (a repeat offender is isolated at once), the
earlier runs' card summaries (the drift op), and a baseline stored by name or ``last-pass``.
After the verdict: the isolation actions (recorded, then applied with ``--apply``; the
safety cap may block them), then the run's summaries for ``history``/``diff`` and the
report's trends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sncheck.actions.batch import DEFAULT_VIA, RunActions, apply_run_isolation, refuse_other_fleet
from sncheck.config.inventory import Inventory
from sncheck.errors import ConfigError
from sncheck.health.history import LAST_PASS, baseline_from_state, drift_history, trends
from sncheck.health.history import record as record_summaries
from sncheck.health.summaries import summarize
from sncheck.model import RunRecord
from sncheck.store.state import StateStore
from sncheck.store.statedir import has_store


@dataclass
class RunState:
    """The state store of one run: ``state_dir``, the isolation mechanisms and ``--apply``."""

    state_dir: str
    via: tuple[str, ...] = ()
    apply: bool = False
    _released: dict[str, datetime | None] = field(default_factory=dict, repr=False)

    def open(self, inventory: Inventory | None = None) -> None:
        """Read what the run needs before it starts: each entity's last release; a store of
        another fleet is refused before anything is measured."""
        with StateStore(Path(self.state_dir)) as st:  # repeat offenders: released within the window
            refuse_other_fleet(st, inventory)
            self._released = {e["entity"]: st.last_release(e["entity"]) for e in st.history()}

    def released_at(self, entity: str) -> datetime | None:
        return self._released.get(entity)

    def history(self, inventory: str, backend: str) -> dict | None:
        """Earlier runs' summaries of this inventory and backend (the drift op)."""
        return drift_history(self.state_dir, inventory, backend)

    def baseline(self, ref: str, inventory: str, backend: str) -> tuple[dict, dict] | None:
        """A baseline named ``ref`` from the store, as (data, info for results.json): ``last-pass``
        (the last passing run of this inventory and backend; ``{}`` with a note when there is
        none yet) or one stored by name. None where the store has no such baseline (``ref``
        is then a file, or unknown)."""
        if ref == LAST_PASS:
            try:
                data = baseline_from_state(self.state_dir, LAST_PASS, last=1, passed_only=True, pairs=True,
                                           inventory=inventory, backend=backend)
            except ConfigError:
                data = None  # no passing run yet: the run goes on, and says so
            return data or {}, {"ref": LAST_PASS, "runs": (data or {}).get("runs", []),
                                "note": None if data else "no passing run of this inventory and "
                                "backend that measured pair levels (p2p_bandwidth, p2p_latency) in the state store yet: "
                                "nothing to compare with"}
        if has_store(self.state_dir):  # (a state.db that is no regular file: the store refuses it, naming it)
            with StateStore(self.state_dir) as st:
                stored = st.load_baseline(ref)
            if stored is not None:
                return stored, {"ref": ref, "runs": stored.get("runs", []), "source": "state"}
        return None

    def annotate(self, run: RunRecord, rows: Any) -> dict | None:
        """Changes since the last run, for the report (the record's ``history``); ``rows``:
        the run's frames per kind."""
        current = {(s.kind, s.entity, s.metric): (s.value, s.spread, s.n) for s in summarize(run, rows)}
        return trends(self.state_dir, run, current=current)

    def act(self, run: RunRecord, inventory: Inventory, run_dir: Path) -> RunActions:
        """The isolation actions of a decided run, before any output is rendered, so that
        results.json, the report, JUnit and Prometheus all show what happened. The safety cap
        may block them (``blocked``: the verdict then fails the gate)."""
        return apply_run_isolation(run, inventory, self.state_dir, list(self.via) or list(DEFAULT_VIA),
                                   apply=self.apply, run_dir=run_dir, results_path=run_dir.absolute() / "results.json")

    def record(self, run: RunRecord, run_dir: Path) -> int:
        """Keep the run's summaries, with its final verdict (``sncheck history``/``diff``)."""
        return record_summaries(self.state_dir, run, run_dir)

    def record_verdict(self, run: RunRecord, run_dir: Path) -> None:
        """The run's verdict again, changed after :meth:`record` (its outputs failed); its
        summaries stay, kept under the failed verdict."""
        with StateStore(self.state_dir) as st:
            st.record_run(run, run_dir / "results.json")
