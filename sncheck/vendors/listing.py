"""Whether a parsed listing is whole: the records each view lists, and the count a judge expects.

Many tool outputs can end after any record (``amd-smi``, ``npu-smi``, ``ibstat``'s next CA,
``nvlink -e``'s next GPU): an output cut exactly between two records reads as a shorter,
whole output. Two things catch that class, and :func:`check` applies both:

- **the shape of the last record**: a cut can only shorten the end, so the last record of a
  listing must hold every field the other records all hold (a GPU without the links, a CA
  without the ports, a matrix row without the columns the others have). A device matrix
  must have a row for every column it names (the header states the devices).
- **the expected count**: where the format states nothing, the judge does. In a run that is
  the inventory (the cards of a host); on the command line ``sncheck parse --expect N``.
  A listing with another number of records is "not judged: listing has N records,
  expected M", never a pass.

A :class:`Listing` says, per view, what one record is (``noun``) and where the records are in
the parsed JSON (``counted``: the record count that must equal the expectation; ``whole``: the
lists or tables whose last record is checked; ``square``: device x device matrices). A path
is dotted; ``*`` stands for every value of a mapping. Each view declares its listing beside
its parser (:class:`sncheck.vendors.base.View`, in its vendor's plug-in or, for the shared
tools, in :mod:`sncheck.vendors.parsers`, whose ``listings()`` gathers them for :func:`check`).
A view without one keeps its own end-marker checks only (a log, ``kernel-log``, is a
stream: there is no count to expect).
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sncheck.vendors import jsonprefix

# Keys every view carries that are not records.
_META = frozenset({"tool", "errors", "faults", "warnings", "version", "format", "info"})


@dataclass(frozen=True)
class Listing:
    noun: str                    # what one record is, for the message ("GPU", "CA", "row", "field")
    counted: tuple[str, ...]     # paths whose record count must equal the expectation
    whole: tuple[str, ...] = ()  # further paths whose last record must be whole (counted ones are)
    square: tuple[str, ...] = ()  # device x device matrices: a row for every column
    required: tuple[str, ...] = ()  # paths every output of the format prints (never null there)
    ident: tuple[str, ...] = ()  # the fields naming a record of the first counted path: unique
    nested: str = ""             # records that each hold another view's output ("view", "parsed")
    cards: bool = False          # the counted records are the host's cards: a run expects the inventory's
    # lists inside a record whose length the record states itself (ibv_devinfo's ports: its
    # phys_port_cnt, which the parser checks): not compared by place with the other records'
    # (a single-port adapter listed after dual-port ones is whole)
    stated: tuple[str, ...] = ()
    # fields a record may lack by its grammar (iblinkinfo: a Down port has no far end): not
    # compared with the other records' (the parser checks each such record is whole itself)
    optional: tuple[str, ...] = ()
    # fields that each name one device on their own (a bus id, a UUID): one under two idents is
    # one device listed twice (two reads spliced, one GPU answered twice: hostile round 18, H18-10)
    unique: tuple[str, ...] = ()
    # values their printer always prints in one form: (records path, field-name pattern, value pattern).
    # A value outside it (a link layer 'I', a count '', a unit-bearing cell without its unit) is a line
    # cut mid-way whose paste then ended with a newline (cuts15, issue 28): an error naming it, never a value
    formats: tuple[tuple[str, str, str], ...] = ()
    # whole lines the tool's source prints last (nvbandwidth's printInfo footer): a last line without its
    # newline that is one of them, whole, ends a whole output whose file lost only its final newline (an
    # editor, a paste: harvest 28's nvbandwidth v0.8 run); a cut inside it leaves a prefix, no such line
    closing: tuple[str, ...] = ()


FIELDS = ""  # the path of a key-value output's own top-level fields


def _whole_document(body: str, last: str) -> bool:
    """A JSON document that loads (after a command line or preamble the paste carries: from
    the first line that opens it), or XML whose last line closes its root element. A document
    is an object or a list of objects or lists (a tool's records): a list of numbers is a dmesg
    stamp, '[  100.000000]', not one."""
    if last.rstrip().endswith(("}", "]")):
        start = 0 if body.lstrip().startswith(("{", "[")) else \
            next((m.start() for m in re.finditer(r"^[ \t]*[{\[]", body, re.MULTILINE)), -1)
        if start < 0:
            return False
        try:
            doc = jsonprefix.loads(body[start:])
        except (jsonprefix.KeyGivenTwice, jsonprefix.NotFinite):
            return True  # it closes, not cut: its view's reader refuses it, naming the key or the field
        except (ValueError, RecursionError):
            return False
        return isinstance(doc, dict) or isinstance(doc, list) and all(isinstance(d, (dict, list)) for d in doc)
    return bool(re.fullmatch(r"\s*</[\w:.-]+>\s*", last)) and body.lstrip().startswith("<")


def cut_mid_line(body: str, closing: Collection[str] = ()) -> str | None:
    """Tools end every line with a newline. A last line without one was cut mid-way unless it
    ends in a word that also ends another line of the output ("Ethernet", "GB/s") or closes a
    JSON or XML document (whose own parser checks it is whole), or is a table rule the output
    printed whole before, or is one of ``closing``, the whole lines the view's tool prints last
    (:attr:`Listing.closing`). A number, a key without its value or trailing blanks there are a cut."""
    if not body or body.endswith("\n"):
        return None
    last = body.rsplit("\n", 1)[-1]
    if not last.strip():
        return None  # trailing blanks only
    if last in closing:
        return None
    token = last.split()[-1]
    if _whole_document(body, last):
        return None
    rest = body[: len(body) - len(last)]
    # A table's closing rule as wide as a rule the output printed whole before, with its column
    # joints in the same places ("+----+----+" under "|----+----+", "|====+====|"): a rule cut
    # short is narrower than every rule of its table.
    if re.fullmatch(r"[+\-=|]+", last.strip()) and _rule(last) in {_rule(ln) for ln in rest.splitlines()}:
        return None
    # A whole word: one that ends another line of this output too ("... : Ethernet"); not a
    # number, a key without its value, a run of table rules ("|", "====") or trailing blanks.
    if not last[-1].isspace() and not token[-1].isdecimal() and not token.endswith(":") \
            and re.search(r"[A-Za-z]", token) \
            and _ends_a_line(rest, token):
        return None
    return mid_line(last)


def mid_line(last: str) -> str:
    """The error of an output whose last line, ``last``, was cut mid-way (a view whose grammar
    tells a cut line :func:`cut_mid_line` cannot, ``kernel_aer.cut_short``, says it so too)."""
    return f"the output ends mid-line ({last.strip()[-40:]!r}, no newline): cut short"


# Views whose output is a log of other programs' text (a driver's, a job's): bytes a tool's own
# table never prints may be in a log line, and the view reads each line for what it knows
# (nccl-mnnvl reads the NCCL_DEBUG=INFO log nccl-debug reads).
LOG_VIEWS = frozenset({"kernel-log", "nccl-debug", "nccl-mnnvl", "torch-nccl", "nccl-inspector"})

# Views whose own grammar reads a reporter's "..." (issue 28): a log, where a line left out is a
# shorter log as a cut between lines is (kernel-log, the NCCL and PyTorch logs), and the views whose
# parsers tell an elision over lines that carry no value (a rank list, a legend, a device list, an
# env block) from one over values, saying the latter themselves with :func:`elision`. Every other
# view's output holds a value on every line: a line that is only "..." left some out, and the
# output is not whole. nccl-mnnvl reads a log too, but every line of it may be a rank's MNNVL
# evidence (its flag, its fabric state, the WARN that it is not working): a '...' may hide any of
# them. ethtool -S and hccn_tool -stat print a counter on every line, hccn.conf a device's key.
# (ascend-collected: each section's '...' is judged by the section's own view, in its parser.)
READS_ELISION = (LOG_VIEWS - {"nccl-mnnvl"}) | {"ascend-collected", "nccl-tests", "rccl-tests", "transferbench",
                                               "nvidia-smi-topo", "imex-ctl", "nvbandwidth"}
# Views whose parsers still read round a '...' over values: none (nvlink-errors and nvidia-smi-q
# were the last, until issue 28's audit: their SSH tests serve whole captures now). It stays
# empty: tests/test_elision.py holds it so.
ELISION_OPEN: frozenset[str] = frozenset()
_ELISION = re.compile(r"\s*(?:\.\.\.|\u2026|\[\.\.\.\]|\[\u2026\]|<snip>|\[snip\])\s*", re.IGNORECASE)


def is_elision(line: str) -> bool:
    """Whether ``line`` is a reporter's elision mark alone (``...``, ``…``, ``[...]``, ``<snip>``):
    the one test of it. A view's parser skips such a line (its grammar holds no such line) and
    :func:`elided` says it, once."""
    return bool(_ELISION.fullmatch(line))


def elision(at: int, mark: str, why: str = "") -> str:
    """The one line saying the reporter's ``mark`` on line ``at`` left lines of the output out:
    :func:`elided`'s, and a view's whose parser reads some elisions (:data:`READS_ELISION`) for
    one it cannot read (over value lines), ``at`` then numbered in the text it read
    (``sncheck parse`` renumbers it as the file numbers it: :func:`sncheck.vendors.after_end.in_file`);
    ``why``: what the view knows it stands for ('stands for rows after 64 bytes (maxBytes 128)')."""
    return (f"line {at} is a reporter's {mark.strip()[:40]!r}{f' that {why}' if why else ''}: lines of the output "
            "were left out, it is not whole")


def beside(lines: Sequence[tuple[int, str]], k: int) -> tuple[str, str]:
    """The nearest lines before and after ``lines[k]`` (numbered: :func:`sncheck.vendors.after_end.numbered`)
    that are not blank, stripped ("" where there is none): what a reporter's '...' there stands
    between, for a view whose grammar reads some. (Walked, not sliced: a paste of many '...' is
    not copied again for each.)"""
    prev = next((ln.strip() for _, ln in (lines[i] for i in range(k - 1, -1, -1)) if ln.strip()), "")
    nxt = next((ln.strip() for _, ln in (lines[i] for i in range(k + 1, len(lines))) if ln.strip()), "")
    return prev, nxt


_SAID = 20  # elision lines named one by one; any further ones are counted in one more line


def elided(view: str, body: str, first: int = 1, origins: Sequence[int] | None = None) -> list[str]:
    """Each reporter's ``...`` (``…``, ``[...]``, ``<snip>``) on a line of its own in ``view``'s
    output, where the view does not read it itself (:data:`READS_ELISION`), with its line: lines
    left out. The tools print no such line; a parser reading round it kept the lines it saw and
    read as whole (38 of 69 views did: ibv_devinfo without its board_id, nvidia-smi a GPU
    short). Every one is said, once (the first alone was, issue 28); past the first
    :data:`_SAID`, one line counts the rest (a hostile paste of 100,000 is not 100,000 errors).
    ``first``: the number of ``body``'s first line in the file (after a ``# source:`` header);
    ``origins``: each body line's line in the output, where the delivery dropped or moved lines
    (:func:`sncheck.vendors.delivery.unwrap_lines`: the text outside markdown fences, a
    launcher's tasks regrouped), so the line named is the file's."""
    if view in READS_ELISION or view in ELISION_OPEN:
        return []
    marks = [(first + (origins[i] if origins is not None and i < len(origins) else i), line.strip())
             for i, line in enumerate(body.split("\n")) if _ELISION.fullmatch(line)]
    out = [elision(i, mark) for i, mark in marks[:_SAID]]
    if rest := marks[_SAID:]:
        out.append(f"{len(rest)} more reporter's elision lines (lines {rest[0][0]} to {rest[-1][0]}): "
                   "lines of the output were left out, it is not whole")
    return out


_NOT_TEXT = re.compile("[\x00\ufffd]")


def not_text(view: str, body: str, first: int = 1, origins: Sequence[int] | None = None) -> list[str]:
    """Each line of ``view``'s output holding a NUL byte or bytes that are not UTF-8 (read as
    U+FFFD): no tool's table prints them, so a section header or key holding one was read as
    none (a listing with its "Retired Pages" header corrupted passed: the section unread,
    hostile round 10). The output is not whole; the first :data:`_SAID` lines are named, the
    rest counted. ``first`` and ``origins`` as :func:`elided`."""
    if view in LOG_VIEWS or not _NOT_TEXT.search(body):
        return []
    bad = [first + (origins[i] if origins is not None and i < len(origins) else i)
           for i, line in enumerate(body.split("\n")) if _NOT_TEXT.search(line)]
    out = [f"line {i} holds a NUL byte or bytes that are not UTF-8: not the tool's text, the output is not whole"
           for i in bad[:_SAID]]
    if rest := bad[_SAID:]:
        out.append(f"{len(rest)} more lines (lines {rest[0]} to {rest[-1]}) hold NUL bytes or bytes that are not "
                   "UTF-8: the output is not whole")
    return out


def left_out(view: str, body: str, first: int = 1, origins: Sequence[int] | None = None) -> list[str]:
    """The lines ``view``'s output lost: its reporter's elisions (:func:`elided`) and its lines that are
    not the tool's text (:func:`not_text`); one judgement, of ``sncheck parse`` and the host facts."""
    return elided(view, body, first, origins) + not_text(view, body, first, origins)


def _ends_a_line(text: str, word: str) -> bool:
    """Whether a line of ``text`` ends in ``word`` as a whole word (blanks after it allowed).

    By hand, not ``re.search(r"(?:^|\\s)" + re.escape(word) + ...)``: compiling a pattern
    from a 1 MB last "word" (a log of one character, no newline) took 2 s."""
    n = len(word)
    for line in text.split("\n"):
        line = line.rstrip(" \t")
        if line.endswith(word) and (len(line) == n or line[-n - 1].isspace()):
            return True
    return False


def _rule(line: str) -> str:
    return line.rstrip().replace("|", "+").replace("=", "-")


def _at(data: Any, path: str) -> list[tuple[str, Any]]:
    """(where, value) for every value at a dotted ``path`` (``*``: each value of a mapping);
    the empty path is the output's own fields."""
    if path == FIELDS:
        return [("fields", {k: v for k, v in data.items() if k not in _META and v is not None})] \
            if isinstance(data, dict) else []
    found: list[tuple[str, Any]] = [("", data)]
    for part in path.split("."):
        nxt: list[tuple[str, Any]] = []
        for where, value in found:
            if part == "*" and isinstance(value, list):
                items: Any = enumerate(value)
            elif not isinstance(value, dict):
                continue
            else:
                items = value.items() if part == "*" else [(part, value.get(part))] if part in value else []
            nxt += [(f"{where}.{k}" if where else str(k), v) for k, v in items if v is not None]
        found = nxt
    return found


def _records(value: Any) -> list[Any] | None:
    """The records a list or a mapping holds (a mapping's values); None for anything else."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return None


def _leaves(value: Any, prefix: str = "") -> set[str]:
    """The key paths of a record's fields (list positions included: a GPU's 18th link; a list
    of plain values, however long, is one field: the last GPU alone throttling is whole)."""
    if isinstance(value, dict):
        out: set[str] = set()
        for k, v in value.items():
            if k in ("errors", "warnings"):
                continue
            out |= _leaves(v, f"{prefix}.{k}" if prefix else str(k)) or {f"{prefix}.{k}" if prefix else str(k)}
        return out
    if isinstance(value, list):
        if not any(isinstance(v, (dict, list)) for v in value):
            return {prefix} if prefix else set()  # a list of values (active clock reasons): one field
        out = set()
        for i, v in enumerate(value):
            out |= _leaves(v, f"{prefix}[{i}]") or {f"{prefix}[{i}]"}
        return out
    return {prefix} if prefix else set()


def count(spec: Listing | None, data: Any) -> int | None:
    """How many records the listing holds (the first counted path that is present), or None
    when the view has no records to count (``spec`` None)."""
    if spec is None or not isinstance(data, dict):
        return None
    for path in spec.counted:
        for _, value in _at(data, path):
            recs = _records(value)
            if recs is not None:
                return len(recs)
    return 0 if spec.counted else None


def _last_whole(where: str, recs: list[Any], noun: str, stated: tuple[str, ...] = (),
                optional: tuple[str, ...] = ()) -> str | None:
    """The last record holds every field the others all hold; then the same one level down,
    along the last record's own last section (a cut shortens only the tail). Leaves under a
    ``stated`` list or an ``optional`` field are not compared (the record says how long it
    is; the grammar lets a record lack the field)."""
    if len(recs) >= 2 and all(isinstance(r, (dict, list)) for r in recs):
        skip = tuple(f"{name}[" for name in stated + optional) + tuple(f"{name}." for name in optional)

        def leaves(r: Any) -> set[str]:
            found = _leaves(r)
            return {x for x in found if x not in optional and not x.startswith(skip)} if skip else found
        shared = set.intersection(*(leaves(r) for r in recs[:-1]))
        missing = sorted(shared - leaves(recs[-1]))
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            return f"{where}: the last {noun} lacks what every other one has ({shown}): cut short"
    last = recs[-1] if recs else None
    inner = _records(last)
    if inner and isinstance(inner[-1], (dict, list)):
        key = list(last)[-1] if isinstance(last, dict) else len(inner) - 1
        return _last_whole(f"{where}[{len(recs) - 1}]", inner, f"section of the last {noun}"
                           if "section" not in noun else noun) if key is not None else None
    return None


def outside(tool: str, data: Any, formats: tuple[tuple[str, str, str], ...]) -> list[str]:
    """Each value of a field ``formats`` names (:attr:`Listing.formats`) that is not in its printer's
    form: the line it stands on was cut short (its paste ending with a newline all the same)."""
    out = []
    for path, names, form in formats:
        for where, rec in _at(data, path):
            for key, value in rec.items() if isinstance(rec, dict) else ():
                if value is not None and re.fullmatch(names, key) and not re.fullmatch(form, str(value)):
                    out.append(f"{where}: {key} {str(value)!r} is not a value {tool} prints: its line is cut short")
    return out


def _square(where: str, table: Any) -> str | None:
    if not isinstance(table, dict) or not all(isinstance(r, dict) for r in table.values()):
        return None
    columns = {c for row in table.values() for c in row}
    rows = set(table)
    if not rows & columns:  # a matrix of sources x destinations that are not the same devices
        return None
    missing = sorted(columns - rows)
    if missing:
        return f"{where}: the matrix names {', '.join(missing[:3])} but has no row for it: cut short"
    return None


def _missing(data: Any, path: str) -> list[str]:
    """Where a required ``path`` is absent or null: each record at its last ``*`` must hold the
    rest (every link of every GPU its three counters); a path without ``*``, the output."""
    head, star, rest = path.rpartition(".*.")
    parents = _at(data, head + ".*") if star else [("", data)]
    leaf = rest if star else path
    return [where or leaf for where, rec in parents if not _at(rec, leaf)]


def _placeholder(value: Any) -> bool:
    """A value that names no device: all zeros (an SR-IOV function's node GUID before it is set,
    ``0x0000000000000000``, ``0000:0000:0000:0000``): many devices print it alike."""
    return isinstance(value, str) and not re.search(r"[1-9a-fA-F]", value.lower().removeprefix("0x"))


def _twice(spec: Listing, data: Any) -> list[str]:
    """A device listed twice (a splice, or a record repeated): its naming fields repeat."""
    seen: set[tuple[Any, ...]] = set()
    for _, value in _at(data, spec.counted[0])[:1]:
        for rec in _records(value) or []:
            if not isinstance(rec, dict):
                continue
            key = tuple(rec.get(k) for k in spec.ident)
            if any(v is None for v in key):
                continue
            if key in seen:
                name = " ".join(str(v) for v in key)
                return [f"{spec.noun} {name} is listed twice: output spliced or repeated"]
            seen.add(key)
    for field in spec.unique:
        values = [rec.get(field) for _, value in _at(data, spec.counted[0])[:1] for rec in _records(value) or []
                  if isinstance(rec, dict) and rec.get(field) is not None and not _placeholder(rec[field])]
        met: set[Any] = set()
        for v in values:
            if v in met:
                return [f"{spec.noun} {field} {v} is listed twice: output spliced or repeated"]
            met.add(v)
    return []


def check(tool: str, data: Any, expect: int | None = None, *,
          listings: Mapping[str, Listing]) -> list[str]:
    """What the ``tool`` view's output shows cut short or other than expected (each an error
    for ``failures``); ``listings``: every view's Listing (a nested section's view is looked up there)."""
    spec = listings.get(tool)
    if spec is None or not isinstance(data, dict):
        # an expectation nothing can check is not judged, never a pass
        return [] if expect is None else [f"not judged: the {tool} view has no records to count "
                                          f"(its View declares no Listing), so --expect {expect} cannot be checked"]
    out: list[str] = []
    for path in dict.fromkeys(spec.counted + spec.whole):
        for where, value in _at(data, path):
            recs = _records(value)
            if recs is not None and (msg := _last_whole(where, recs, spec.noun, spec.stated, spec.optional)):
                out.append(msg)
    for path in spec.square:
        for where, value in _at(data, path):
            if msg := _square(where, value):
                out.append(msg)
    if spec.ident or spec.unique:
        out += _twice(spec, data)
    out += outside(tool, data, spec.formats)
    for path in spec.required:
        if gaps := _missing(data, path):
            out.append(f"{gaps[-1]}: no {path.rsplit('.', 1)[-1]}, which the format always prints: cut short")
    if spec.nested:  # each record holds another command's output: a listing of its own view
        for i, sec in enumerate(data.get(spec.nested) or []):
            if isinstance(sec, dict) and sec.get("view") and isinstance(sec.get("parsed"), dict):
                out += [f"{spec.nested}[{i}] ({sec['view']}): {m}"
                        for m in check(str(sec["view"]), sec["parsed"], listings=listings)]
    if expect is not None:
        n = count(spec, data)
        if n is None:
            out.append(f"not judged: the {tool} view counts no {spec.noun} records, so --expect {expect} "
                       "cannot be checked")
        elif n != expect:
            out.append(f"not judged: listing has {n} {spec.noun} records, expected {expect}")
        for path in spec.counted[1:]:  # every further table of the same devices holds them all
            for where, value in _at(data, path):
                recs = _records(value)
                if recs is not None and len(recs) != expect:
                    out.append(f"not judged: {where} has {len(recs)} {spec.noun} records, expected {expect}")
    return list(dict.fromkeys(out))
