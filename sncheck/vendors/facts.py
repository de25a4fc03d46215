"""Host facts, the vendor-neutral engine: a fact command, and the evaluation of its outcome.

A :class:`FactCommand` names the tool, its argv, the parser (a pure ``text -> dict``)
and a check that turns the parsed dict into ``host_fact`` rows
(:func:`sncheck.rows.host_fact_row`). Which commands run on a host is the business of
its platform's vendor plug-in (:mod:`sncheck.vendors.registry`): NVIDIA's live in
:mod:`sncheck.vendors.nvidia.checks`, AMD's and Ascend's in their packages.

:func:`evaluate` does the whole step for one command's outcome (exit code, output,
timeout) without any SSH, so every rule is testable on captured output:

* exit 127 (the shell's "command not found") -> one ``missing_tool`` row per fact;
* a timeout -> ``timeout`` rows that name the command;
* output no parser can read -> ``parse_failed`` rows (``error`` when the tool also
  exited non-zero) that name the tool;
* otherwise the check's rows, ``ok`` False where the hardware is not as it should be.

:func:`run_with_retry` re-runs a command whose output says "not ready yet" (an NVL72
fabric registration "In Progress") until a bounded window ends; then the check judges
the last output, and its rows say how long it waited.

Every tool a platform lists is required: a host without it gives ``missing_tool``
rows, which the detectors report; a check that could not run never reads as a pass.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sncheck.errors import ParseError
from sncheck.rows import host_fact_row
from sncheck.vendors import crash, digits
from sncheck.vendors import listing as listings
from sncheck.vendors.delivery import unwrap

Check = Callable[[str, dict[str, Any], "Expect"], list[dict]]
Parser = Callable[[str], dict[str, Any]]

MISSING_EXIT = 127   # POSIX shells: command not found
_LISTED = 6  # how many offenders a message names before "..."


class NotRun(Exception):
    """Raised by a backend's ``run(cmd)`` for a command it could not run on the host (an
    srun step that lost it): the command's facts are ``not_run``, never a pass."""


@dataclass(frozen=True)
class Expect:
    """What the inventory (and its platform) says a host should have."""

    cards: int
    platform: Any = None               # sncheck.vendors.base.Platform, or None
    domain_hosts: int | None = None    # hosts of this host's supernode in the inventory


@dataclass(frozen=True)
class FactCommand:
    name: str
    tool: str
    argv: tuple[str, ...]
    parse: Parser
    check: Check
    facts: tuple[str, ...]
    # parsed -> a reason to run the command again (output says "not ready yet"), or None
    retry_while: Callable[[dict[str, Any]], str | None] | None = None
    # the parse view of its output (`sncheck parse VIEW`) and what one record of it is:
    # bound from the view whose parser ``parse`` is (hostjudge.bind), None where none lists records
    view: str | None = None
    listing: listings.Listing | None = None
    # the error counters its fact's value records, by the names a rule's ``counters`` gives
    # (sncheck.health.fabric judges their growth): the names rules are checked against
    counters: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return " ".join(self.argv)


def command(name: str, tool: str, argv: Sequence[str], parse: Parser, check: Check, *facts: str,
            retry_while: Callable[[dict[str, Any]], str | None] | None = None,
            counters: Sequence[str] = ()) -> FactCommand:
    return FactCommand(name, tool, tuple(argv), parse, check, facts, retry_while, counters=tuple(counters))


# --------------------------------------------------------------------------- helpers for checks

def fact_row(host: str, fact: str, value: Any, expected: Any, ok: bool, message: str, tool: str,
             cards: dict[int, str] | None = None, nics: dict[int, str] | None = None,
             links: dict[tuple[int, int], str] | None = None, ids: Sequence[Any] | None = None) -> dict:
    """A fact of ``host``. On a failed fact, ``cards`` (card index -> what is wrong
    there), ``nics`` (rail -> what) and ``links`` ((card index, card index) -> what, a
    scale-up link inside the host) say the tool named the devices at fault: the finding
    is then on those devices, one per device (:func:`sncheck.vendors.hostjudge.per_device`),
    not on the host. Give them only when every problem of the fact is on a device the
    tool identified; the host is named only for a host-wide cause. ``ids``: the devices the
    fact's listing read (UUIDs, serials, bus ids), which every later read must list too."""
    named = {str(i): text for i, text in sorted(cards.items())} if cards and not ok else None
    row = host_fact_row(host, fact, value, expected, ok, message=f"{host}: {message}", tool=tool, cards=named)
    if nics and not ok:
        row["nics"] = {str(r): text for r, text in sorted(nics.items())}
    if links and not ok:
        row["links"] = {f"{a}-{b}": text for (a, b), text in sorted(links.items())}
    if ids:
        row["ids"] = [str(i) for i in ids]
    return row


def device_ids(devices: Sequence[dict[str, Any]], *keys: str) -> list[str] | None:
    """Each listed device's first identity among ``keys`` (UUID, serial, bus id), or None
    when a device has none (then the listing proves no identity)."""
    out = []
    for d in devices:
        value = next((d.get(k) for k in keys if d.get(k) not in (None, "", "N/A")), None)
        if value is None:
            return None
        out.append(str(value))
    return out or None


def on_cards(problems: Sequence[tuple[int | None, str]], what: str) -> dict[int, str] | None:
    """card index -> "what: its problems", when every problem is on an identified card
    (index not None); else None: the problems stay the host's."""
    out: dict[int, list[str]] = {}
    for i, text in problems:
        if i is None:
            return None
        out.setdefault(i, []).append(text)
    return {i: f"{what}: {listed(texts)}" for i, texts in out.items()} or None


def listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f", ... ({len(items)} in all)" if len(items) > _LISTED else "")


# --------------------------------------------------------------------------- evaluation

def failure_rows(host: str, cmd: FactCommand, status: str, message: str) -> list[dict]:
    """One row per fact of ``cmd`` that could not be checked (ok False, never a pass)."""
    return [host_fact_row(host, fact, None, None, False, status=status,
                          message=f"{host}: {message}: cannot check {fact}", tool=cmd.tool)
            for fact in cmd.facts]


def switched_off(cmd: FactCommand, checks: dict[str, bool]) -> bool:
    """True when the inventory's ``checks:`` says the cluster does not have this tool."""
    return checks.get(cmd.tool, True) is False


def skipped_rows(host: str, cmd: FactCommand) -> list[dict]:
    """One ``skipped`` row per fact of a check the inventory switched off: recorded and
    shown, never a finding (no rule reads a skipped fact)."""
    return [host_fact_row(host, fact, None, None, True, status="skipped",
                          message=f"{host}: {fact} not checked: skipped, the inventory says this cluster has "
                                  f"no {cmd.tool} (checks: {{{cmd.tool}: false}})", tool=cmd.tool)
            for fact in cmd.facts]


def evaluate(host: str, cmd: FactCommand, expect: Expect, *, exit_code: int | None, stdout: str,
             stderr: str = "", timed_out: bool = False, duration: float | None = None) -> list[dict]:
    """Rows for one command's outcome on one host."""
    return outcome(host, cmd, expect, exit_code=exit_code, stdout=stdout, stderr=stderr,
                   timed_out=timed_out, duration=duration)[1]


def outcome(host: str, cmd: FactCommand, expect: Expect, *, exit_code: int | None, stdout: str,
            stderr: str = "", timed_out: bool = False, duration: float | None = None,
            cut_at: int | None = None) -> tuple[dict[str, Any] | None, list[dict]]:
    """(parsed output or None, rows) for one command's outcome on one host. ``cut_at``: the
    command printed more than the transport keeps (its bound in bytes) and was killed."""
    if timed_out:
        took = f" after {duration:.1f}s" if duration is not None else ""
        return None, failure_rows(host, cmd, "timeout", f"`{cmd.display}` timed out{took} and was killed")
    if cut_at is not None:
        return None, failure_rows(host, cmd, "error", f"`{cmd.display}` printed more than {cut_at >> 20} MiB and "
                                                      "was killed there: no tool's listing is that long, its output "
                                                      "is not read")
    if exit_code == MISSING_EXIT or _not_found(stderr, cmd.argv[0]):
        return None, failure_rows(host, cmd, "missing_tool",
                                  f"{cmd.tool} not found on the PATH (exit {exit_code})")
    text = unwrap(stdout)
    try:
        parsed = crash.read(cmd.parse, text)  # as `sncheck parse` reads it: one front, one judgement
    except ParseError as e:
        if exit_code not in (0, None):
            return None, failure_rows(host, cmd, "error",
                                      f"`{cmd.display}` failed with exit {exit_code}: {_tail(stderr or stdout)}")
        at = digits.misread(cmd.parse, text, digits.refused(e))  # (digits.py)
        why = f"line {at[0]}: {digits.refusal(at[1])}" if at else e.message
        return None, failure_rows(host, cmd, "parse_failed", f"cannot parse {cmd.tool} output ({why})")
    # (digits.py: a number no tool prints), against the reading as the view gave it, before the exit status's
    # errors join it (a re-reading never holds them: every such host's first foreign digit was blamed)
    misread = digits.misread(cmd.parse, text, parsed)
    if exit_code is None:
        parsed.setdefault("errors", []).append("the command ended without an exit status")
    elif exit_code != 0 and not parsed.get("errors"):
        # Clean-looking output from a command that says it failed: do not trust it.
        parsed.setdefault("errors", []).append(f"exit {exit_code}: {_tail(stderr) or 'no error text'}")
    rows = cmd.check(host, parsed, expect)
    wrong = listing_problems(cmd, text, parsed, expect)
    if misread:
        wrong = [*wrong, f"line {misread[0]}: {digits.refusal(misread[1])}"]
    return parsed, unjudged(host, cmd, rows, wrong) if wrong else rows


def listing_problems(cmd: FactCommand, text: str, parsed: dict[str, Any], expect: Expect) -> list[str]:
    """What shows the listing ``cmd`` read is not the host's whole listing: cut mid-line or
    after a partial record, a device listed twice, a matrix without a row, or (a listing of
    the host's cards, ``Listing.cards``) another number of records than the inventory's cards."""
    if cmd.view is None:
        return []
    left_out = listings.left_out(cmd.view, text)
    if cmd.listing is None:
        return left_out
    found = left_out + ([cut] if (cut := listings.cut_mid_line(text, cmd.listing.closing)) else [])
    # an empty listing is the tool saying there is none (no NVLink): the view's check judges that
    cards = expect.cards if cmd.listing.cards and expect.cards > 0 and listings.count(cmd.listing, parsed) else None
    found += listings.check(cmd.view, parsed, cards, listings={cmd.view: cmd.listing})
    return [f + " (the inventory's cards)" if cards is not None and f.startswith("not judged: ") and
            f.endswith(f"expected {cards}") else f for f in found]


def unjudged(host: str, cmd: FactCommand, rows: list[dict], problems: Sequence[str]) -> list[dict]:
    """``rows`` of a listing that is not whole: what it shows wrong stays a finding; every
    fact it passed was judged on part of the host, so is ``parse_failed`` (never a pass);
    a fact with no row at all says so too."""
    why = f"{cmd.view} output is not whole: {listed(list(problems))}"
    out: list[dict] = []
    for row in rows:
        if row.get("ok"):
            row = {k: v for k, v in row.items() if k not in ("ids", "cards", "nics", "links")}
            out.append({**row, "ok": False, "status": "parse_failed",
                        "message": f"{host}: cannot check {row['fact']}: {why}"})
        else:
            out.append(row)
    seen = {r.get("fact") for r in rows}
    out += failure_rows(host, cmd, "parse_failed", why) if not rows else \
        [r for r in failure_rows(host, cmd, "parse_failed", why) if r["fact"] not in seen]
    return out


def run_with_retry(host: str, cmd: FactCommand, expect: Expect, run: Callable[[], Any], *,
                   window_s: float, interval_s: float = 5.0,
                   sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic) -> list[dict]:
    """Run ``cmd`` (``run()`` returns a transport Result) and evaluate it; while its
    ``retry_while`` gives a reason and ``window_s`` has not passed, wait and run again.
    The last output is judged; its rows say how long it waited and why."""
    started = clock()
    tries = 0
    while True:
        res = run()
        tries += 1
        parsed, rows = outcome(host, cmd, expect, exit_code=res.exit_code, stdout=res.stdout,
                               stderr=res.stderr, timed_out=res.timed_out, duration=res.duration,
                               cut_at=getattr(res, "cut_at", None))
        reason = cmd.retry_while(parsed) if (cmd.retry_while and parsed is not None) else None
        waited = clock() - started
        if reason is None or waited >= window_s:
            if reason is not None:
                for r in rows:
                    if not r["ok"]:
                        r["message"] += (f" (still {reason} after retrying for {waited:.0f}s, "
                                         f"{tries} reads, window {window_s:g}s)")
            return rows
        sleep(min(interval_s, max(0.0, window_s - waited)))


def _not_found(stderr: str, program: str) -> bool:
    return bool(re.search(rf"\b{re.escape(program)}: (?:command )?not found", stderr))


def _tail(text: str, lines: int = 2) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])


def check_host(host: str, expect: Expect, commands: Sequence[FactCommand], run: Callable[[FactCommand], Any],
               *, checks: dict[str, bool] | None = None, window_s: float = 0.0, interval_s: float = 5.0,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> Iterator[dict]:
    """Rows for every fact command of one host: the path the SSH and mock backends share.

    ``run(cmd)`` runs (or renders) one command and returns its outcome: an object with
    ``exit_code``, ``stdout``, ``stderr``, ``timed_out`` and ``duration`` (a transport
    ``Result``, or a simulated :class:`sncheck.vendors.sim.ToolOutput`). A command with a
    ``retry_while`` is read again for up to ``window_s`` (:func:`run_with_retry`). A tool
    the inventory's ``checks`` switch off is not run (``skipped`` rows). Once a tool is
    missing or hangs, its later commands are not run and say why.
    """
    skipped: dict[str, tuple[str, str]] = {}  # tool -> (status, why) after it went missing or hung
    for cmd in commands:
        if switched_off(cmd, checks or {}):
            yield from skipped_rows(host, cmd)
            continue
        if cmd.tool in skipped:
            status, why = skipped[cmd.tool]
            yield from failure_rows(host, cmd, status, f"`{cmd.display}` not run: {why}")
            continue
        try:
            rows = run_with_retry(host, cmd, expect, functools.partial(run, cmd),
                                  window_s=window_s if cmd.retry_while else 0.0, interval_s=interval_s,
                                  sleep=sleep, clock=clock)
        except NotRun as e:
            yield from failure_rows(host, cmd, "not_run", f"`{cmd.display}` did not run: {e}")
            continue
        status = rows[0]["status"] if rows else "ok"
        if status in ("missing_tool", "timeout"):
            what = "is missing" if status == "missing_tool" else f"timed out on `{cmd.display}`"
            skipped[cmd.tool] = (status, f"{cmd.tool} {what}")
        yield from rows
