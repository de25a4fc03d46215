"""``sncheck watch``: judge a running job from its own dumps."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from sncheck.watch.judge import Outcome

from sncheck.cli.errors import shown
from sncheck.cli.main import Failure, findings_summary, handle_errors
from sncheck.model import ExitCode
from sncheck.cli.numbers import finite
from sncheck.cli.paths import directory, input_file, input_ref
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.report import get_renderer


@click.command("watch")
@click.argument("directory", type=directory())
@click.option("--once", is_flag=True, help="Judge what is there now and exit (default: follow the directory).")
@click.option("--rank-map", type=input_file("rank map"),
              help="JSON list of {rank, host, local_rank} (default: DIRECTORY/ranks.json, else the Slurm environment).")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
              help="Inventory: names hosts (by name or address) and gives the tiers' design values.")
@click.option("--state-dir", type=directory(),
              help="Record findings and quarantines in this state store (sncheck status, history).")
@click.option("--out", type=directory(), help="Run directory for results.json and reports "
              "(default runs/<run-id>/).")
@click.option("--baseline", "baseline", type=input_file("results", dirs=True),
              help="A known-good job: its dump directory or its watch run (results.json): communicators' bus "
                   "bandwidth is judged against its (default: the tiers' design values).")
@click.option("--rules", "rules_ref", default="default", show_default=True, type=input_ref("yaml"), help="Rules file or shipped name.")
@click.option("--gate", type=click.Choice(["critical", "warning"]), default="warning", show_default=True)
@click.option("--confirm-playbook", default="nightly-stress", show_default=True, type=input_ref("yaml"),
              help="The playbook each finding's confirmation command runs (sncheck run PLAYBOOK --targets CARD): "
                   "a shipped name or a playbook file.")
@click.option("--interval", type=finite(0.1, 3600), default=5.0, show_default=True,
              help="Following: seconds between looks at the directory.")
@click.option("--format", "formats", default="html", show_default=True,
              help="Comma-separated extra outputs: html, junit, prometheus.")
@click.option("-q", "--quiet", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="Print results.json to stdout.")
@handle_errors
def watch_cmd(directory, once, rank_map, inventory_path, state_dir, out, baseline, rules_ref, gate, confirm_playbook,
              interval, formats, quiet, as_json) -> None:
    """Name the straggler, the hung rank and the desynchronised one from a job's own
    signals: PyTorch Flight Recorder dumps (JSON or pickle), NCCL RAS status (text or
    JSON), NCCL Inspector and nccl-tests JSON, all in DIRECTORY.

    \b
    Examples:
      sncheck watch /shared/watch/job42 --once --rank-map /shared/watch/job42/ranks.json
      sncheck watch /shared/watch/job42 --state-dir /var/lib/sncheck     # follow until SIGTERM

    Findings quarantine (with --state-dir) and never isolate: each carries the scoped
    confirmation to run between jobs (sncheck run PLAYBOOK --targets CARD).
    Exit codes (--once): 0 nothing at or above the gate, 1 findings, 2 bad input.
    """
    from sncheck.health.rules import load_rules  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.watch.judge import WatchOptions, follow, judge  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    # The command each quarantine carries is run later by a person or a script: a playbook that
    # does not load ('nightly-strss', 'x; touch PWNED #') made every one of them a command that
    # fails, or runs something else (hostile round 20, H20-14).
    try:
        load_playbook(confirm_playbook)
    except ConfigError as e:
        raise ConfigError(f"--confirm-playbook: {e}") from e
    report_formats = tuple(f.strip() for f in formats.split(",") if f.strip())
    for fmt in report_formats:
        get_renderer(fmt)
    opts = WatchOptions(Path(directory), rank_map=rank_map,
                        inventory=load_inventory(inventory_path) if inventory_path else None,
                        rules=load_rules(rules_ref), out=Path(out) if out else None, gate=gate, state_dir=state_dir,
                        report_formats=report_formats, confirm_playbook=confirm_playbook, baseline=baseline,
                        progress=(lambda _: None) if quiet else (lambda m: click.echo(shown(f"sncheck: {m}"), err=True)))

    def show(outcome) -> None:
        if as_json:
            click.echo(json.dumps(outcome.results, indent=2, default=str))
        if not quiet:
            _summary(outcome)

    if once:
        outcome = judge(opts)
        show(outcome)
        sys.exit(outcome.exit_code)
    if not Path(directory).is_dir():
        raise Failure(f"{directory}: not a directory of dumps", ExitCode.BAD_INPUT)
    last = follow(opts, interval, show)
    sys.exit(last.exit_code if last else ExitCode.PASS)


def _summary(outcome: Outcome) -> None:
    record = outcome.record
    share = record.layers[0].summary.get("comm_share") if record.layers else None
    if share:
        bound, how = (("at least ", "time waiting for the last rank to arrive: the dumps record no completion times")
                      if share["lower_bound"] else ("", "the collectives' recorded durations"))
        ranks = ", ".join(f"{x['card']} {x['share']:.0%}" for x in share["ranks"])
        click.echo(shown(f"sncheck: communication share of the job: {bound}{share['job']:.1%} ({how}); by rank: "
                         f"{ranks}"), err=True)  # ranks named as the dumps name them
    findings_summary(record)
    click.echo(f"sncheck: watch verdict {record.verdict}: {len(record.findings)} findings; results in "
               f"{outcome.out_dir}/results.json", err=True)
