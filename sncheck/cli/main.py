"""The sncheck command line. Click only: parse, build, call the core, render, exit code."""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import click

from sncheck import __version__
from sncheck.errors import ConfigError, ParseError
from sncheck.backends import BACKENDS
from sncheck.config.inventory import DIST_BACKENDS, MAX_CARDS, MAX_FORKS, MAX_LOCAL_CARDS, Inventory, local_inventory
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.config.playbook import INT_BOUNDS, Playbook, check_duration, single_layer
from sncheck.cli.numbers import finite, whole
from sncheck.cli.paths import directory, input_file, input_ref, output_file
from sncheck.cli.errors import Failure, closed_stdout, handle_errors, shown, stop_mapped, stopped
from sncheck.cli.parse_counters import failing, judge as judge_counters, refuse_itself, views as counter_views
from sncheck.model import ExitCode, RunRecord
from sncheck.report import outputs
from sncheck.run.safety import crash_report, install_signal_handlers, restore_signal_handlers, set_run_dir
import importlib
from sncheck.store.files import route_log
from sncheck.vendors.parsers import (failures as parse_failures, get_parser, judged_views, known_collective,
                                      known_collectives, parse_text)
from sncheck.vendors.registry import platform
from sncheck.vendors.delivery import decode
from sncheck.vendors.withheld import withheld
from sncheck.config.fileio import read_input
from sncheck.config.playbook import LAYERS
from sncheck.cli.repeats import refuse_repeats, refuse_undecodable

__all__ = ["Failure", "handle_errors", "main"]  # the commands in other modules import them from here


class LazyGroup(click.Group):
    """A group whose commands from other modules load when they are asked for.

    ``lazy`` maps a command name to ``"module:attribute"``. ``sncheck inventory check``
    then does not import pandas, pyarrow, paramiko and pydantic (about 1.3 s of the 2 s
    it took), which only the commands that use them need (Click's documented pattern
    for lazily loaded subcommands)."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attr = self.lazy[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


class _StopContext(click.Context):
    """The top-level context: a stop while it closes (its resources, after the command) is one
    line and exit 3, never Click's 'Aborted!' (exit 1)."""

    def __exit__(self, *exc):
        with stop_mapped():
            return super().__exit__(*exc)


class SncheckGroup(LazyGroup):
    """The last-resort handler: an unforeseen exception is one line and exit 3.

    The traceback goes to a crash file (``<run dir>/crash.log``, or a temp file before
    a run directory exists), or to stderr with ``sncheck -v``. A stop (SIGTERM, SIGINT)
    while Click reads the command line or closes is one line and exit 3, as in a command.
    """

    context_class = _StopContext

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Click's own usage errors (a bad option value, a missing argument) as one line, exit 2.

        Click prints a usage block of three lines for them; unattended runs (cron, Slurm,
        CI) log one line per failure, so the message and a pointer to ``--help`` suffice.
        """
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            e.show()  # a bare group: its help is what the user asked for
            sys.exit(e.exit_code)
        except click.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            click.echo(f"Error: {_one_line(e.format_message())}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort as e:
            if (stop := stopped(e)) is not None:  # a stop Click caught outside parse, invoke and close (below)
                stop.show()
                sys.exit(stop.exit_code)
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def make_context(self, info_name, args, parent=None, **extra):
        """The top level's options parsed; a stop (SIGTERM, SIGINT) meanwhile is one line, exit 3.
        Click turns it into 'Aborted!', exit 1 (round 15 review), where the contract says a harness
        stopped by a signal exits 3."""
        with stop_mapped(" while starting; nothing was run"):
            return super().make_context(info_name, args, parent, **extra)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        refuse_undecodable(args)  # a byte that is not UTF-8: no record or report can hold it
        name, cmd, rest = super().resolve_command(ctx, args)
        refuse_repeats(ctx, cmd, rest)  # '--out a --out b': Click would keep b silently
        sub = [rest[0]] if isinstance(cmd, click.Group) and rest and not rest[0].startswith("-") else []
        ctx.meta["sncheck.command"] = " ".join([name or "", *sub]).strip()  # for the crash line
        return name, cmd, rest

    def invoke(self, ctx: click.Context):
        set_run_dir(None)  # a crash before this command opens a run directory goes to a temp file
        try:
            with stop_mapped():  # while its options are parsed or its module loads (in it: handle_errors's)
                return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except BrokenPipeError:  # a command wrapped in handle_errors never gets here; one that is not
            closed_stdout()
        except Exception as e:  # the boundary of the program: nothing above us to handle it
            command = ctx.meta.get("sncheck.command") or "sncheck"
            if ctx.obj and ctx.obj.get("verbose"):
                raise
            crash = crash_report(command, e)
            where = f"; traceback in {crash}" if crash else ""
            raise Failure(f"internal error in 'sncheck {command}': {type(e).__name__}: "
                          f"{_one_line(str(e))}{where} (please report it)", ExitCode.HARNESS) from e


def _one_line(text: str, limit: int = 200) -> str:
    text = shown(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit] + "..."


def run_options(fn):
    """Options shared by ``run`` and the one-layer commands."""
    decorators = [
        click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
                     help="Inventory YAML. Default: this machine (the embedded local inventory)."),
        click.option("--backend", type=click.Choice(BACKENDS),
                     help="Override the inventory's backend (default: local)."),
        click.option("--faults", type=input_file("yaml"),
                     help="Fault plan YAML to act out (mock; local: card faults; ssh: only with "
                          "--act-faults-on-real-hosts)."),
        click.option("--act-faults-on-real-hosts", is_flag=True,
                     help="SSH: act the --faults plan out on the inventory's hosts (slows, corrupts "
                          "and delays their probes; tool faults reach the tools as SNCHECK_FAULTS). "
                          "For test clusters only."),
        click.option("--seed", type=whole(0, 2**32 - 1), default=0, show_default=True,
                     help="Seed for a reproducible mock run (0 to 2^32-1)."),
        click.option("--out", type=directory(), help="Run directory. Default: runs/<run-id>/."),
        click.option("--force", is_flag=True,
                     help="Reuse an --out that holds an earlier run: it is emptied first (default: refused)."),
        click.option("--gate", type=click.Choice(["critical", "warning"]),
                     help="Fail on findings at or above this severity (default: the playbook's)."),
        click.option("--cards", type=whole(2, MAX_LOCAL_CARDS),
                     help=f"Worker ranks for the embedded local inventory (default 4, at most {MAX_LOCAL_CARDS})."),
        click.option("--dist-backend", type=click.Choice(DIST_BACKENDS),
                     help="torch.distributed backend for the local backend (default: nccl with CUDA, else gloo)."),
        click.option("--duration", type=finite(),
                     help="Stress soak: repeat the sweep for this many seconds (finite, above 0, at most 7 days)."),
        click.option("--format", "formats", default="html", show_default=True,
                     help="Comma-separated extra outputs: html, junit, prometheus."),
        click.option("--templates", "template_dirs", multiple=True, type=directory(), callback=_templates_checked,
                     help="Directory of Jinja templates that override the built-in report templates."),
        click.option("--rules", "rules_ref", type=input_ref("yaml"),
                     help="Detection rules: a YAML file or a shipped name (default: 'default', or "
                          "'local-cpu' for the local backend on CPU)."),
        click.option("--baseline", "baseline_ref", type=input_ref("json"), help="Baseline JSON to compare against (sncheck baseline make)."),
        click.option("--forks", type=whole(1, MAX_FORKS), help="SSH: hosts worked on at once (default 32, or the inventory's ssh.forks)."),
        click.option("--ssh-config", type=input_file("ssh config"), help="SSH: config file instead of ~/.ssh/config."),
        click.option("--known-hosts", type=input_file("known_hosts"), help="SSH: known_hosts file (default ~/.ssh/known_hosts)."),
        click.option("--accept-new-host-keys", is_flag=True,
                     help="SSH: record keys of hosts never seen before (a changed key is always refused)."),
        click.option("--state-dir", type=directory(),
                     help="Record the run and its isolation steps in this state store (SQLite) "
                          "and apply actions from it; repeat offenders are isolated at once."),
        click.option("--via", multiple=True, type=click.Choice(["hostfile", "cuda_visible_devices", "slurm", "kubernetes"]),
                     help="With --state-dir: isolation actions (default hostfile and cuda_visible_devices)."),
        click.option("--apply", is_flag=True, help="With --state-dir: execute the actions (default: dry run)."),
        click.option("--targets", multiple=True, metavar="HOSTLIST|CARD",
                     help="Scoped re-validation: only the pairs touching these cards or hosts (hostlists "
                          "allowed; repeat or comma-separate), their stress groups, golden on their hosts."),
        click.option("-q", "--quiet", is_flag=True, help="No progress on stderr."),
        click.option("--json", "as_json", is_flag=True, help="Print results.json to stdout."),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def _inventory(path: str | None, cards: int | None) -> Inventory:
    if path:
        if cards is not None:
            raise ConfigError("--cards applies to the embedded local inventory; drop it or -i")
        return load_inventory(path)
    return local_inventory(cards if cards is not None else 4)


def _execute(*args, **kwargs) -> None:
    """A run, with SIGTERM and SIGHUP handled like Ctrl-C while it lasts."""
    previous = install_signal_handlers()
    try:
        _execute_run(*args, **kwargs)
    finally:
        restore_signal_handlers(previous)


def _templates_checked(ctx: click.Context, param: click.Parameter, dirs: tuple[str, ...]) -> tuple[str, ...]:  # noqa: ARG001 -- click's callback signature
    """A user's templates are compiled and their includes followed before anything runs
    (sncheck.report.usertemplates): a broken one is refused at its line, not after the run."""
    if dirs:
        from sncheck.report.html import make_environment  # noqa: PLC0415 -- jinja2: loaded at start only when templates are given

        try:
            make_environment(dirs)
        except ConfigError as e:
            raise click.BadParameter(str(e)) from e
    return dirs


def _execute_run(playbook: Playbook, inventory_path, cards, formats, template_dirs, rules_ref, baseline_ref,
                 forks, ssh_config, known_hosts, accept_new_host_keys, act_faults_on_real_hosts, targets,
                 quiet, as_json, **options) -> None:
    """Build the run from the command line and call it; ``options``: :meth:`Run.build`'s."""
    from sncheck.run.runner import Run  # noqa: PLC0415 -- pandas and the backends: only when a run starts (the CLI starts without them)

    if options.get("duration") is not None:
        options["duration"] = check_duration(options["duration"])
    ssh_options = {"forks": forks, "ssh_config": ssh_config, "known_hosts": known_hosts,
                   "accept_new_host_keys": accept_new_host_keys or None,
                   "act_faults_on_real_hosts": act_faults_on_real_hosts or None}
    run = Run.build(playbook, _inventory(inventory_path, cards), progress=_progress_printer(quiet),
                    backend_options={k: v for k, v in ssh_options.items() if v is not None},
                    reports=outputs(f.strip() for f in formats.split(",") if f.strip()),
                    template_dirs=tuple(template_dirs), rules=rules_ref, baseline=baseline_ref,
                    targets=tuple(targets), **options)
    result = run.execute()
    record = result.record
    if record.isolation_blocked:
        click.echo(f"sncheck: isolation blocked: {record.isolation_blocked}", err=True)
    if as_json:
        click.echo(json.dumps(result.results, indent=2, default=str))
    if not quiet:
        _summary(record, result.out_dir)
    sys.exit(result.exit_code)


def _progress_printer(quiet: bool):
    """Layer milestones always; per-round chatter at most every two seconds."""
    last = [0.0]

    def progress(msg: str) -> None:
        if quiet:
            return
        now = time.monotonic()
        if msg.split(":", 1)[0] in MILESTONES or now - last[0] >= 2.0:
            last[0] = now
            click.echo(f"sncheck: {shown(msg)}", err=True)

    return progress


MILESTONES = ("connectivity", "stress", "golden", "calibrating design values on this machine")


def _summary(record: RunRecord, out_dir: Path) -> None:
    """The run on stderr: each layer's verdict, each finding, the verdict."""
    for layer in record.layers:
        extra = f" (cut short: {layer.summary['cut_short']})" if "cut_short" in layer.summary else ""
        click.echo(f"  {layer.name:<13} {record.layer_verdict(layer)}{extra}", err=True)
    findings_summary(record)
    click.echo(f"sncheck: verdict {record.verdict}: {len(record.findings)} findings; "
               f"results in {out_dir}/results.json, report in {out_dir}/report.html", err=True)


def findings_summary(record: RunRecord) -> None:
    """Each finding on stderr, with the scoped run that confirms a watch quarantine."""
    for f in record.findings:
        click.echo(shown(f"  [{f.severity}] {f.entity_kind} {f.entity}: {f.rule}: {f.message}"), err=True)
        if f.evidence.get("confirm_with"):
            click.echo(shown(f"      confirm in the next gap: {f.evidence['confirm_with']}"), err=True)


@click.group(cls=SncheckGroup, context_settings={"help_option_names": ["-h", "--help"]}, lazy={
    **{name: f"sncheck.cli.ops:{attr}" for name, attr in (
        ("status", "status"), ("isolate", "isolate"), ("release", "release"), ("capacity", "capacity_cmd"))},
    "history": "sncheck.cli.history:history_cmd", "diff": "sncheck.cli.history:diff_cmd",
    "node-check": "sncheck.cli.slurm:node_check_cmd", "plan": "sncheck.cli.plan:plan_cmd",
    "watch": "sncheck.cli.watch:watch_cmd", "fabric": "sncheck.cli.fabric:fabric_group"})
@click.version_option(__version__, prog_name="sncheck")
@click.option("-v", "--verbose", is_flag=True, help="Show the traceback of an internal error on stderr.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Validate an AI supernode cluster: connectivity, stress, golden model.

    \b
    Examples:
      sncheck run pre-upgrade-gate                      # this machine, local backend
      sncheck run playbooks/pre-upgrade-gate.yaml -i fixtures/inventories/demo-2sn.yaml \\
          --backend mock --faults fixtures/faults/demo-mixed.yaml --seed 1 --out runs/demo
      sncheck connectivity -i cluster.yaml --backend ssh
      sncheck parse nccl-tests all_reduce.log --json
      sncheck inventory check cluster.yaml
    """

    route_log("paramiko")  # paramiko's tracebacks never reach the terminal (a run logs them to ssh.log)
    ctx.obj = {"verbose": verbose}


@main.command()
@click.argument("playbook", type=input_ref("yaml"))
@run_options
@handle_errors
def run(playbook: str, **kwargs) -> None:
    """Run a PLAYBOOK (a path, or a shipped name: post-delivery, nightly-stress, pre-upgrade-gate).

    Exit codes: 0 gate passed, 1 gate failed, 2 bad input, 3 the harness could not run,
    4 inconclusive (a retest on a busy machine could not tell; nothing isolated).
    """
    _execute(load_playbook(playbook), **kwargs)


def _layer_command(name: str, doc: str):
    @run_options
    @handle_errors
    def command(**kwargs) -> None:
        _execute(single_layer(name, gate="warning" if name == "connectivity" else "critical"), **kwargs)

    command.__doc__ = doc
    return command


main.command("connectivity")(_layer_command(
    "connectivity", "Layer 1: host facts and every card pair at design bandwidth and latency."))
main.command("stress")(_layer_command(
    "stress", "Layer 2: all-reduce and all-to-all over a message-size sweep."))


@main.group("golden", invoke_without_command=True)
@run_options
@click.pass_context
@handle_errors
def golden_cmd(ctx: click.Context, **kwargs) -> None:
    """Layer 3: train the golden model and compare its loss curve with the golden band.

    `sncheck golden record --out fixtures/golden/NAME.json` records a new golden curve.
    """
    if ctx.invoked_subcommand is None:
        _execute(single_layer("golden"), **kwargs)


@golden_cmd.command("record")
@click.option("--out", "out_path", required=True, type=output_file(),
              help="Where to write the golden curve JSON.")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"))
@click.option("--backend", type=click.Choice(BACKENDS))
@click.option("--cards", type=whole(2, MAX_LOCAL_CARDS))
@click.option("--steps", type=whole(*INT_BOUNDS["steps"]), default=60, show_default=True)
@click.option("--repeats", type=whole(*INT_BOUNDS["repeats"]), default=5, show_default=True,
              help="Clean runs to measure the run-to-run spread that sizes the band.")
@click.option("--seed", type=whole(0, 2**32 - 1), default=0, show_default=True)
@click.option("-q", "--quiet", is_flag=True)
@handle_errors
def golden_record(out_path, inventory_path, backend, cards, steps, repeats, seed, quiet) -> None:
    """Record a golden curve on a known-good system (no faults)."""
    from sncheck.run.recording import record_golden_curve  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    inventory = _inventory(inventory_path, cards)
    curve = record_golden_curve(inventory, backend, steps, repeats, seed, Path(out_path).stem,
                                _progress_printer(quiet))
    from sncheck.store.results import write_json  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    write_json(Path(out_path), curve)
    click.echo(f"sncheck: golden curve {curve['name']} written to {out_path} "
               f"(band step_rel={curve['band']['step_rel']:.3f}, final_rel={curve['band']['final_rel']:.3f})",
               err=True)


def _known_collective(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A collective the logs can name (a ``*_perf`` binary's, as the nccl-tests reader knows
    them: all_reduce_perf or all_reduce) or whose bus bandwidth factor sncheck has: a typo
    ('allreduce') was printed as the log's collective, and hccl-test's busbw left null."""
    if value is None:
        return None
    if known_collective(value) is None:
        raise click.BadParameter(f"{value!r} is no collective ({', '.join(known_collectives())})", ctx, param)
    return value


@main.command("parse")
@click.argument("tool")
@click.argument("file", type=input_file("log"))
@click.option("--json", "as_json", is_flag=True, help="Print the parsed JSON (the default output).")
@click.option("--collective", callback=_known_collective,
              help="nccl-tests: the collective when the log does not name it "
              "(default: the collective a binary name in the file's path names).")
@click.option("--ranks", type=whole(1, MAX_CARDS), help="hccl-test: ranks of the run (hccl_test prints "
              "no busbw; sncheck computes it with the nccl-tests factors).")
@click.option("--expect", type=whole(0, MAX_CARDS), help="How many records the output must list (the "
              "cards, NICs or ports of the host; the rows of a sweep): another count is 'not judged', exit 1.")
@click.option("--rules", "rules_ref", type=input_ref("yaml"), help="kernel-log: judge the reports by this rules "
              "file's kernel-log policy (a file or a shipped name: default), as a run does: 'judged' in the JSON, "
              "exit 1 on a warning or critical report (not on every report). ib-counters: the rules its "
              "counters are judged by (default: the shipped rules), as a run judges its reads.")
@click.option("--platform", "platform_name", help="Judge the output as a run judges a host of this platform "
              "(its checks, against its design: amd-mi300x expects XGMI on every GPU pair); without it, as a host "
              "whose inventory names no platform (a topology with no XGMI link is then 'not judged', exit 1).")
@click.option("--since", type=input_file("log"), help="ib-counters: an earlier read of the same ports: judge each "
              "error counter's growth since it (as 'fabric check --since'); without it a counter above zero is "
              "judged as a run judges its read before the traffic (info, exit 0).")
@handle_errors
def parse_cmd(tool: str, file: str, as_json: bool, collective: str | None, ranks: int | None,  # noqa: ARG001 -- --json names the default output; kept for scripts that pass it
              expect: int | None, platform_name: str | None, rules_ref: str | None, since: str | None) -> None:
    """Parse a log you already have. TOOL is a view of a vendor's tool (nccl-tests,
    nvidia-smi-qx, imex-ctl, amd-smi, rocm-smi-showtopo, npu-smi, hccn-net-health,
    hccl-test, ib-write-bw, nvbandwidth, ...; an unknown TOOL lists them all).

    Exits 1 when the log shows a failure or was cut short (the parsed rows are still printed).

    \b
    sncheck parse kernel-log dmesg.txt --rules default     # the kernel-log policy's verdict
    """

    get_parser(tool)  # an unknown TOOL lists the views before the file is read
    # An option the view does not read is refused, never ignored: the operator meant it to
    # change what is judged ('--ranks 8' on nccl-tests, '--collective' on an ibstat)
    counted = counter_views()
    for given, views, says in ((rules_ref, ("kernel-log", *counted), "--rules judges a kernel log (TOOL kernel-log) "
                                f"or a counter read ({', '.join(counted)})"),
                               (since, counted, f"--since judges a counter read's growth ({', '.join(counted)})"),
                               (collective, ("nccl-tests", "rccl-tests", "hccl-test"),
                                "--collective names the collective of nccl-tests, rccl-tests or hccl-test output"),
                               (ranks, ("hccl-test",), "--ranks counts the ranks of hccl-test output")):
        if given is not None and tool not in views:
            raise ConfigError(f"{says}, not {tool} output")
    if platform_name is not None and tool not in judged_views(platform(platform_name).name):
        raise ConfigError(f"--platform {platform_name} judges none of {tool}'s facts (it judges "
                          f"{', '.join(sorted(judged_views(platform_name)))})")
    raw = read_input(file, "log")  # /dev/zero or a 100 MB log: refused, not read
    text = decode(raw)  # a BOM, UTF-16, a Windows editor's save: sncheck.vendors.delivery
    try:
        if tool in ("nccl-tests", "rccl-tests"):  # the log's own name first, the file's path last
            data = parse_text(tool, text, expect, platform_name, collective=collective, path=file)
        elif tool == "hccl-test":
            data = parse_text(tool, text, expect, platform_name, collective=collective, ranks=ranks)
        else:
            data = parse_text(tool, text, expect, platform_name)
    except (csv.Error, RecursionError, ValueError, IndexError) as e:  # input a parser cannot take
        raise ConfigError(f"cannot parse as {tool} output: {_one_line(withheld(str(e), text), 120)}", file) from e
    except ParseError as e:  # 'no table found' names the file it looked in (an empty one among many)
        raise ParseError(e.message, tool=f"{file}: {e.tool or tool}", line=e.line) from e
    failures = parse_failures(data)
    if tool in counted:  # judged as a run judges its reads: the value before the traffic, or the growth since
        if since is not None:
            refuse_itself(file, since)
        data["judged"], bad = judge_counters(tool, data, since, rules_ref or "default")
        failures += bad
    elif rules_ref is not None:  # the policy's judgement replaces "every report is a failure"
        from sncheck.health.kernel import judged, unjudged  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
        from sncheck.health.metrics import rows_context  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
        from sncheck.health.rules import load_rules  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

        policy = list(load_rules(rules_ref).rules)
        data["judged"] = judged(data, policy, rows_context())
        failures = [str(e) for e in data.get("errors") or []] + failing(data["judged"], unjudged(data, policy))
    click.echo(json.dumps(data, indent=2, default=str))
    for err in failures:
        click.echo(shown(f"sncheck: {file}: {err}"), err=True)  # an input's text: one terminal line
    if failures:
        sys.exit(ExitCode.FAIL)




@main.group("rules")
def rules_cmd() -> None:
    """Detection rules: typed YAML, validated when loaded."""


@rules_cmd.command("check")
@click.argument("file", type=input_ref("yaml"))
@handle_errors
def rules_check(file: str) -> None:
    """Validate a rules FILE (errors name the file, line and field). A layer no enabled
    rule judges is a warning (a run reports it "not judged", which fails the gate); a
    file with no enabled rule at all judges nothing, and is refused."""
    from sncheck.health.rules import load_rules  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    rs = load_rules(file)
    unjudged = [layer for layer in LAYERS if not rs.judging(layer)]
    if len(unjudged) == len(LAYERS):
        raise ConfigError(f"no enabled rule judges any layer ({len(rs.rules)} enabled rules): a run with this "
                          "file judges nothing, and every layer fails the gate as not judged", file)
    for layer in unjudged:
        click.echo(f"sncheck: warning: {file}: no enabled rule judges the {layer} layer: a run of it reports "
                   f"'{layer} not judged' (layer-not-judged), which fails the gate", err=True)
    click.echo(f"{shown(file)}: ok: {len(rs.rules)} rules" + (f", {len(unjudged)} layer(s) not judged: "
                                                        f"{', '.join(unjudged)}" if unjudged else ""))
    for r in rs.rules:
        bound = {k: v for k, v in r.params.items() if k in ("below", "above", "facts", "not_facts")}
        click.echo(shown(f"  {r.name:<32} {r.op}({r.metric}) {bound or ''} -> {r.severity}, {r.scope}, "
                         f"confirm: {r.confirm}"))


@rules_cmd.command("list")
def rules_list() -> None:
    """The rule ops and their parameters, and the metrics they judge."""
    from sncheck.health.metrics import METRICS  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.health.ops import OPS, REQUIRED  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    click.echo("ops:")
    for op in OPS.values():
        click.echo(f"  {op.name}: {op.help} [metrics: {', '.join(op.shapes)}]")
        for key, p in op.params.items():
            default = "required" if p.default is REQUIRED else f"default {p.default!r}"
            choices = f" ({'|'.join(p.choices)})" if p.choices else ""
            click.echo(f"      {key}{choices}: {p.help}; {default}")
        if op.one_of:
            click.echo(f"      exactly one of: {', '.join(op.one_of)}")
    click.echo("every rule also takes:")
    click.echo("  confirm (retest|none): retest (default): quarantine, retest with the measurement that found it, "
               "then isolate or release; none: hard evidence (uncorrectable ECC, a pending remap, corrupted data, "
               "a link down): isolate at once")
    click.echo("  scope (link|card|host|supernode): the level the rule judges at; pair rules: link or card")
    click.echo("metrics:")
    for m in METRICS.values():
        click.echo(f"  {m.name} ({m.layer}, {m.shape}, {m.unit or '-'}): {m.description}")


@main.group("baseline", cls=LazyGroup, lazy={"make": "sncheck.cli.history:baseline_make"})
def baseline_cmd() -> None:
    """Baselines built from known-good runs."""


@main.group("inventory", cls=LazyGroup, lazy={"from-slurm": "sncheck.cli.slurm:from_slurm"})
def inventory_cmd() -> None:
    """Inventory files."""


@inventory_cmd.command("check")
@click.argument("inventory", type=input_file("yaml"))
@handle_errors
def inventory_check(inventory: str) -> None:
    """Validate an INVENTORY file and summarise it."""
    inv = load_inventory(inventory)
    click.echo(shown(f"{inventory}: ok: {inv.name}: {len(inv.supernodes)} supernodes, "
                     f"{len(inv.hosts)} hosts, {inv.card_count} cards"))
    if inv.description:
        click.echo(f"  {shown(' '.join(inv.description.split()))}")
    for sn in inv.supernodes:
        cards = sum(inv.hosts[h].cards for h in sn.hosts)
        plat = f", platform {sn.platform}" if sn.platform else ""
        click.echo(f"  {sn.name}: {len(sn.hosts)} hosts ({sn.hosts[0]}..{sn.hosts[-1]}), {cards} cards{plat}")
    for tier, d in inv.design.items():
        click.echo(f"  design {tier}: {d.bandwidth_GBps:g} GB/s, {d.latency_us:g} us")


if __name__ == "__main__":
    main()
