"""How people deliver a tool's output, undone before any view reads it (one home for it).

A tool prints its grammar; what reaches ``sncheck parse`` (or a run's fact check) is that
grammar wrapped by whatever carried it. :func:`unwrap` removes each wrapping that is
certain, so every view reads the tool's own lines:

- the file's encoding (:func:`decode`: a BOM, UTF-16 with its BOM, a Windows-1252 save);
- terminal escape codes (colour, underline, OSC titles) and CR LF / lone CR line ends; what a
  web page or an editor puts in a copy (zero-width spaces, NBSP, typographic quotes), a
  backspace's erasure; a pager's ``(END)`` / ``--More--(45%)``; a ``script(1)`` typescript's
  ``Script started/done on`` lines and its prompt lines;
- GitHub's ``<details><pre>`` (a ``<pre>``, with its ``<code>``, is a fence) and HTML entities
  (a text that holds an entity and no ``<`` or ``>`` but those tags is escaped);
- markdown code fences (```` ``` ````, ``~~~``): only the fenced lines are the output (an
  unclosed fence runs to the end: a paste cut short keeps what it has; a paste copied from
  inside a fence, its opener left behind, ends at the first fence, which closes it); a whole line wrapped in
  inline code (`` `...` ``, one backtick each side) is that line;
- ``> `` and ``| `` quoting (mail, GitHub, forums; ``| `` not where every line ends with
  ``|``: a table's rows), a script comment's ``# `` (only where a line behind it is itself one of
  the tool's ``#`` lines: ``# # Port counters``), as many levels as every line has, ``cat -n`` / ``nl`` numbers
  (counting up by one), and the indentation every line shares (a paste nested in a markdown list);
- ansible's ``host | CHANGED | rc=0 >>`` header before a host's output;
- launcher labels on every line: ``srun --label`` (``0: ``, right-aligned `` 7: ``),
  ``mpirun --tag-output`` (``[1,0]<stdout>:``), torchrun's ``--tee`` (``[default0]:``, elastic's TailLog), MPICH / Intel MPI ``-prepend-rank``
  (``[0] ``; not before an NCCL WARN's file and line, ``[1] FILE:LINE NCCL WARN``: that is NCCL's
  own device field, the line quoted from it on), a remote runner's host and stream (Fabric's ``[node7] out: ``,
  ``nid005113 out: ``), ``kubectl logs --prefix`` (``[pod/x/c] ``), ``docker compose``
  (``svc-1  | ``), pdsh / clush's ``node7: `` (a host name has a digit or a dot; never
  ``nvidia-nvswitch0: ``, the kernel's own). Several tasks' lines are regrouped task by task, in the order each first
  printed, so one task's output reads contiguously;
- a timestamp on every line: ``dmesg`` (``[  12.345678]``), ``dmesg -T`` / ``--ctime``
  (``[Mon Jan  2 03:04:05 2025]``), ISO (``dmesg --time-format iso``, ``kubectl logs
  --timestamps``; ``journalctl -o short-iso`` with its ``host unit[pid]:`` or ``host
  kernel:``), the journal's ``Jan 02 03:04:05 host unit[pid]:``. A view whose own grammar
  carries the time (``kernel-log``: ``View.stamped``) keeps it.

One wrapping may sit inside another (a quote inside a launcher's label): up to four rounds.
A prefix is removed only when *every* line carries one: a log where some lines merely look
like it (``1: ...`` in a table) is left alone. Lines a reporter put in for elided text
(``...``, ``[...]``, ``<snip>``) and a last line without its newline (a cut, which the view
reports) need not carry the prefix; a cut last line that is only a prefix stays as it came (its
text was cut: taking the prefix would leave a whole-looking text). Tabs turned into spaces and a reporter's ``...`` are
the parsers' business: they read any run of blanks as one separator and skip elision lines
where their grammar allows.
"""

from __future__ import annotations

import html
import re

# Terminal control sequences a saved log may hold: CSI (colours, underline: ESC [ 4 m),
# OSC (titles, links: ESC ] ... BEL or ESC \\), and the two-byte escapes (ESC =, ESC >).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-Z\\\\-_=>]")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w.+-]*[ \t]*$")
_QUOTE = re.compile(r"^[ \t]*> ?")
# a shell or Python comment's '# ' on every line (an output kept in a script's header, harvest 29's perfquery): taken
# only where a line behind it is itself one of the tool's '#' lines ('# # Port counters: ...'), which no tool's own
# all-'#' text has (nccl-tests' header excerpt: '# nThread', '#  Rank'; ibqueryerrors' summary: '##')
_HASH_QUOTE = re.compile(r"^[ \t]*#(?: |$)")
# a whole line a reporter wrapped in markdown's inline code (one backtick each side, none inside:
# nccl-issue296's "`init.cc:1247 NCCL WARN Mismatched collective detected ...`"); no tool prints one
_INLINE_CODE = re.compile(r"^[ \t]*`([^`\n]+)`[ \t]*$")
ELISION = re.compile(r"^\s*(?:\.\.\.+|…|\[\.\.\.\]|\(\.\.\.\)|<snip>|\[snip\]|\[output truncated\]|"
                     r"\[\.\.\. ?\d* ?(?:more )?lines?.*\])\s*$", re.IGNORECASE)
# A torch label's shape, '[NAMEN]' (one home: delivery takes torchrun's off; the torch-nccl view reads
# past c10's '[rankN]:' and a torchrun one where not every line carries it)
TORCH_LABEL = r"\[[A-Za-z_][\w-]*?\d+\]"
# (regex, group naming the task or None). Labels first: srun's "0: " would also take
# the hour of "03:04:05", which no label regex below can meet (a label is followed by a blank).
_LABELS = (
    re.compile(r"^(?P<task>\[\d+,\d+\])<std(?:out|err)>: ?"),  # mpirun --tag-output (ORTE ':', PRRTE ': ')
    re.compile(r"^ *(?P<task>\d+):(?: |$)"),                    # srun --label ("0:" alone: a blank line)
    # torchrun --tee / --redirects: elastic's TailLog header '[{role}{local_rank}]:' before every line, no blank
    # ('[default0]:'); never c10's own '[rankN]:' (the torch-nccl view's: the process's global rank)
    re.compile(rf"^(?P<task>(?!\[rank\d){TORCH_LABEL}):"),
    # mpiexec -prepend-rank; not NCCL's own '[DEV] ' before a WARN's FILE:LINE ('[1] misc/shmutils.cc:103 NCCL
    # WARN': an NCCL line quoted from its device field on, nccl-issue1518): under the launcher that line
    # would read '[1] HOST:PID:TID [1] FILE:LINE ...' ('[0] NCCL INFO ...' stays ambiguous: a bare quote's label)
    re.compile(r"^(?P<task>\[\d+\]) (?![\w./+-]+:\d+ (?:\(\w+\) )?NCCL WARN )"),
    # a remote runner's host and stream (Fabric's "[host] out: ", a job log's "nid005113 out: "):
    # the stream word makes it certain (a bare "name: " is also a kernel device's own prefix)
    re.compile(r"^(?P<task>\[?[A-Za-z0-9][\w.-]*\]?) (?:out|err): ?"),
    re.compile(r"^(?P<task>\[pod/[^\]\s]+\]) "),                 # kubectl logs --prefix
    re.compile(r"^(?P<task>[A-Za-z0-9][\w.-]*) +\| ?"),          # docker compose logs ('svc-1  | ')
    # pdsh / clush's 'host: ': a host name has a digit or a dot (node07, gpu-a17.cluster; a tool's
    # own 'key: ' on every line has neither), never the kernel's 'nvidia-nvswitch0: '
    re.compile(r"^(?!nvidia-nvswitch\d)(?P<task>[A-Za-z][\w-]*(?:\d[\w-]*(?:\.[\w-]+)*|(?:\.[\w-]+)+)): "),
)
# ansible's ad-hoc header before each host's output ('node7 | CHANGED | rc=0 >>')
_ANSIBLE = re.compile(r"^[\w.-]+ \| (?:CHANGED|SUCCESS|FAILED|UNREACHABLE!?) \| rc=-?\d+ >>\s*$")
# '| ' quoting (a forum's, a chat's): not a table's own '| ... |' rows (nvidia-smi's box pasted alone)
_BAR_QUOTE = re.compile(r"^\|(?: |$)")
# cat -n's '     1\t' and nl's (a blank line: blanks only), numbers counting up by one
_NUMBERED = re.compile(r"^ *(\d+)\t")
_HOST_UNIT = r" [A-Za-z0-9][\w.-]* [\w./@-]+(?:\[\d+\])?: ?"  # the journal's "host unit[pid]: "
# After an ISO stamp the host and unit are taken only as journalctl prints them: the unit with
# its [pid], or the kernel's (no pid: its entries have none). An ISO-stamped one-line output
# ("2026-...T... link status: UP", "fec mode: rs FEC mode") has two words and a colon where a
# host and unit would stand: read as the journal's, its key was lost with the stamp.
JOURNAL_UNIT = re.compile(r"[A-Za-z0-9][\w.-]* (?:kernel|[\w./@-]+\[\d+\]): ?")
_JOURNAL_UNIT = " " + JOURNAL_UNIT.pattern
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_STAMPS = (
    re.compile(r"^\[ *\d+\.\d+\] ?"),                                               # dmesg
    re.compile(r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ?"),   # dmesg -T
    re.compile(rf"^{_ISO}{_JOURNAL_UNIT}"),                                          # journalctl -o short-iso
    re.compile(rf"^{_ISO} ?"),                                                       # dmesg --time-format iso
    re.compile(rf"^[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?{_HOST_UNIT}"),     # journalctl, syslog
)

# a shell prompt a reporter pasted with the output: '$', '[user@host dir]#', bash's default
# 'user@host:~/dir$' (a conda env's '(base) ' before it), and the working directory alone ('~$',
# '/opt/rocm#': bash's '\w\$ ', its PROMPTING escapes: \w the directory with $HOME as '~', \$ '#'
# for root else '$'; AMD SMI's README shows '~$ amd-smi static'); what follows it is a command line.
# A prompt lies on one line (readline prints it once, before the command): nothing in it crosses a
# newline, so a MULTILINE search reads each line once ('[' starting many lines searched to the end for
# its ']' from each: amd-smi monitor's command search took 15 s on 200 KB)
PS1 = r"(?:\([\w.-]+\)[ \t]*)?(?:\$|\[[^\]\n]*\][#$]|[\w.-]+@[\w.-]+:[^\s$#]*[#$]|[~/][^\s$#]*[#$])"
# The prompt a pasted command line may stand behind (command_line): PS1's forms and, the command's own
# name making it certain, any one word ending in one sigil ('#', '$', '>': 'host$', '/opt/rocm#',
# 'C:\>') or PowerShell's 'PS C:\Users\me>'. One sigil only: Python's '>>> ' is no shell's prompt;
# no bracket in the word: 'see]# amd-smi' is the tail of a '[...]#' prompt split over two lines, not one.
# Each part reads a line's characters one way only (no run split two ways): linear on any line.
_PROMPT_BEFORE = r"(?:\([\w.-]+\)[ \t]*)?(?:\[[^\]\n]*\][#$]|PS [^>\n]*>|[\w.@:~/\\-]*[#$>])"


def command_line(tool: str) -> re.Pattern[str]:
    r"""The pattern of a pasted command line running ``tool`` (a regex: ``ibstat``,
    ``amd-smi[ \t]+topology``): one home for every view that reads the command a reporter pasted
    with the output. Its grammar, one line::

        [blanks] [PROMPT [blanks]] ["sudo" [" -FLAG"...] blanks] [DIR/...] TOOL [blank ARGS]

    PROMPT is the shell's prompt as people paste it: ``$``, ``#``, ``>`` alone; bash's default
    ``user@host:~/dir$`` (``\u@\h:\w\$``), ``~$``, ``/opt/rocm#``, ``host$`` (one word of
    letters, digits and ``.@:~/\-``, one sigil: ``see]#``, a bracketed prompt's tail, is none);
    RHEL's ``[user@host dir]$`` / ``]#``; PowerShell's ``PS C:\>``, cmd's ``C:\>``; any of them
    after a virtualenv's or conda's ``(venv) ``. Not a prompt: Python's ``>>> `` (``>>> ibstat`` is
    no command line); zsh's ``%``. A prompt *alone* on a line (after an output) is :data:`PS1`'s
    forms only: there no command name makes a bare ``word#`` certain. DIR is any ``dir/`` run
    (``/usr/sbin/``, ``./``, ``/opt/rocm/bin/``). After TOOL comes the line's end or a blank
    (``ibstat: ...`` is ibstat's own error line, ``ibstatus`` another tool). Groups: ``command``
    (DIR, TOOL and ARGS), ``tool``, ``args`` (``""`` without). MULTILINE: ``.match`` reads a line,
    ``.search`` a text (no part crosses a newline: each line is read once)."""
    return re.compile(rf"^[ \t]*(?:{_PROMPT_BEFORE}[ \t]*)?(?:sudo(?:[ \t]+-[\w-]+)*[ \t]+)?"
                      rf"(?P<command>(?:[^\s/]*/)*(?P<tool>{tool})(?P<args>(?:[ \t].*)?))$", re.MULTILINE)


# Characters a web page, an editor or a mail client puts in a copy: zero-width spaces and joiners
# and a byte order mark dropped, no-break spaces made blanks, typographic quotes made the ASCII ones
# a tool prints (no tool view's grammar holds any of them)
_INVISIBLE = {0x200B: None, 0x200C: None, 0x200D: None, 0x2060: None, 0xFEFF: None, 0x00A0: " ", 0x202F: " ",
              0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'}
_BACKSPACE = re.compile(r"[^\x08]\x08")  # a character and the backspace that erased it
# an HTML <pre> (GitHub's <details> paste: '<pre>', '<pre><code>', with attributes): a fence; its
# text is HTML-escaped (html_unescaped)
_PRE_OPEN = re.compile(r"<pre\b[^>]*>(?:<code\b[^>]*>)?", re.IGNORECASE)
_PRE_CLOSE = re.compile(r"(?:</code>)?</pre>", re.IGNORECASE)
_HTML_WRAP = re.compile(r"</?(?:details|summary|code)\b[^>]*>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:gt|lt|amp|quot|apos|nbsp|#\d+|#x[0-9a-fA-F]+);")
# lines no tool prints that a pager or a typescript adds: less's '(END)', more's '--More--(45%)',
# script(1)'s 'Script started on ...' / 'Script done on ...'
_TYPESCRIPT = re.compile(r"\s*Script started on ")
_NOT_OUTPUT = re.compile(r"^\s*(?:\(END\)|--More--(?:\(\d+%\))?|Script (?:started|done) on .*)\s*$")

# a line that starts with a shell prompt (PS1's forms), a command behind it or alone: the one test of it
PROMPT_LINE = re.compile(rf"^[ \t]*{PS1}(?:[ \t]|$)")


def clean(text: str) -> str:
    """Escape codes removed, CR LF and lone CR (progress lines, Windows copies) made LF."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def unwrap(text: str, *, stamped: bool = False) -> str:
    """``text`` with every certain delivery wrapping removed (see the module); ``stamped``:
    the view's grammar has the timestamps, keep them."""
    return unwrap_lines(text, stamped=stamped)[0]


def unwrap_lines(text: str, *, stamped: bool = False) -> tuple[str, list[int]]:
    """:func:`unwrap`'s text, and for each of its lines the line of ``text`` it came from
    (0 for the first: fences drop lines, a launcher's tasks are regrouped, a lone CR splits
    one line of the file into two), so a message can name the line as the file numbers it."""
    lines, origins = _cleaned_lines(text)
    if not lines:
        return "", []
    ended = lines[-1] == ""  # the text ends with a newline (the last line is whole)
    if ended:
        lines.pop()
        origins.pop()
    kept, closed = _fenced(list(range(len(lines))), lines, ended)
    fenced = len(kept) < len(lines)
    lines, origins = [lines[i] for i in kept], [origins[i] for i in kept]
    if _escaped(text):
        lines = [html.unescape(ln) for ln in lines]
    ended = ended or closed
    cut_line = lines[-1] if lines and not ended else None
    for _ in range(4):  # a wrapping inside another ('0: ' inside a host's 'node7 out: ', a quoted journal)
        lines, origins, changed = _unprefixed(lines, origins, ended, stamped)
        if not changed:
            # an indented paste of prefixed lines ('    node7 out: ...', a markdown list's code): the
            # prefixes behind the shared indentation; the indentation alone stays for the last dedent
            inner, inner_origins, changed = _unprefixed(_dedented(lines), origins, ended, stamped)
            if not changed:
                break
            lines, origins = inner, inner_origins
    if not fenced and any(_FENCE.match(ln) for ln in lines):  # a fence inside the quote or the labels
        kept, closed = _fenced(list(range(len(lines))), lines, ended)
        lines, origins = [lines[i] for i in kept], [origins[i] for i in kept]
        ended = ended or closed
    lines = _dedented([_INLINE_CODE.sub(r"\1", ln) for ln in lines])  # inside whatever carried the line
    if cut_line is not None and cut_line.strip() and lines and not lines[-1].strip():
        # the paste stops right after a line's label or stamp ('[1,0]<stdout>:', no newline): taking
        # the prefix would leave an empty last line, read as a whole text; the cut line stays as it came
        lines[-1] = cut_line
    out = "\n".join(lines)
    return (out + "\n" if ended and lines else out), origins


def _unprefixed(lines: list[str], origins: list[int], ended: bool,
                stamped: bool) -> tuple[list[str], list[int], bool]:
    """One round of the prefixes every line carries taken off (quoting, line numbers, a launcher's
    labels, a timestamp), and whether any was."""
    before = lines
    for _ in range(8):  # nested quoting ("> > ", "| > "), line numbers of a quoted listing
        for quote in (_QUOTE, _BAR_QUOTE, _HASH_QUOTE):
            if _every(lines, quote, ended) and (quote is not _BAR_QUOTE or not _boxed(lines, ended)) \
                    and (quote is not _HASH_QUOTE or _hash_quoted(lines)):
                lines = [quote.sub("", ln, count=1) for ln in lines]
                break
        else:
            if not _numbered(lines, ended):
                break
            lines = [_NUMBERED.sub("", ln, count=1) for ln in lines]
    if [ln for ln in lines if _ANSIBLE.match(ln)] and not _ANSIBLE.match(lines[-1]):
        keep = [i for i, ln in enumerate(lines) if not _ANSIBLE.match(ln)]
        lines, origins = [lines[i] for i in keep], [origins[i] for i in keep]
    for label in _LABELS:
        if _every(lines, label, ended):
            lines, origins = _by_task(lines, origins, label, ended)
            break
    if not stamped:
        for stamp in _STAMPS:
            if _every(lines, stamp, ended):
                lines = [stamp.sub("", ln, count=1) for ln in lines]
                break
    return lines, origins, lines != before


def _cleaned_lines(text: str) -> tuple[list[str], list[int]]:
    """:func:`clean`'s lines, each with the line of ``text`` (split at LF) it is on; the characters
    an editor or a web page put in (:data:`_INVISIBLE`) made plain, a backspace's erasure done, an
    HTML ``<pre>`` (with its ``<code>``) read as a fence, a pager's and ``script(1)``'s own lines
    left out (:data:`_NOT_OUTPUT`)."""
    text = _ANSI.sub("", text).translate(_INVISIBLE).replace("\r\n", "\n")
    pre = bool(_PRE_OPEN.search(text) and _PRE_CLOSE.search(text))
    # a script(1) typescript: its prompt lines (the command typed, 'exit') are no output either
    typescript = _TYPESCRIPT.match(text) is not None
    lines: list[str] = []
    origins: list[int] = []
    for i, line in enumerate(text.split("\n")):
        while "\x08" in line:
            line, n = _BACKSPACE.subn("", line)
            if not n:
                line = line.replace("\x08", "")
        if pre:
            line = _PRE_CLOSE.sub("\r```\r", _PRE_OPEN.sub("\r```\r", line)).strip("\r")
        for part in line.split("\r"):
            if not _NOT_OUTPUT.match(part) and not (typescript and PROMPT_LINE.match(part)):
                lines.append(part)
                origins.append(i)
    return lines, origins


def _dedented(lines: list[str]) -> list[str]:
    """The indentation every non-blank line shares removed (a paste nested in a markdown list, a
    quoted mail): the tool's own relative indentation stays."""
    shared = None
    for ln in lines:
        if ln.strip():
            lead = ln[: len(ln) - len(ln.lstrip(" \t"))]
            shared = lead if shared is None else shared[: next((i for i, (a, b) in enumerate(zip(shared, lead))
                                                                 if a != b), min(len(shared), len(lead)))]
            if not shared:
                return lines
    return [ln[len(shared):] if ln.strip() else ln.strip(" \t") for ln in lines] if shared else lines


def _fenced(index: list[int], lines: list[str], ended: bool) -> tuple[list[int], bool]:
    """The indices (of ``index``) of the lines inside markdown fences, or all of them when there
    is no fence, and whether a closing fence ended the text (its last line whole). A last line
    without its newline is no fence (a cut "```te"), unless it closes one: it stays, for the
    view to see the cut. Fences pair from the first, an opener first; where that reading leaves an
    opener unclosed with nothing after it (``A\nB\n```` ``: one bare fence after the output), the
    paste began inside a fence whose opener was not copied, and the first fence (bare: an info
    string, ```` ```text ````, only opens) closes it. Paired fences around nothing are an empty output."""
    def fence(i: int, ln: str, inside: bool) -> bool:
        if ended or i < len(lines) - 1:
            return bool(_FENCE.match(ln))
        return inside and ln.strip() in ("```", "~~~")  # a closing fence pasted without its newline

    def scan(inside: bool) -> tuple[list[int], bool, int]:
        kept: list[int] = []
        closed = False
        fences = 0
        for i, ln in zip(index, lines):
            if fence(i, ln, inside):
                closed, inside = inside, not inside
                fences += 1
            else:
                closed = False
                if inside:
                    kept.append(i)
        return kept, closed, fences

    kept, closed, fences = scan(False)
    first = next((ln for i, ln in zip(index, lines) if fence(i, ln, True)), "")
    if fences % 2 or not fences:  # an opener left unclosed, or a lone closing fence at the end
        began_inside, closed_inside, fences_inside = scan(True)
        if (fences_inside and first.strip() in ("```", "~~~") and not any(lines[i].strip() for i in kept)
                and any(lines[i].strip() for i in began_inside)):
            return began_inside, closed_inside
    return (kept, closed) if fences else (index, False)


def _every(lines: list[str], prefix: re.Pattern[str], ended: bool) -> bool:
    """Whether every line carries ``prefix`` (blank and elision lines aside; the last line
    too unless it is a cut: no newline after it). At least one line must."""
    seen = False
    for i, ln in enumerate(lines):
        if prefix.match(ln):
            seen = True
        elif not ln.strip() or ELISION.match(ln) or (i == len(lines) - 1 and not ended):
            continue
        else:
            return False
    return seen


def _by_task(lines: list[str], origins: list[int], label: re.Pattern[str],
             ended: bool = True) -> tuple[list[str], list[int]]:
    """Label-less lines, each task's lines together (tasks in the order they first printed),
    with the line each came from (``origins``). A last line cut mid-way (``ended`` false: no
    newline after it) stays last, whatever its task: it is where the paste stops, and the view
    reads the cut there (harvest 9: an mpirun-tagged NCCL log cut inside rank 2's line was
    regrouped into the middle, and read as whole).

    A blank a label may end with is the label's only where every labelled line has it: Open
    MPI 5's PRRTE tags ``[1,0]<stdout>: line``, Open MPI 4's ORTE ``[1,0]<stdout>:line``, so
    under ORTE a line's own leading blank (the tail of a line a paste wrapped at a blank) is
    the line's, and taking it glued two words ("we" "are" -> "weare": issue 28, a watchdog
    message wrapped at 66 read without its numbers)."""
    matches = [label.match(ln) for ln in lines]
    own_blank = any(m and m.end() < len(ln) and not m.group(0).endswith(" ") for m, ln in zip(matches, lines))
    tasks: dict[str, list[tuple[str, int]]] = {}
    last = ""
    for m, ln, at in zip(matches, lines, origins):
        if m:
            last = m.group("task").strip()
            end = m.end() - 1 if own_blank and m.group(0).endswith(" ") else m.end()
            ln = ln[end:]
        tasks.setdefault(last, []).append((ln, at))
    cut = tasks[last].pop() if not ended and lines else None
    regrouped = [x for group in tasks.values() for x in group] + ([cut] if cut else [])
    return [ln for ln, _ in regrouped], [at for _, at in regrouped]




def _escaped(text: str) -> bool:
    """Whether ``text`` is HTML-escaped (an HTML ``<pre>``'s, a page's): entities, and no ``<``
    or ``>`` but a ``<pre>``'s own tags (an escaped text has none)."""
    if not _ENTITY.search(text):
        return False
    rest = _PRE_CLOSE.sub("", _PRE_OPEN.sub("", _HTML_WRAP.sub("", text)))
    return "<" not in rest and ">" not in rest


def _hash_quoted(lines: list[str]) -> bool:
    """A comment's ``# `` is a quote where a line behind it is a ``#`` line of the tool's own."""
    return any(_HASH_QUOTE.sub("", ln, count=1).startswith("#") for ln in lines if _HASH_QUOTE.match(ln))


def _boxed(lines: list[str], ended: bool) -> bool:
    """Every non-blank line ends with ``|``: a table's rows, not a ``| `` quote. The last row aside
    where there are others: a box cut inside its last row, with or without a newline after it (a
    published dcgmi fragment's last row lacks its closing bar: read as a quote, every row lost its
    first column)."""
    rows = [ln.rstrip() for ln in lines if ln.strip()]
    if len(rows) > 1 or not ended:
        rows = rows[:-1]
    return all(ln.endswith("|") for ln in rows)


def _numbered(lines: list[str], ended: bool) -> bool:
    """Every line carries ``cat -n``'s (or ``nl``'s) number, counting up by one."""
    if not _every(lines, _NUMBERED, ended):
        return False
    numbers = [int(m.group(1)) for ln in lines if (m := _NUMBERED.match(ln))]
    return all(b == a + 1 for a, b in zip(numbers, numbers[1:]))


def _utf8_cut(raw: bytes) -> bool:
    """Whether ``raw`` is UTF-8 cut inside its last character (a capture cut at a byte)."""
    for k in (1, 2, 3):
        try:
            raw[:-k].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return True
    return False


def decode(raw: bytes) -> str:
    """A capture's bytes as text, as ``sncheck parse`` reads a file: UTF-8 (its byte order mark
    dropped); UTF-16 where a byte order mark says so (PowerShell's ``>``, Notepad's 'Unicode');
    Windows-1252 where the bytes are no UTF-8 and are that (a Windows editor's save); else UTF-8
    with each undecodable byte replaced (the view then refuses what it cannot read)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    high = sum(1 for b in raw if b >= 0x80)
    if b"\0" not in raw and high * 5 <= len(raw) and not _utf8_cut(raw):  # a text's few typographic characters, not binary
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:
            pass
    return raw.decode("utf-8", errors="replace")
