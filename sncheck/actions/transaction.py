"""Isolation as a transaction: read -> act -> record, one host at a time, under one lock.

Two ``sncheck isolate --apply`` on one state directory at once both read the store, both
rewrote hostfile.txt from what they had read, and one host was left in it though the
store listed it isolated. A SIGTERM between a drain and its record left a node drained
with sncheck's reason that no command knew of. So, for every ``--apply``:

* :class:`StateLock`: an exclusive ``flock`` on ``<state dir>/.sncheck-isolation.lock``,
  held from the first read of the store to the last record (the kernel releases it when
  the process ends, however it ends). A second command waits for it.
* Each request is a transaction (:func:`apply_each`): a journal row in the state store
  (``begun``) and an audit line (``phase: begin``) before its first command; its actions;
  its decision recorded in the same SQLite transaction that marks the row ``recorded``;
  the audit's outcome lines (``phase: end``); the row deleted. File actions render the
  store's state plus this request, so the files and the store agree after each host.
* :class:`DeferredSignals`: SIGTERM, SIGINT and SIGHUP during the batch are held until the
  host in progress is done (acted, recorded, audited); the rest of the batch is not begun,
  and the command ends with exit 3 saying so.
* :func:`reconcile`: at the start of the next command (under the lock), a journal row left
  behind (SIGKILL, a power cut) is looked at where its actions act (``observe``): if any of
  it took effect, it is completed (its actions run again, all idempotent, and recorded);
  if none did, it is rolled back (nothing recorded); either way the audit says so. Then
  the launcher files are rewritten wherever they disagree with the store (a hostfile that
  offers an isolated host, or leaves out one in service).
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from sncheck.actions.base import Action, ActionContext, ActionRequest, AuditLog, CommandRunner, Isolated, perform
from sncheck.config.fileio import check_output, read_input, write_atomic
from sncheck.config.inventory import Inventory
from sncheck.errors import ConfigError, HarnessError
from sncheck.model import Action as StepAction, EntityKind, IsolationStep
from sncheck.store.state import StateStore
from sncheck.store.statedir import refuse_foreign_dir

LOCK_NAME = ".sncheck-isolation.lock"
LOCK_WAIT_S = 600.0  # a second command waits this long for the first, then gives up (exit 3)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class StateLock:
    """An exclusive ``flock`` on the state directory's lock file, never through a link."""

    def __init__(self, state_dir: str | os.PathLike[str], wait: float = LOCK_WAIT_S,
                 signals: DeferredSignals | None = None) -> None:
        self.path = Path(state_dir) / LOCK_NAME
        self.wait = wait
        self.signals = signals  # a signal while waiting: give up, nothing was done
        self.fd: int | None = None

    def __enter__(self) -> StateLock:
        refuse_foreign_dir(self.path.parent)  # another program's directory: before the lock file is made
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as e:
            what = "is a symlink" if e.errno == errno.ELOOP else f"cannot be opened: {e.strerror or e}"
            raise ConfigError(f"the state directory's lock file {what}", str(self.path)) from e
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ConfigError("the state directory's lock file is not a regular file", str(self.path))
        deadline = time.monotonic() + self.wait
        delay = 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if self.signals is not None and self.signals.fired:
                    os.close(fd)
                    raise HarnessError(f"interrupted ({self.signals.fired}) while waiting for {self.path} "
                                       "(another sncheck command holds it): nothing was done") from None
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise HarnessError(f"another sncheck command has held {self.path} for {self.wait:.0f} s; "
                                       "nothing was done (try again when it has finished)") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
        self.fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock
            self.fd = None


class DeferredSignals:
    """SIGTERM, SIGINT and SIGHUP noted (the first one's name), not acted on, while held;
    the previous handlers come back on exit. Outside the main thread it does nothing."""

    def __init__(self) -> None:
        self.fired: str | None = None
        self._previous: dict[int, Any] = {}

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        if self.fired is None:
            self.fired = signal.Signals(signum).name

    def __enter__(self) -> DeferredSignals:
        for sig in SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._note)
            except ValueError:  # not the main thread: an embedding caller keeps its own handling
                break
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def now_stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_outputs(actions: Sequence[Action], out_dirs: Sequence[Path],
                  audit: AuditLog | None = None) -> None:
    """Before anything acts: every file a file action would write, and the audit log, must
    be writable as a regular file (a FIFO planted as hostfile.txt or audit.jsonl is refused
    here, exit 2, not after a host was drained)."""
    for action in actions:
        for d in out_dirs:
            for name in getattr(action, "renders", {}):
                check_output(Path(d) / name)
    for path in audit.paths if audit is not None else ():
        check_output(path)


def _request(req: ActionRequest, actions: Sequence[Action], extra: dict[str, Any]) -> dict[str, Any]:
    return {"entity": req.entity, "kind": req.kind, "action": req.action, "reason": req.reason, "rule": req.rule,
            "evidence": dict(req.evidence), "run_id": req.run_id, "via": [a.name for a in actions], **extra}


def _from_request(d: dict[str, Any]) -> ActionRequest:
    return ActionRequest(d["entity"], d["kind"], d["action"], d.get("reason") or "", d.get("rule"),
                         d.get("evidence") or {}, d.get("run_id"))


IsolatedAfter = Callable[[ActionRequest], dict[str, Isolated]]


def apply_each(requests: Sequence[ActionRequest], *, store: StateStore, actions: Sequence[Action],
               isolated_after: IsolatedAfter, inventory: Inventory | None, runner: CommandRunner,
               audit: AuditLog, out_dirs: Sequence[Path], run_id: str, extra: dict[str, Any],
               signals: DeferredSignals,
               now: datetime | None = None) -> tuple[list[dict[str, Any]], dict[str, bool], str | None]:
    """Each request as a transaction (see the module); returns (audit records, entity ->
    applied, None), or with a signal, stopped after the host in progress, what was done and
    what was not begun as the third."""
    records: list[dict[str, Any]] = []
    applied: dict[str, bool] = {}
    for k, req in enumerate(requests):
        if signals.fired:
            left = ", ".join(r.entity for r in requests[k:])
            return records, applied, (f"interrupted ({signals.fired}) after {k} of {len(requests)}: "
                                      f"{', '.join(r.entity for r in requests[:k]) or 'none'} done and recorded; "
                                      f"not begun: {left}")
        txn = uuid.uuid4().hex
        request = _request(req, actions, extra)
        store.begin_txn(txn, request)
        # the same keys as an outcome line, so a reader of audit.jsonl never meets a line without them
        audit.append({"ts": now_stamp(), "phase": "begin", "txn": txn, **request, "outcome": "begun", "argv": [],
                      "files": [], "applied": True, "message": f"begun: {req.action} {req.entity} via "
                      f"{', '.join(a.name for a in actions)}", "plan": [], "summary": ""})
        ctx = ActionContext(isolated_after(req), inventory, tuple(out_dirs))
        done = [perform(a, req, ctx, runner, True, None, now) for a in actions]
        step, applied[req.entity] = _outcome_step(req, done, req.reason)
        store.commit_txn(txn, run_id, step, req.evidence, now)
        for r in done:
            r.update(txn=txn, phase="end", **extra)
            audit.append(r)
        records += done
        store.end_txn(txn)
    return records, applied, None


def reconcile(store: StateStore, *, actions_by_name: dict[str, Action], isolated_now: Callable[[], dict[str, Isolated]],
              inventory: Inventory | None, runner: CommandRunner | None, audit: AuditLog,
              out_dirs: Sequence[Path], file_actions: Sequence[Action]) -> list[str]:
    """Complete or roll back what an interruption left half done, then bring the launcher
    files in line with the store. Returns one line per thing reconciled (for stderr). With
    no runner (a dry run) nothing is changed: what is pending is only reported."""
    notes: list[str] = []
    for t in store.open_txns():
        req, when = _from_request(t["request"]), t["ts"][:19] + "Z"
        what = f"{req.action} of {req.entity} (begun {when}, transaction {t['txn'][:8]})"
        names = [n for n in t["request"].get("via", []) if n in actions_by_name]
        if t["state"] == "recorded":  # recorded, the audit's outcome lines missing
            audit.append({"ts": now_stamp(), "phase": "end", "txn": t["txn"], "outcome": "reconciled",
                          **t["request"], "message": "recorded before an interruption; its outcome lines were lost"})
            store.end_txn(t["txn"])
            notes.append(f"an interrupted {what} had been recorded; the audit is completed")
            continue
        if runner is None:
            notes.append(f"an interrupted {what} is pending; the next --apply completes or rolls it back")
            continue
        ctx = ActionContext(isolated_now(), inventory, tuple(out_dirs))
        seen = {n: actions_by_name[n].observe(req, ctx, runner) for n in names}
        if any(v is True for v in seen.values()):
            after = isolated_now()
            if req.action == "isolate":
                after[req.entity] = Isolated(req.entity, req.kind, req.label)
            else:
                after.pop(req.entity, None)
            ctx = ActionContext(after, inventory, tuple(out_dirs))
            done = [perform(actions_by_name[n], req, ctx, runner, True, None) for n in names]
            ok = all(r["outcome"] != "failed" for r in done)
            store.commit_txn(t["txn"], req.run_id or t["txn"],
                             _outcome_step(req, done, f"{req.reason} (completed after an interruption)")[0], req.evidence)
            for r in done:
                r.update(txn=t["txn"], phase="end", reconciled="completed")
                audit.append(r)
            store.end_txn(t["txn"])
            took = ", ".join(n for n, v in seen.items() if v)
            notes.append(f"an interrupted {what} had taken effect ({took}): completed and recorded"
                         + ("" if ok else "; an action failed, see the audit"))
        elif any(v is None and actions_by_name[n].external for n, v in seen.items()):
            unknown = ", ".join(n for n, v in seen.items() if v is None)
            notes.append(f"an interrupted {what}: {unknown} could not say whether it took effect; left pending")
        else:
            audit.append({"ts": now_stamp(), "phase": "end", "txn": t["txn"], "outcome": "rolled back", **t["request"],
                          "message": "interrupted before any of it took effect; nothing recorded"})
            store.end_txn(t["txn"])
            notes.append(f"an interrupted {what} had not taken effect: rolled back, nothing recorded")
    if runner is not None and inventory is not None:
        notes += resync_files(file_actions, inventory, isolated_now(), out_dirs)
    return notes


def resync_files(file_actions: Sequence[Action], inventory: Inventory, isolated: dict[str, Isolated],
                 out_dirs: Sequence[Path]) -> list[str]:
    """Rewrite each launcher file sncheck keeps in ``out_dirs`` whose text is not what the
    store's isolations render (a hostfile written by a command that never recorded, or
    left behind by one whose record was lost); files not there are left for the actions."""
    notes = []
    for action in file_actions:
        render_all = getattr(action, "render_all", None)
        if render_all is None:
            continue
        for name, text in render_all(inventory, isolated).items():
            for d in out_dirs:
                path = Path(d) / name
                if not path.exists():
                    continue
                try:
                    current: str | None = read_input(path, "yaml", "isolation file").decode("utf-8", "replace")
                except ConfigError:
                    current = None  # not a regular file: write_atomic refuses it, naming it
                if current != text:
                    write_atomic(path, text)
                    notes.append(f"{path} did not match the state store's isolations: rewritten from it")
    return notes


def _outcome_step(req: ActionRequest, done: list[dict[str, Any]], reason: str) -> tuple[IsolationStep, bool]:
    """The step a request's action outcomes record, and whether it was applied. Taken out (or
    put back) wherever one action did: a drain beside a failed cordon was 'not applied', so the
    cap left it out and the hostfile offered it again (hostile round 9); its reason says the
    part that failed. A release is whole or none: one an action kept out (Slurm's resume
    refused) leaves the entity isolated, counted by the cap and shown (review3). The same for
    a request done at once and one completed after an interruption."""
    failed = ", ".join(r["via"] for r in done if r["outcome"] == "failed")
    applied = any(r["outcome"] == "ok" for r in done)
    if req.action == "release" and failed:
        return IsolationStep(req.entity, EntityKind(req.kind), StepAction.ISOLATE,
                             f"release failed in part ({failed}): still isolated: {reason}", True, req.rule), False
    return _step(req, f"{reason} (applied in part: {failed} failed)" if failed and applied else reason, applied), applied


def _step(req: ActionRequest, reason: str, applied: bool) -> IsolationStep:
    """The request as the isolation step the state store keeps."""
    return IsolationStep(req.entity, EntityKind(req.kind), StepAction(req.action), reason, applied, req.rule)
