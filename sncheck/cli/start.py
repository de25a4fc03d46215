"""The program's entry (the ``sncheck`` console script and ``python -m sncheck``).

SIGTERM and SIGHUP are taken as a stop request (:class:`sncheck.errors.Interrupted`, as Ctrl-C
is) before the CLI is imported: its imports (Click, the backends, pandas and pyarrow on the way)
take seconds on a busy machine, the window a scheduler's stop or a ``timeout`` most often lands
in, and Python's default ended the process there, exit 143, saying nothing (hostile round 20,
H20-04). A stop while importing is one line, exit 3, nothing begun; after that the commands map
it as they map Ctrl-C (``cli.errors.handle_errors``), and a run holds its own handlers while it
lasts (``run.safety.install_signal_handlers``). A signal the process was started ignoring
(``nohup``'s SIGHUP) stays ignored, here and there (:func:`sncheck.errors.stop_signals`).
"""

from __future__ import annotations

import signal
import sys

from sncheck.errors import Interrupted, interrupt_cause, stop_signals

HARNESS_EXIT = 3  # model.ExitCode.HARNESS, not imported: model is one of the imports this guards


def _stop(signum: int, _frame: object) -> None:
    raise Interrupted(signal.Signals(signum).name)


def main() -> None:
    for sig in stop_signals():  # one the process was started ignoring stays ignored
        signal.signal(sig, _stop)
    try:
        from sncheck.cli.main import main as cli  # noqa: PLC0415 -- after the handlers: the point of this module
    except KeyboardInterrupt as e:
        print(f"sncheck: error: {interrupt_cause(e)} while starting; nothing was run", file=sys.stderr)
        sys.exit(HARNESS_EXIT)
    cli()
