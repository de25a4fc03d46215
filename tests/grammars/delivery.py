"""The ways people deliver a real capture, crossed with every parse view (issue 28, item 2's list).

Each :class:`Transform` turns a capture's text (its ``# source:`` header removed: an operator
pastes the tool's output) into the bytes a reader receives: wrapped in a GitHub issue, quoted
in a mail, numbered by ``cat -n``, prefixed by a launcher, re-encoded by an editor. A transform
that keeps every character of the output (``lossy`` false) must parse to the same JSON and exit
status as the plain capture; one that may destroy information (a hard wrap, a reporter's
``[snip]``) must read the same values or refuse (exit 1 or a parse error), never exit 0 on
values the plain capture does not hold, and never raise anything but a parse error.

:func:`matrix` crosses every view's real captures (``fixtures/real*/`` and
``../shared/fixtures/``: every ``expect.yaml`` entry whose tool is a view; a view with none yet, the
outputs its grammar's generator writes, ``tests/grammars/``) with every transform.

    PYTHONPATH=$PWD python3 tests/grammars/delivery.py      # the matrix: views x transforms read right
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.delivery import decode
from sncheck.vendors.parsers import failures, parse_text, strip_source_header, views



@dataclass(frozen=True)
class Transform:
    name: str
    apply: Callable[[str], bytes]
    lossy: bool = False   # may destroy information: the same values or a refusal
    stamp: bool = False   # adds a timestamp: not for a view whose grammar has its own (kernel-log)
    tail: bool = False    # adds lines after the output: only for a capture whose last line is whole
    hashed: bool = False  # a comment's '# ': only for an output with a '#' line of its own (sncheck.vendors.delivery)


def applies(t: Transform, view: str, text: str) -> bool:
    """Whether ``t`` is a delivery of ``text`` that the view's reader can undo (see the fields)."""
    return not ((t.stamp and views()[view].stamped) or (t.tail and not text.endswith("\n"))
                or (t.hashed and not any(ln.startswith("#") for ln in text.split("\n"))))


def _lines(text: str) -> tuple[list[str], bool]:
    lines = text.split("\n")
    ended = lines[-1] == ""
    if ended:
        lines.pop()
    return lines, ended


def _each(fn: Callable[[int, str], str], *, head: tuple[str, ...] = (), tail: tuple[str, ...] = (),
          eol: str = "\n", encoding: str = "utf-8") -> Callable[[str], bytes]:
    def apply(text: str) -> bytes:
        lines, ended = _lines(text)
        out = [*head, *(fn(i, ln) for i, ln in enumerate(lines)), *tail]
        return (eol.join(out) + (eol if ended or tail else "")).encode(encoding)
    return apply


def _text(fn: Callable[[str], str], encoding: str = "utf-8") -> Callable[[str], bytes]:
    return lambda text: fn(text).encode(encoding)


def _fence(opener: str, closer: str) -> Callable[[str], bytes]:
    return _text(lambda t: f"Output below:\n\n{opener}\n{t.rstrip(chr(10))}\n{closer}\n\nThanks!\n")


def _details(tag: str) -> Callable[[str], bytes]:
    open_, close = {"pre": ("<pre>", "</pre>"), "code": ("<pre><code>", "</code></pre>")}[tag]
    return _text(lambda t: (f"<details>\n<summary>nvidia-smi output</summary>\n\n{open_}{html.escape(t.rstrip(chr(10)))}"
                            f"\n{close}\n</details>\n"))


def _wrap(width: int) -> Callable[[str], bytes]:
    def fn(text: str) -> str:
        lines, ended = _lines(text)
        out = []
        for ln in lines:
            out += [ln[i:i + width] for i in range(0, len(ln), width)] or [""]
        return "\n".join(out) + ("\n" if ended else "")
    return _text(fn)


def _snip(mark: str) -> Callable[[str], bytes]:
    def fn(text: str) -> str:
        lines, ended = _lines(text)
        if len(lines) < 6:
            return text
        a = len(lines) // 3
        return "\n".join([*lines[:a], mark, *lines[a + 2:]]) + ("\n" if ended else "")
    return _text(fn)


def _pager_more(text: str) -> str:
    lines, ended = _lines(text)
    k = min(len(lines), 23)
    pct = 100 * k // max(1, len(lines))
    return "\n".join([*lines[:k], f"--More--({pct}%)", *lines[k:]]) + ("\n" if ended else "")


def _nl(text: str) -> str:
    # nl numbers the non-blank lines only; a blank one is its width and separator in blanks
    out, n = [], 0
    for ln in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        n += bool(ln.strip())
        out.append(f"{n:6d}\t{ln}" if ln.strip() else "       ")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _smart(text: str) -> str:
    return re.sub(r"'([^'\n]*)'", "\u2018\\1\u2019", re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", text))


def _nbsp(text: str) -> str:
    # a web page's copy: the runs of blanks that align columns come as NBSP
    return re.sub(r"(?<=\S)  +", lambda m: "\u00a0" * len(m.group(0)), text)


def _zero_width(text: str) -> str:
    return "\n".join(f"\u200b{ln}" if i % 3 == 0 and ln else ln for i, ln in enumerate(text.split("\n")))


def _ansi(i: int, ln: str) -> str:
    return f"\x1b[0;3{i % 7 + 1}m{ln}\x1b[0m" if ln.strip() else ln


def _script(text: str) -> bytes:
    lines, _ = _lines(text)
    head = ['Script started on 2025-03-03 12:00:00+00:00 [TERM="xterm-256color" TTY="/dev/pts/3" COLUMNS="200" LINES="50"]',
            "\x1b]0;root@node7: ~\x07root@node7:~# toool\b\b\b\bool\x1b[K"]
    tail = ["\x1b]0;root@node7: ~\x07root@node7:~# exit", "",
            'Script done on 2025-03-03 12:00:09+00:00 [COMMAND_EXIT_CODE="0"]']
    return ("\r\n".join([*head, *lines, *tail]) + "\r\n").encode()


TRANSFORMS: tuple[Transform, ...] = (
    # GitHub issue wrapping
    Transform("fence ```console", _fence("```console", "```"), tail=True),
    Transform("fence ```text", _fence("```text", "```"), tail=True),
    Transform("fence ~~~", _fence("~~~", "~~~"), tail=True),
    Transform("<details><pre>", _details("pre"), tail=True),
    Transform("<details><pre><code>", _details("code"), tail=True),
    Transform("HTML entities", _text(html.escape)),
    # quoting
    Transform("> quoted", _each(lambda i, ln: f"> {ln}" if ln else ">")),
    Transform(">> quoted", _each(lambda i, ln: f">> {ln}" if ln else ">>")),
    Transform("| quoted", _each(lambda i, ln: f"| {ln}" if ln else "|")),
    Transform("# commented (a script's header)", _each(lambda i, ln: f"# {ln}" if ln else "#"), hashed=True),
    Transform("4-space indent", _each(lambda i, ln: f"    {ln}" if ln else ln)),
    # pagers, line numbers, typescripts, terminals
    Transform("cat -n", _each(lambda i, ln: f"{i + 1:6d}\t{ln}")),
    Transform("nl", _text(_nl)),
    Transform("less (END)", _text(lambda t: t.rstrip("\n") + "\n(END)\n"), tail=True),
    Transform("more --More--", _text(_pager_more)),
    Transform("script(1) typescript", _script, tail=True),
    Transform("hard wrap 80", _wrap(80), lossy=True),
    Transform("hard wrap 120", _wrap(120), lossy=True),
    # launchers
    Transform("srun --label", _each(lambda i, ln: f"0: {ln}")),
    Transform("mpirun --tag-output", _each(lambda i, ln: f"[1,0]<stdout>:{ln}")),
    Transform("pdsh host:", _each(lambda i, ln: f"node07: {ln}")),
    Transform("clush host:", _each(lambda i, ln: f"gpu-a17.cluster: {ln}")),
    Transform("ansible", _text(lambda t: "node07 | CHANGED | rc=0 >>\n" + t)),
    Transform("kubectl logs --prefix", _each(lambda i, ln: f"[pod/nccl-test-0/worker] {ln}")),
    Transform("docker compose", _each(lambda i, ln: f"worker-1  | {ln}")),
    Transform("journal short-iso", _each(lambda i, ln: f"2025-03-03T12:00:{i % 60:02d}+0000 node07 kernel: {ln}"), stamp=True),
    Transform("journal short-precise", _each(lambda i, ln: f"Mar 03 12:00:{i % 60:02d}.{i:06d} node07 kernel: {ln}"), stamp=True),
    Transform("dmesg -T", _each(lambda i, ln: f"[Mon Mar  3 12:00:{i % 60:02d} 2025] {ln}"), stamp=True),
    Transform("dmesg --time-format iso", _each(lambda i, ln: f"2025-03-03T12:00:{i % 60:02d},{i:06d}+00:00 {ln}"), stamp=True),
    # encodings and editors
    Transform("UTF-8 BOM", _text(lambda t: "\ufeff" + t)),
    Transform("UTF-16 LE BOM", _text(lambda t: "\ufeff" + t, "utf-16-le")),
    Transform("Windows-1252 smart quotes", lambda t: _smart(t).encode("cp1252", errors="replace"), lossy=True),
    Transform("NBSP", _text(_nbsp)),
    Transform("zero-width spaces", _text(_zero_width)),
    Transform("CRLF", _each(lambda i, ln: ln, eol="\r\n")),
    Transform("lone CR", _each(lambda i, ln: ln, eol="\r")),
    Transform("tabs to spaces", _text(lambda t: t.expandtabs(8))),
    Transform("trailing whitespace stripped", _each(lambda i, ln: ln.rstrip())),
    Transform("ANSI colour", _each(_ansi)),
    Transform("a reporter's ...", _snip("..."), lossy=True),
    Transform("a reporter's [snip]", _snip("[snip]"), lossy=True),
)


def outcome(view: str, raw: bytes) -> tuple[int, Any]:
    """(exit status, parsed JSON or None) as ``sncheck parse VIEW FILE`` gives them; any exception
    but a parse error is raised (a traceback)."""
    try:
        data = parse_text(view, decode(raw))
    except ParseError:
        return 1, None
    return (1 if failures(data) else 0), data


def captures() -> Iterator[tuple[str, Path]]:
    """(view, capture) for every expect.yaml entry whose tool is a parse view, each file once."""
    from corpora import CORPORA, named  # noqa: PLC0415 -- tests/ is on the path once run (see __main__)

    known = views()
    seen: set[tuple[str, Path]] = set()
    for corpus in CORPORA:
        for path, view in named(corpus):
            if view in known and path.is_file() and (view, path) not in seen:
                seen.add((view, path))
                yield view, path


def _values(data: Any) -> str:
    """The JSON with the text a view quotes verbatim from its lines (errors, faults) left out:
    the values read."""
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in ("errors", "faults", "warnings")}
    return json.dumps(data, sort_keys=True, default=str)


def judge(view: str, text: str, t: Transform) -> str | None:
    """None when ``t``'s delivery of ``text`` reads right, else why not (one line)."""
    code, data = outcome(view, text.encode())
    try:
        got_code, got = outcome(view, t.apply(text))
    except Exception as e:  # noqa: BLE001 -- a traceback is the finding
        return f"raises {type(e).__name__}: {str(e)[:120]}"
    if got_code == code and _values(got) == _values(data):
        return None
    if t.lossy and got_code == 1 and (got is None or got.get("errors") or code == 1):
        return None  # refused, or still failing: never a wrong value that passes
    return f"exit {got_code} (plain {code})" + ("" if _values(got) == _values(data) else ", values differ")


def samples(per_view: int) -> dict[str, list[tuple[str, str]]]:
    """view -> up to ``per_view`` (name, text) of it: its real captures, or where the corpora hold
    none (the view has no ``expect.yaml`` entry yet), the first outputs its grammar's generator writes."""
    from grammars import variants  # noqa: PLC0415 -- the generators load on first use

    out: dict[str, list[tuple[str, str]]] = {}
    for view, path in captures():
        if len(got := out.setdefault(view, [])) < per_view:
            got.append((path.name, strip_source_header(path.read_text(encoding="utf-8", errors="replace"))))
    for view in views():
        if view not in out:
            out[view] = [(f"generated: {v.name}", v.text) for v in variants(view)[:per_view] if not v.hints]
    return out


def matrix(per_view: int = 3) -> dict[str, dict[str, list[str]]]:
    """view -> transform -> the samples (up to ``per_view`` of each view) it reads wrong, one line each."""
    out: dict[str, dict[str, list[str]]] = {}
    for view, texts in sorted(samples(per_view).items()):
        out[view] = {t.name: [] for t in TRANSFORMS}
        for name, text in texts:
            for t in TRANSFORMS:
                if not applies(t, view, text):
                    continue
                if (why := judge(view, text, t)) is not None:
                    out[view][t.name].append(f"{name}: {why}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: corpora, grammars
    per = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    m = matrix(per)
    cells = sum(len(row) for row in m.values())
    right = sum(1 for row in m.values() for bad in row.values() if not bad)
    for t in TRANSFORMS:
        wrong = [v for v, row in m.items() if row[t.name]]
        print(f"{t.name:32s} {len(m) - len(wrong):3d}/{len(m)}  {' '.join(wrong)[:150]}")
    if "-v" in sys.argv:
        for v, row in m.items():
            for name, bad in row.items():
                for b in bad:
                    print(f"  {v} | {name} | {b}")
    print(f"views x transforms read right: {right} of {cells} ({len(m)} views x {len(TRANSFORMS)} transforms)")
