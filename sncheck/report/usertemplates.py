"""A user's report templates (``--templates DIR``) as input: sandboxed, checked when they load.

A template directory is configuration, and configuration runs no command: the report's
environment is Jinja's immutable sandbox, where a template formats what the run gives it and
reaches no Python attribute beyond (``cycler.__init__.__globals__.os`` rendered a shell command
with the plain environment; hostile round 25, H25-01). Everything else that is wrong with a
user's template is said when the command starts, before anything is measured, at the template's
file and line (:func:`check_templates`): a template that does not compile, an include or extends
of a name no template directory holds (a path out of it among them), and a template that
includes itself through any chain (the render recursed until Python's limit). What only
rendering can tell (an unsafe attribute, a division by zero in a user's expression) is said at
the user template's line too (:func:`user_template_error`), exit 2, never an internal error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from jinja2 import BaseLoader, Environment, TemplateNotFound, TemplateSyntaxError, meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from sncheck.errors import ConfigError

PAGE = "report.html"  # the page every report renders; what it includes is checked from it


def sandboxed(loader: BaseLoader, **options: Any) -> Environment:
    """The report's environment: Jinja's immutable sandbox over ``loader``."""
    return ImmutableSandboxedEnvironment(loader=loader, **options)


def check_templates(env: Environment, template_dirs: Sequence[str | os.PathLike]) -> None:
    """Refuse (ConfigError at the template's file and line) what the page renders from a user's
    directory that does not compile, includes or extends a name no directory holds, or is part
    of a chain of includes reaching itself. Only what the page reaches is read (never a walk of
    the directory: ``--templates /`` is the page's few names)."""
    roots = _roots(template_dirs)
    refs: dict[str, list[str]] = {}
    files: dict[str, str] = {}

    def refs_of(name: str) -> list[str]:
        if name not in refs:
            source, filename, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
            files[name] = str(filename or name)
            try:
                tree = env.parse(source, name, filename)
            except TemplateSyntaxError as e:
                raise ConfigError(f"template does not compile: {e.message}", f"{files[name]}:{e.lineno}") from e
            refs[name] = []
            for ref in meta.find_referenced_templates(tree):
                if ref is None:
                    raise ConfigError("includes a template by a name it computes: name the template it "
                                      "includes (a written string)", files[name])
                try:
                    env.loader.get_source(env, ref)  # type: ignore[union-attr]
                except TemplateNotFound as e:
                    raise ConfigError(f"includes {ref!r}, which no template directory holds (a name "
                                      "inside one of them, or a built-in template's)", files[name]) from e
                refs[name].append(ref)
        return refs[name]

    done: set[str] = set()

    def walk(name: str, chain: tuple[str, ...]) -> None:
        for ref in refs_of(name):
            if ref in chain:
                loop = chain[chain.index(ref):] + (ref,)
                mine = next((n for n in loop if _under(files.get(n, ""), roots)), ref)
                raise ConfigError(f"{mine} includes itself ({' -> '.join(loop)}): the page would never end",
                                  files.get(mine, mine))
            if ref not in done:
                walk(ref, (*chain, ref))
        done.add(name)

    walk(PAGE, (PAGE,))


def _roots(template_dirs: Sequence[str | os.PathLike]) -> list[str]:
    return [os.path.abspath(d) + os.sep for d in template_dirs]


def _under(filename: str, roots: list[str]) -> bool:
    return bool(filename) and any(os.path.abspath(filename).startswith(r) for r in roots)


def user_template_error(e: BaseException, template_dirs: Sequence[str | os.PathLike]) -> ConfigError | None:
    """The error a render raised, as a ConfigError at the user template's line it came from, or
    None where no user template is on its way (sncheck's own templates: an internal error)."""
    roots = _roots(template_dirs)
    where = None
    tb: TracebackType | None = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if _under(name, roots):
            where = f"{name}:{tb.tb_lineno}"  # the last (innermost) user template frame
        tb = tb.tb_next
    if where is None:
        return None
    return ConfigError(f"the report template failed: {type(e).__name__}: {e}", where)


def rendered(render: Callable[[], str], template_dirs: Sequence[str | os.PathLike]) -> str:
    """``render()``, an error raised from a user's template said at its line."""
    try:
        return render()
    except Exception as e:  # noqa: BLE001 -- anything a user's template raised is that template's error
        said = user_template_error(e, template_dirs) if template_dirs else None
        if said is None:
            raise
        raise said from e
