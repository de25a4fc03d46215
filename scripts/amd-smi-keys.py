"""Write sncheck/vendors/amd/amd_smi_keys.py: every key amd-smi's text views can print, read from
amd-smi's own source, the union over the repositories and revisions given.

    python3 scripts/amd-smi-keys.py --repo GIT_DIR REV... [--repo GIT_DIR REV...] > sncheck/vendors/amd/amd_smi_keys.py

(``GIT_DIR REV...`` alone is one ``--repo``.) amd-smi prints a dict per device: the CLI builds it
(amdsmi_cli/amdsmi_commands.py: static, metric, list, process, topology, firmware, bad-pages, ras,
xgmi, partition...; a newer CLI splits them into amdsmi_cli/subcommands/*.py) from the library's
dicts (py-interface/amdsmi_interface.py, py-interface/amdsmi/amdsmi_interface.py in a wheel's tree:
the asic, board, vbios, driver, bus, power, clock, link metrics, CPER... records), and
amdsmi_logger's _capitalize_keys upper-cases every string key before it prints. So the keys are
the string constants those files use as a dict key (a literal's key, or ``d['key'] = ...``),
upper-cased. A key built at run time (an f-string) is not in the list; the parser needs only one
of a text's keys to be amd-smi's.

The files are found in each revision's tree wherever they lie (ROCm/amdsmi at its root; the
monorepo ROCm/rocm-systems under projects/amdsmi/, where amdsmi moved in 2025; a vendored copy
such as TheRock's base/amdsmi/; the py-interface-only mirror ml-energy/amdsmi).

    python3 scripts/amd-smi-keys.py --commands --repo GIT_DIR REV... > sncheck/vendors/amd/amd_smi_commands.py

writes instead, per amd-smi command, the top-level keys of the device records its --json prints
(:func:`record_keys`), and the keys of 26.x's combined document (amdsmi_logger.combine_arrays_to_json).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap

# the files that hold amd-smi's printed keys, wherever the tree puts its amdsmi directory
FILES = re.compile(r"(?:^|/)(amdsmi_cli/amdsmi_commands\.py|amdsmi_cli/subcommands/[a-z_]+\.py"
                   r"|py-interface/(?:amdsmi/)?amdsmi_interface\.py)$")


def keys(source: str) -> set[str]:
    """The string constants ``source`` uses as a dict key, upper-cased as _capitalize_keys does."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            out |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                out.add(node.slice.value)
    return {k.upper() for k in out if k and k.strip() == k and "\n" not in k}


STORE = re.compile(r"^store_(?:[a-z]+_)?output$")  # store_output, store_cpu_output, store_nic_output, ...
JSON_LIST = re.compile(r"^store_[a-z_]+_json_output$")  # 26.x: the device dicts kept for combine_arrays_to_json


def _const(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _human_only(fn: ast.AST) -> set[int]:
    """The nodes under an 'if ...is_human_readable_format()' body: the text tables' rows, in no JSON."""
    out: set[int] = set()
    for node in ast.walk(fn):
        test = ast.unparse(node.test) if isinstance(node, ast.If) else ""
        if "is_human_readable_format" in test and "not " not in test:
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}  # type: ignore[attr-defined]
    return out


def record_keys(fn: ast.AST) -> set[str]:
    """The top-level keys of the device records a command method prints in --json: the logger's
    store_*output(handle, KEY, data) (the 'values' dict's own keys merged in), the dicts handed to
    multiple_device_output or 26.x's store_*_json_output lists (a literal's keys, ``d['k'] = ``, a
    loop over the list), and ``self.logger.output['k'] = `` (version)."""
    skip = _human_only(fn)
    records: set[str] = set()
    keys: set[str] = set()
    nodes = [n for n in ast.walk(fn) if id(n) not in skip]
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if STORE.match(node.func.attr) and len(node.args) >= 3 and (key := _const(node.args[1])):
                if key != "values":
                    keys.add(key)
                elif isinstance(node.args[2], ast.Name):
                    records.add(node.args[2].id)
            if JSON_LIST.match(node.func.attr) and node.args and isinstance(node.args[0], ast.Name):
                records.add(node.args[0].id)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and any(
                isinstance(t, ast.Attribute) and t.attr == "multiple_device_output" for t in node.targets):
            records.add(node.value.id)
    lists = set(records)
    records |= {n.target.id for n in nodes if isinstance(n, ast.For) and isinstance(n.iter, ast.Name)
                and n.iter.id in lists and isinstance(n.target, ast.Name)}
    for node in nodes:
        for t in node.targets if isinstance(node, ast.Assign) else ():
            if isinstance(t, ast.Subscript) and (key := _const(t.slice)):
                b = t.value
                if ((isinstance(b, ast.Name) and b.id in records) or (isinstance(b, ast.Attribute) and b.attr == "output")
                        or (isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name) and b.value.id in lists)):
                    keys.add(key)
            if isinstance(t, ast.Name) and t.id in records and isinstance(node.value, ast.Dict):  # type: ignore[attr-defined]
                keys |= {k for k in map(_const, node.value.keys) if k}  # type: ignore[attr-defined,arg-type]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.args and isinstance(node.args[0], ast.Dict)
                and ((node.func.value.id in lists and node.func.attr == "append")
                     or (node.func.value.id in records and node.func.attr == "update"))):
            keys |= {k for k in map(_const, node.args[0].keys) if k}  # type: ignore[arg-type]
    return keys


def command(method: str) -> str:
    """amd-smi's command for a method of AmdSmiCommands: static_gpu -> static, bad_pages -> bad-pages."""
    name = re.sub(r"_(?:gpu|cpu|core|value)$", "", method)
    return name.replace("_", "-")


def commands(source: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        for fn in node.body if isinstance(node, ast.ClassDef) else ():
            if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_") and (got := record_keys(fn)):
                out.setdefault(command(fn.name), set()).update(got)
    return out


def combined(source: str) -> set[str]:
    """The keys of 26.x's one JSON object (amdsmi_logger.combine_arrays_to_json: combined_json['gpu_data'] = ...)."""
    return {k for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "combined_json" and (k := _const(n.slice))}


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True).stdout


def _files(git_dir: str, rev: str) -> list[str]:
    """The paths in ``rev``'s tree that hold amd-smi's keys (FILES)."""
    return sorted(p for p in _git(git_dir, "ls-tree", "-r", "--name-only", rev).splitlines() if FILES.search(p))


def _name(git_dir: str) -> str:
    """github:owner/name for a mirror's git directory (.../owner+name/repo), else the path."""
    m = re.search(r"([^/]+)\+([^/]+)/repo/?$", git_dir)
    return f"github:{m.group(1)}/{m.group(2)}" if m else git_dir


def _sources(argv: list[str]) -> list[tuple[str, list[str]]]:
    """``--repo GIT_DIR REV... [--repo ...]`` (or ``GIT_DIR REV...``) as (git dir, revisions)."""
    out: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg == "--repo":
            out.append(("", []))
        elif not out or not out[-1][0]:
            out[-1:] = [(arg, [])]
        else:
            out[-1][1].append(arg)
    return out


def main_commands(argv: list[str]) -> None:
    found: dict[str, set[str]] = {}
    wrap: set[str] = set()
    said: list[str] = []
    for git_dir, revs in _sources(argv):
        for rev in revs:
            for path in _files(git_dir, rev):
                if path.endswith(".py") and "amdsmi_cli/" in path:
                    for name, got in commands(_git(git_dir, "show", f"{rev}:{path}")).items():
                        found.setdefault(name, set()).update(got)
                    logger = path[: path.index("amdsmi_cli/")] + "amdsmi_cli/amdsmi_logger.py"
                    wrap |= combined(_git(git_dir, "show", f"{rev}:{logger}"))
        tags = ", ".join(f"{rev.rsplit('/', 1)[-1]} ({_git(git_dir, 'rev-parse', '--short', rev).strip()})"
                         for rev in revs)
        said.append(f"{_name(git_dir)} at {tags}")
    head = ("The top-level keys of the device records each amd-smi command prints in --json, the union over "
            "versions (gpu, cpu, core and timestamp are the logger's own): generated by scripts/amd-smi-keys.py "
            f"--commands from amdsmi_cli's amdsmi_commands.py and amdsmi_logger.py in {'; '.join(said)}. "
            "Do not edit by hand: run the script.")
    print('"""' + textwrap.fill(head, 110) + '"""\n')
    print("RECORD_KEYS: dict[str, frozenset[str]] = {")
    for name in sorted(found):
        items = " ".join(f"{k!r}," for k in sorted(found[name] - {"gpu", "cpu", "core", "timestamp"}))
        print(textwrap.fill(items, 114, initial_indent=f"    {name!r}: frozenset((", subsequent_indent=" " * 8) + ")),")
    print("}")
    print(textwrap.fill(" ".join(f"{k!r}," for k in sorted(wrap)), 114, initial_indent="COMBINED = frozenset((",
                        subsequent_indent="    ") + "))")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--commands"]:
        main_commands(argv[1:])
        return
    found: set[str] = set()
    said: list[str] = []
    for git_dir, revs in _sources(argv):
        dirs: set[str] = set()
        for rev in revs:
            for path in _files(git_dir, rev):
                found |= keys(_git(git_dir, "show", f"{rev}:{path}"))
                dirs.add(re.sub(r"(?:^|/)(?:amdsmi_cli|py-interface)/.*$", "", path))  # the tree's amdsmi directory
        tags = ", ".join(f"{rev.rsplit('/', 1)[-1]} ({_git(git_dir, 'rev-parse', '--short', rev).strip()})"
                         for rev in revs)
        where = ", ".join(sorted(d + "/" for d in dirs if d))
        said.append(f"{_name(git_dir)}{' ' + where if where else ''} at {tags}")
    words = sorted(found)
    head = ("Every key amd-smi's text views print: generated by scripts/amd-smi-keys.py from amd-smi's "
            "amdsmi_cli/amdsmi_commands.py (and subcommands/*.py) and py-interface/amdsmi_interface.py in "
            f"{'; '.join(said)}. Do not edit by hand: run the script.")
    print('"""' + textwrap.fill(head, 110) + '"""\n')
    print("KEYS = frozenset((")
    line = "   "
    for w in words:
        item = f" {w!r},"
        if len(line) + len(item) > 118:
            print(line)
            line = "   "
        line += item
    print(line)
    print("))")


if __name__ == "__main__":
    main(sys.argv[1:])
