"""Pure builders of the argv lists the SSH backend runs on remote hosts.

Nothing here touches a network or a shell. Every function returns a list of words;
the transport quotes each one with :func:`sncheck.transport.build_command`, so a host
name, path or launcher argument holding shell metacharacters stays one literal word.
Where a small shell or Python program is needed, it is a constant here and all the
variable parts are passed to it as positional arguments (``"$1"``, ``sys.argv[1]``),
never pasted into its text.

Launch lines (the contract with the external launchers):

* torchrun, static rendezvous (deterministic ranks: node N's workers are ranks
  ``sum(cards of nodes < N) ..``, in the order the job JSON lists the cards)::

    python3 -m torch.distributed.run --nnodes 2 --nproc-per-node 4 --node-rank 0
        --rdzv-backend static --rdzv-endpoint 10.0.0.1:29731 --max-restarts 0
        -m sncheck.worker.torchdist --job JOB --out OUT

* a vendor's collective tool (its plug-in's ``CollectiveTool.argv``: nccl-tests with
  validation on, ``all_reduce_perf -b 8 -e 1073741824 -f 2 -g 1 -c 1 -n 5 -w 2``)

* through mpirun (a hostfile with ``<address> slots=<ranks on it>`` per host)::

    mpirun --hostfile HOSTFILE -np 8 [extra_args] all_reduce_perf ...

* through srun::

    srun -N 2 --ntasks-per-node 4 --nodelist node001,node002 [extra_args] all_reduce_perf ...

* groups whose members use different GPU indices on different hosts (a pair
  ``node1/gpu2<->node2/gpu5``) run as one MPMD job, each part with its own
  ``CUDA_VISIBLE_DEVICES``::

    mpirun [extra_args] -np 1 --host 10.0.0.1 env CUDA_VISIBLE_DEVICES=2 sendrecv_perf ...
        : -np 1 --host 10.0.0.2 env CUDA_VISIBLE_DEVICES=5 sendrecv_perf ...
    srun [extra_args] -N 1 -n 1 --nodelist node1 env CUDA_VISIBLE_DEVICES=2 ... : -N 1 ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TORCH_PROBE_MODULE = "sncheck.worker.torchdist"

# Python programs run with ``python -c``; their inputs come in sys.argv.
_FREE_PORT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET)\n"
    "s.bind((sys.argv[1], 0))\n"
    "print(s.getsockname()[1])\n"
)
_RESOLVES = (
    "import socket, sys\n"
    "bad = 0\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        socket.getaddrinfo(name, None)\n"
    "    except Exception as e:\n"
    "        print(name + '\\t' + (str(e) or type(e).__name__))\n"
    "        bad = 1\n"
    "sys.exit(bad)\n"
)
_FIND_MODULES = (
    "import importlib.util, sys\n"
    "missing = []\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found = importlib.util.find_spec(name) is not None\n"
    "    except (ImportError, ValueError):\n"
    "        found = False\n"
    "    if not found:\n"
    "        missing.append(name)\n"
    "print(' '.join(missing))\n"
    "sys.exit(3 if missing else 0)\n"
)
# Shell programs run with ``sh -c``; their inputs come in "$1", "$2", ...
_WRITE = 'printf "%s" "$2" > "$1"'
_APPEND = 'printf "%s" "$2" >> "$1"'
_EXEC_WITH_PIDFILE = 'echo "$$" > "$1"; shift; exec "$@"'
# The pid is a process-group leader (sshd starts each session with setsid): TERM the
# whole group, give it STOP_GRACE_S to go, then KILL what is left of it.
STOP_GRACE_S = 5
_KILL_PIDFILE = ('pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] || exit 0; '
                 'kill -TERM -"$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; i=0; '
                 f'while kill -0 -"$pid" 2>/dev/null && [ "$i" -lt {STOP_GRACE_S * 10} ]; do sleep 0.1; i=$((i+1)); done; '
                 'kill -KILL -"$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; exit 0')
_WHICH = 'command -v "$1"'
# the machine's identity (systemd's machine-id; the kernel's boot id where there is none)
_MACHINE_ID = "cat /etc/machine-id 2>/dev/null || cat /proc/sys/kernel/random/boot_id"

MISSING_MODULES_EXIT = 3  # what module_check_argv's program exits with when a module is missing


# --------------------------------------------------------------------------- torchrun

def format_endpoint(address: str, port: int) -> str:
    """``host:port``; an IPv6 address is bracketed, as torchrun expects."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def torchrun_argv(nnodes: int, nproc_per_node: int, node_rank: int, rdzv_endpoint: str,
                  module_args: Sequence[str], *, python: str = "python3",
                  module: str = TORCH_PROBE_MODULE) -> list[str]:
    """One node's torchrun line: static rendezvous at ``rdzv_endpoint``, no restarts.

    Static (not c10d) rendezvous, because only it honours ``--node-rank``: the job
    lists the card of every global rank, so node N must get exactly its ranks.
    The TCPStore it uses still lives at the endpoint, on the first node.
    """
    if nnodes < 1 or nproc_per_node < 1 or not 0 <= node_rank < nnodes:
        raise ValueError(f"bad torchrun geometry: nnodes={nnodes} nproc_per_node={nproc_per_node} "
                         f"node_rank={node_rank}")
    return [python, "-m", "torch.distributed.run",
            "--nnodes", str(nnodes), "--nproc-per-node", str(nproc_per_node),
            "--node-rank", str(node_rank),
            "--rdzv-backend", "static", "--rdzv-endpoint", rdzv_endpoint,
            "--max-restarts", "0",
            "-m", module, *module_args]


def torch_probe_args(job_path: str, out_path: str) -> list[str]:
    """The probe's own arguments (see :mod:`sncheck.worker.torchdist`)."""
    return ["--job", job_path, "--out", out_path]


# --------------------------------------------------------------------------- launchers

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"  # the default; a vendor names its own (Vendor.visible_devices_env)


def with_visible_devices(cmd: Sequence[str], devices: Sequence[int] | None,
                         env: str = VISIBLE_DEVICES) -> list[str]:
    """``env CUDA_VISIBLE_DEVICES=2,3 cmd...`` (``env``: the vendor's variable); ``cmd``
    unchanged when ``devices`` is None."""
    if devices is None:
        return list(cmd)
    return ["env", f"{env}=" + ",".join(str(d) for d in devices), *cmd]


@dataclass(frozen=True)
class LaunchPart:
    """One host's share of a launcher job: its ranks and the GPUs they use."""

    host: str           # what the launcher calls it: an address (mpirun) or a node name (srun)
    ranks: int
    devices: tuple[int, ...] | None = None  # None: the first ``ranks`` GPUs, in order


def hostfile_text(parts: Sequence[LaunchPart]) -> str:
    """An Open MPI hostfile: ``<host> slots=<ranks>`` per line."""
    for p in parts:
        _check_host_word(p.host)
    return "".join(f"{p.host} slots={p.ranks}\n" for p in parts)


def mpirun_argv(hostfile: str, np: int, extra_args: Sequence[str], cmd: Sequence[str]) -> list[str]:
    """``mpirun --hostfile F -np N [extra_args] cmd...`` (ranks fill each host's slots in order)."""
    if np < 1:
        raise ValueError(f"np must be >= 1, got {np}")
    return ["mpirun", "--hostfile", hostfile, "-np", str(np), *extra_args, *cmd]


def mpirun_mpmd_argv(parts: Sequence[LaunchPart], extra_args: Sequence[str], cmd: Sequence[str],
                     env: str = VISIBLE_DEVICES) -> list[str]:
    """One MPMD job, a ``-np K --host H`` context per part, each with its own devices."""
    argv = ["mpirun", *extra_args]
    for i, p in enumerate(parts):
        _check_host_word(p.host)
        if i:
            argv.append(":")
        argv += ["-np", str(p.ranks), "--host", f"{p.host}:{p.ranks}", *with_visible_devices(cmd, p.devices, env)]
    return argv


def srun_argv(nodes: int, ntasks_per_node: int, extra_args: Sequence[str], cmd: Sequence[str],
              nodelist: Sequence[str] | None = None) -> list[str]:
    """``srun -N nodes --ntasks-per-node K [--nodelist a,b] [extra_args] cmd...``."""
    if nodes < 1 or ntasks_per_node < 1:
        raise ValueError(f"bad srun geometry: nodes={nodes} ntasks_per_node={ntasks_per_node}")
    argv = ["srun", "-N", str(nodes), "--ntasks-per-node", str(ntasks_per_node)]
    if nodelist:
        for n in nodelist:
            _check_host_word(n)
        argv += ["--nodelist", ",".join(nodelist)]
    return [*argv, *extra_args, *cmd]


def srun_het_argv(parts: Sequence[LaunchPart], extra_args: Sequence[str], cmd: Sequence[str],
                  env: str = VISIBLE_DEVICES) -> list[str]:
    """A heterogeneous srun job (``srun ... : ...``), a component per part."""
    argv = ["srun", *extra_args]
    for i, p in enumerate(parts):
        _check_host_word(p.host)
        if i:
            argv.append(":")
        argv += ["-N", "1", "-n", str(p.ranks), "--nodelist", p.host, *with_visible_devices(cmd, p.devices, env)]
    return argv


def launcher_argv(launcher: str, parts: Sequence[LaunchPart], extra_args: Sequence[str],
                  cmd: Sequence[str], hostfile: str | None = None, env: str = VISIBLE_DEVICES) -> list[str]:
    """The launch line for ``parts`` through ``launcher`` (``mpirun`` or ``srun``);
    ``env`` is the variable that masks the cards (the vendor's).

    Parts that all use the same GPU indices run as one plain job (hostfile / node
    list); otherwise as an MPMD / heterogeneous job. A plain mpirun job needs the
    path of a hostfile written from :func:`hostfile_text`.
    """
    if not parts:
        raise ValueError("no hosts to launch on")
    uniform = len({(p.ranks, p.devices) for p in parts}) == 1
    if launcher == "mpirun":
        if not uniform:
            return mpirun_mpmd_argv(parts, extra_args, cmd, env)
        if hostfile is None:
            raise ValueError("a plain mpirun job needs a hostfile")
        return mpirun_argv(hostfile, sum(p.ranks for p in parts), extra_args,
                           with_visible_devices(cmd, parts[0].devices, env))
    if launcher == "srun":
        if not uniform:
            return srun_het_argv(parts, extra_args, cmd, env)
        return srun_argv(len(parts), parts[0].ranks, extra_args,
                         with_visible_devices(cmd, parts[0].devices, env), [p.host for p in parts])
    raise ValueError(f"launcher must be mpirun or srun, got {launcher!r}")


def needs_hostfile(launcher: str, parts: Sequence[LaunchPart]) -> bool:
    return launcher == "mpirun" and len({(p.ranks, p.devices) for p in parts}) == 1


# --------------------------------------------------------------------------- helpers

def free_port_argv(address: str, python: str = "python3") -> list[str]:
    """Print a TCP port that is free on ``address`` of the host it runs on."""
    return [python, "-c", _FREE_PORT, address]


def resolve_argv(names: Sequence[str], python: str = "python3") -> list[str]:
    """Exit 0 when every one of ``names`` resolves on the host it runs on; else exit 1 and a
    line ``NAME<tab>WHY`` for each that does not (:func:`unresolved_names` reads them)."""
    return [python, "-c", _RESOLVES, *names]


def unresolved_names(stdout: str, names: Sequence[str]) -> dict[str, str]:
    """The names :func:`resolve_argv` said it could not resolve, with why."""
    out = {}
    for line in stdout.splitlines():
        name, tab, why = line.partition("\t")
        if tab and name in names:
            out[name] = why.strip() or "does not resolve"
    return out


def module_check_argv(modules: Sequence[str], python: str = "python3") -> list[str]:
    """Exit 3 and print the names of ``modules`` that ``python`` cannot import (0: all found)."""
    return [python, "-c", _FIND_MODULES, *modules]


def machine_id_argv() -> list[str]:
    """Print the identity of the machine it runs on: one line, the same for every login to it."""
    return ["sh", "-c", _MACHINE_ID]


def which_argv(program: str) -> list[str]:
    """Print the path of ``program`` on the remote PATH (exit non-zero if absent)."""
    return ["sh", "-c", _WHICH, "sh", program]


def mktemp_dir_argv(prefix: str) -> list[str]:
    """Create a private directory under $TMPDIR (or /tmp) and print its path."""
    if "/" in prefix:
        raise ValueError(f"prefix must not contain '/': {prefix!r}")
    return ["mktemp", "-d", "-t", f"{prefix}XXXXXXXX"]


def remove_tree_argv(path: str) -> list[str]:
    return ["rm", "-rf", "--", path]


def write_file_argvs(path: str, text: str, chunk_chars: int = 65536) -> list[list[str]]:
    """Commands that write ``text`` to ``path``, in chunks.

    sshd hands a command to the remote shell as one argument, and Linux limits one
    argument to 128 KiB, so a long job JSON goes over in several commands.
    """
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be >= 1")
    chunks = [text[i:i + chunk_chars] for i in range(0, len(text), chunk_chars)] or [""]
    return [["sh", "-c", _WRITE if i == 0 else _APPEND, "sh", path, chunk] for i, chunk in enumerate(chunks)]


def tail_from_argv(path: str, offset: int) -> list[str]:
    """The bytes of ``path`` from byte ``offset`` (0-based) on."""
    if offset < 0:
        raise ValueError("offset must be >= 0")
    return ["tail", "-c", f"+{offset + 1}", path]


def exec_with_pidfile_argv(pidfile: str, cmd: Sequence[str]) -> list[str]:
    """Run ``cmd`` (exec'd, so the pid stays) after writing its pid to ``pidfile``."""
    return ["sh", "-c", _EXEC_WITH_PIDFILE, "sh", pidfile, *cmd]


def kill_pidfile_argv(pidfile: str) -> list[str]:
    """SIGTERM the process group whose leader's pid ``pidfile`` holds, SIGKILL after
    :data:`STOP_GRACE_S`; succeeds if it is already gone."""
    return ["sh", "-c", _KILL_PIDFILE, "sh", pidfile]


def _check_host_word(host: str) -> None:
    # A launcher splits these on ',' ':' and whitespace itself; reject what would split.
    if not host or any(c in host for c in " \t\n,") or host.startswith("-"):
        raise ValueError(f"bad host name for a launcher: {host!r}")
