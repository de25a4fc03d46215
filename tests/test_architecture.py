"""The architecture, measured from the source (issue 19): import cycles, module sizes, the
flat top level, typed names, and no registration at import time.

Each measurement is a small function over a source tree, checked first on a tiny tree
built in ``tmp_path`` that breaks the rule (so the check is seen to fail), then on sncheck/.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
from pathlib import Path

import pytest

import sncheck
from sncheck import model

SNCHECK = Path(sncheck.__file__).resolve().parent

# The one cycle the design keeps: the worker's lifeline thread and the torch worker call each other.
ALLOWED_CYCLES = [{"sncheck.worker.lifeline", "sncheck.worker.torchdist"}]
MAX_LINES = 600
MAX_TOP_LEVEL = 9  # the bottom layer holds three leaves (model, errors, rows); pyproject names each module's layer


# ----------------------------------------------------------------------------- the tree
def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the package ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module a dotted name lives in (``a.b.func`` -> ``a.b``), or None outside the tree."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_nodes(tree: ast.AST):
    """Every statement of ``tree``, into function, class and block bodies, but not those
    under an ``if TYPE_CHECKING:`` block (imports are statements: expressions are skipped)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            todo.extend(node.orelse)
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo.extend(getattr(node, name, None) or ())


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports when it runs: at the top and inside
    functions (a deferred import closes a cycle as much as a top one), but not under
    ``if TYPE_CHECKING:``, which never runs (as pylint's cyclic-import counts them).
    ``from pkg import mod`` is an edge to ``pkg.mod``; ``from pkg.mod import name`` to ``pkg.mod``."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in _runtime_nodes(_parse(path)):
            if isinstance(node, ast.Import):
                edges.update(_known(a.name, modules) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    source = f"{base}.{node.module}" if node.module else base
                else:
                    source = node.module or ""
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    edges.add(full if full in modules else _known(source, modules))
        edges.discard(None)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    return {name: n for name, path in module_files(root).items()
            if (n := len(path.read_text().splitlines())) > limit}


def top_level_modules(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.py"))


_MUTATORS = {"update", "append", "extend", "insert", "setdefault", "add", "register", "__setitem__"}


def _module_body(statements: list[ast.stmt]):
    """The statements that run on import: the module's own, into if/try/with blocks, but not
    an ``if __name__ == "__main__"`` block (that runs as a script, never on import)."""
    for s in statements:
        if isinstance(s, ast.If):
            if "__name__" in ast.unparse(s.test) and "__main__" in ast.unparse(s.test):
                continue
            yield from _module_body(s.body)
            yield from _module_body(s.orelse)
        elif isinstance(s, ast.Try):
            for block in (s.body, s.orelse, s.finalbody, *[h.body for h in s.handlers]):
                yield from _module_body(block)
        elif isinstance(s, ast.With):
            yield from _module_body(s.body)
        else:
            yield s


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def import_time_registrations(root: Path) -> list[str]:
    """Statements that register something when a module is imported: a module-level call of
    one of the module's own functions (``_register_ops()``), a module-level write into a
    name imported from the tree (``OPS["x"] = ...``, ``METRICS.update(...)``), or a
    decorator that is a method of such a name (``@registry.register``, ``@main.command()``)."""
    top = root.name
    out = []
    for name, path in module_files(root).items():
        if path.name == "__main__.py":  # a script: running is its job
            continue
        tree = _parse(path)
        imported = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == top):
                imported.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                imported.update((a.asname or a.name).split(".")[0] for a in node.names
                                if a.name.split(".")[0] == top)
        own_functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for s in _module_body(tree.body):
            where = f"{name}:{s.lineno}"
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
                func = s.value.func
                if isinstance(func, ast.Name) and func.id in own_functions:
                    out.append(f"{where} calls {func.id}() on import")
                elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS and _root_name(func) in imported:
                    out.append(f"{where} {ast.unparse(func)}() into an imported table")
            targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AugAssign) else []
            for t in targets:
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _root_name(t) in imported:
                    out.append(f"{where} writes {ast.unparse(t)} of an imported module")
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for d in s.decorator_list:
                    target = d.func if isinstance(d, ast.Call) else d
                    if isinstance(target, ast.Attribute) and _root_name(target) in imported:
                        out.append(f"{where} @{ast.unparse(target)} registers {s.name} into an imported object")
    return out


def is_enum_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, enum.Enum)


# ------------------------------------------------------------------- the checks, on a fixture
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


def test_cycle_finder_sees_every_kind_of_import(tmp_path):
    root = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "def f():\n    from pkg.b import g\n",            # inside a function
        "pkg/b.py": "from pkg import a\ng = 1\n",                        # from package import module
        "pkg/c.py": "from .sub.d import x\n",                            # relative
        "pkg/sub/__init__.py": "",
        "pkg/sub/d.py": "import pkg.c\nx = 1\n",                          # plain import
        "pkg/e.py": "import os\nfrom pkg.a import f\nimport pkg.t\n",     # imports into a cycle, not part of one
        "pkg/t.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import os\n",
    })
    graph = import_graph(root)
    assert graph["pkg.e"] == {"pkg.a", "pkg.t"} and graph["pkg.t"] == set()  # annotations only: never run
    assert sorted(map(sorted, cycles(graph))) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_size_and_top_level_checks_fail_on_a_fixture(tmp_path):
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/big.py": "x = 1\n" * (MAX_LINES + 1),
                            "pkg/ok.py": "x = 1\n" * MAX_LINES,
                            **{f"pkg/m{i}.py": "" for i in range(MAX_TOP_LEVEL)}})
    assert long_modules(root) == {"pkg.big": MAX_LINES + 1}
    assert len(top_level_modules(root)) > MAX_TOP_LEVEL


def test_registration_finder_fails_on_a_fixture(tmp_path):
    root = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/table.py": "OPS = {}\nMETRICS = {}\n",
        "pkg/ops.py": "def _register():\n    from pkg import extra\n_register()\n",
        "pkg/extra.py": ("from pkg.table import OPS, METRICS\nfrom pkg import table\n"
                         "OPS['x'] = 1\nMETRICS.update(y=2)\ntable.OPS['z'] = 3\n"
                         "@table.register\ndef f(): pass\n"),
        "pkg/clean.py": ("from pkg.table import OPS\nOWN = {}\nOWN['a'] = 1\n"
                         "def build():\n    OPS['late'] = 1\n"
                         "if __name__ == '__main__':\n    build()\n"),
        "pkg/__main__.py": "from pkg.clean import build\nbuild()\n",
    })
    found = import_time_registrations(root)
    assert [f.split()[0] for f in found] == ["pkg.extra:3", "pkg.extra:4", "pkg.extra:5", "pkg.extra:7",
                                             "pkg.ops:3"], found


def test_enum_check_tells_a_plain_class():
    class Plain:
        CRITICAL = "critical"
    assert not is_enum_class(Plain) and not is_enum_class("critical")
    assert is_enum_class(enum.Enum("E", "A B"))


# ------------------------------------------------------------------------ the checks, on sncheck
def test_no_import_cycle_but_lifeline_and_torchdist():
    assert [sorted(c) for c in cycles(import_graph(SNCHECK)) if c not in ALLOWED_CYCLES] == []


def test_no_module_over_600_lines():
    assert long_modules(SNCHECK) == {}


def test_at_most_8_modules_directly_in_sncheck():
    assert len(top_level_modules(SNCHECK)) <= MAX_TOP_LEVEL, top_level_modules(SNCHECK)


def test_severity_and_verdict_are_enums():
    assert is_enum_class(model.Severity) and is_enum_class(model.Verdict)
    assert is_enum_class(model.Status) and is_enum_class(model.Tier) and is_enum_class(model.EntityKind)


def test_nothing_registers_itself_at_import_time():
    assert import_time_registrations(SNCHECK) == []


# ============================================================================= the vendor door
# (the vendor plug-in as the only door to vendor code, issue 19 item 3)

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "sncheck"
VENDORS = PKG / "vendors"


def _modules(under: Path = PKG) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if "__pycache__" not in p.parts)


def _outside_vendors() -> list[Path]:
    return [p for p in _modules() if VENDORS not in p.parents]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --------------------------------------------------------------------------- the vendor door

def _vendor_packages() -> set[str]:
    """Every package under sncheck/vendors/: a vendor's own (nvidia, amd, ascend) or a tool
    package the vendors share (infiniband, the collective tests). Only the modules directly
    in sncheck/vendors/ (registry, base, facts, ...) are the door the rest may use."""
    return {p.name for p in VENDORS.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def _imported(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``tree``; relative ones resolved against ``module``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[:-node.level]
                base = ".".join([*parts, base] if base else parts)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_outside_vendors_imports_a_vendor_package() -> None:
    """Backends, launch, slurm, health, report... reach vendor code only through the
    plug-in (sncheck.vendors.registry and the Vendor it returns)."""
    packages = _vendor_packages()
    assert {"nvidia", "amd", "ascend", "infiniband"} <= packages, packages
    private = re.compile(rf"^sncheck\.vendors\.({'|'.join(sorted(packages))})(\.|$)")
    found = []
    for path in _outside_vendors():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{_rel(path)}:{line}: {name}" for line, name in _imported(tree, _dotted(path))
                  if private.match(name)]
    assert not found, "vendor packages imported outside sncheck/vendors/:\n" + "\n".join(sorted(set(found)))


# The binaries of the vendors' tools. The list is a floor: every program a vendor plug-in
# names in its fact commands is added to it from the source of sncheck/vendors/.
VENDOR_BINARIES = {
    "nvidia-smi", "dcgmi", "nvidia-imex-ctl", "nvbandwidth", "nvidia-fabricmanager",
    "rocm-smi", "amd-smi", "TransferBench", "npu-smi", "hccn_tool",
    "all_reduce_perf", "alltoall_perf", "sendrecv_perf", "all_gather_perf", "reduce_scatter_perf",
    "broadcast_perf", "reduce_perf", "gather_perf", "scatter_perf", "hypercube_perf",
    "all_reduce_test", "alltoall_test", "send_recv_test",
    "ibstat", "ibstatus", "perfquery", "ibqueryerrors", "ibnetdiscover", "iblinkinfo", "opensm",
    "ib_write_bw", "ib_write_lat", "ib_read_lat",
    "ib_send_lat", "ib_read_bw", "ib_send_bw",
}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                ids.add(id(body[0].value))
    return ids


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string constant that is not a docstring (f-string parts included)."""
    skip = _docstrings(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


GENERIC_PROGRAMS = {"sh", "systemctl", "timeout", "env"}  # what a fact command may start that is no vendor's


def _registered_binaries() -> set[str]:
    """The programs the vendor plug-ins run: every fact command's, the collective tool's,
    the scale-out and copy tests' (read from the plug-ins the registry lists)."""
    from sncheck.vendors import registry

    found = set()
    for v in registry.vendors().values():
        found |= {c.argv[0] for c in v.commands.values()}
        if v.collective:
            found |= set(v.collective.programs.values())
        if v.scale_out:
            found |= {v.scale_out.nic_tool, *v.scale_out.pair_tests}
        if v.copy_bench:
            found.add(v.copy_bench.argv[0])
    return found - GENERIC_PROGRAMS


def test_no_vendor_binary_named_outside_vendors() -> None:
    """No string in the code outside sncheck/vendors/ names a vendor tool's binary: the
    command lines, the programs looked for on the PATH and the binaries of a collective
    test all come from the vendor plug-in. Docstrings may name them."""
    binaries = VENDOR_BINARIES | _registered_binaries()
    word = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, sorted(binaries, key=len, reverse=True)))
                      + r")(?![\w-])")
    found = []
    for path in _outside_vendors():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, text in _strings(tree):
            for m in word.finditer(text):
                found.append(f"{_rel(path)}:{line}: {m.group(1)!r} in {text[:60]!r}")
    assert not found, "vendor binaries named outside sncheck/vendors/:\n" + "\n".join(found)


def test_the_scans_see_what_they_look_for() -> None:
    """The two scans above find a vendor import and a binary where there is one (each
    rule would pass on anything if its pattern were wrong)."""
    src = ('"""all_reduce_perf in a docstring is fine."""\n'
           "from sncheck.vendors.nvidia import nvidia_smi\n"
           "from sncheck.vendors import registry\n"
           "ARGV = ['nvidia-smi', '-q']\n"
           "MSG = f'{x}: all_reduce_perf not found'\n"
           "OK = 'nvidia-smi-topo'\n")
    tree = ast.parse(src)
    names = [n for _, n in _imported(tree, "sncheck.backends.x")]
    assert "sncheck.vendors.nvidia" in names and "sncheck.vendors.registry" in names
    texts = [t for _, t in _strings(tree)]
    assert "all_reduce_perf in a docstring is fine." not in texts
    assert "nvidia-smi" in texts and ": all_reduce_perf not found" in texts
    assert {"nvidia-smi", "dcgmi", "npu-smi", "amd-smi", "rocm-smi", "all_reduce_perf", "ibstat",
            "nvbandwidth"} <= _registered_binaries()
    rel = _imported(ast.parse("from ..vendors.amd import checks\n"), "sncheck.backends.x")
    assert ("sncheck.vendors.amd" in [n for _, n in rel])


# --------------------------------------------------------------------------- the plug-in list

def _module_level_calls(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every call made while a module is imported: in its top-level
    statements, outside any function or class body's functions and a script's
    ``if __name__ == "__main__":`` block (it runs as a program, never on import)."""
    out = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) in ('__name__ == "__main__"', "__name__ == '__main__'"):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            out.append((node.lineno, name))
        todo.extend(ast.iter_child_nodes(node))
    return out


def test_plugins_are_listed_not_found_nor_registered_on_import() -> None:
    """No folder is scanned for plug-ins (pkgutil, importlib over a directory listing), and
    no module reads the plug-ins while it is imported (a parser table or a registry built at
    import time): the registry's list is read on first use."""
    scans, eager = [], []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        scans += [f"{_rel(path)}:{line}: {name}" for line, name in _imported(tree, _dotted(path))
                  if name == "pkgutil" or name.startswith("pkgutil.")]
        eager += [f"{_rel(path)}:{line}: {name}()" for line, name in _module_level_calls(tree)
                  if name in {"vendors", "platforms", "parsers", "views", "listings", "pair_tools", "copy_benches", "scale_out_tools",
                              "iter_modules", "walk_packages", "entry_points"}]
    assert not scans, scans
    assert not eager, eager


def test_third_party_vendors_come_through_the_same_hook_as_the_builtins(monkeypatch, tmp_path) -> None:
    """A vendor named in the ``sncheck.vendors`` entry-point group is read by the function
    that reads the built-in list; two plug-ins with one name, or an entry that is no
    Vendor, are refused."""
    import sys
    from importlib.metadata import EntryPoint

    from sncheck.errors import ConfigError
    from sncheck.vendors import registry

    (tmp_path / "acme_plugin.py").write_text(
        "from sncheck.vendors.base import Platform, Vendor\n"
        "P = Platform(name='acme-x1', vendor='acme', description='a test vendor', cards_per_host=2)\n"
        "VENDOR = Vendor(name='acme', commands={}, facts={}, views={}, platforms={P.name: P})\n"
        "TWIN = Vendor(name='nvidia', commands={}, facts={}, views={}, platforms={})\n"
        "NOT_ONE = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = registry.ENTRY_POINT_GROUP

    def found(*values: str):
        return lambda group=None: [EntryPoint(f"ep{i}", v, group) for i, v in enumerate(values)]

    try:
        monkeypatch.setattr(registry, "entry_points", found("acme_plugin:VENDOR"))
        registry.vendors.cache_clear()
        registry.platforms.cache_clear()
        assert list(registry.vendors()) == ["nvidia", "amd", "ascend", "acme"]
        assert registry.platform("acme-x1").vendor == "acme"
        monkeypatch.setattr(registry, "entry_points", found("acme_plugin:TWIN"))
        registry.vendors.cache_clear()
        with pytest.raises(ConfigError, match="two vendor plug-ins are named 'nvidia'"):
            registry.vendors()  # a second plug-in named nvidia is not taken
        monkeypatch.setattr(registry, "entry_points", found("acme_plugin:NOT_ONE"))
        registry.vendors.cache_clear()
        with pytest.raises(ConfigError, match="not a sncheck Vendor"):
            registry.vendors()  # nor an entry that is no Vendor
    finally:
        monkeypatch.undo()
        sys.modules.pop("acme_plugin", None)
        registry.vendors.cache_clear()
        registry.platforms.cache_clear()
    assert group == "sncheck.vendors" and "acme" not in registry.vendors()
