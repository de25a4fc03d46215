"""Numbers in another script's digits (issue 28, parse29 item 3: sncheck/vendors/digits.py).

Every tool prints ASCII digits; Python's int(), float() and \\d read any Unicode decimal digit,
so a capture with every digit turned into Arabic-Indic (or Devanagari, fullwidth ...) read as
whole in ~40 views, its numbers as if printed. Each view's whole variants (tests/grammars) so
turned must exit 1 naming the line where the view reads a number; a process name or other text
holding such digits keeps them and reads as whole.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from grammars import Variant, load, variants
from test_grammars import outcome

from sncheck.errors import ParseError
from sncheck.vendors.facts import Expect, outcome as fact_outcome
from sncheck.vendors.hostjudge import bind
from sncheck.vendors.nvidia.checks import COMMANDS
from sncheck.vendors.parsers import failures, parse_text

# Arabic-Indic, extended Arabic-Indic, Devanagari, fullwidth, Bengali: each view gets one (by its name)
_SCRIPTS = ("٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "０１２３４５６７８９", "০১২৩৪৫৬৭৮৯")
# a value printed as a number (an address, '45 C'): what a view keeping it as text read from digits
_PRINTED_NUMBER = re.compile(r"[-+(]?\d+(?:[.:,/x%-]\d+)*\)?(?:\s?[A-Za-z%/]{1,5})?")
_SAID = "digits other than ASCII's"
_SMI = Path(__file__).parent.parent / "fixtures/real/harvest18/nvidia-smi/01_nvidia-smi_580.95.05_cuda_13.0_8x_a800_sxm4_80gb_persistence_off_util_100pct_processes_box_ten_rows_c_plus_g_elided_names_date_line_whole_openpi-env-report.txt"


def _turned(text: str, view: str) -> str:
    return text.translate(str.maketrans("0123456789", _SCRIPTS[sum(map(ord, view)) % len(_SCRIPTS)]))


def _read_from_digits(v: Variant) -> bool:
    """Whether a correct parse of ``v`` holds a value its digits print (not a count of records)."""
    return any(not at.startswith("len(") and not isinstance(x, bool) and
               (isinstance(x, (int, float)) or isinstance(x, str) and _PRINTED_NUMBER.fullmatch(x) is not None)
               for at, x in v.values)


def _printing_digits() -> list[str]:
    return [view for view in sorted(load()) if any(not v.fails and re.search(r"[0-9]", v.text) for v in variants(view))]


def _canon(value: object) -> object:
    """A reading with its strings' non-ASCII digits read as ASCII's: the plain reading, where they were text."""
    if isinstance(value, str):
        return "".join(str(unicodedata.digit(c)) if not c.isascii() and unicodedata.category(c) == "Nd" else c
                       for c in value)
    if isinstance(value, dict):
        return {_canon(k): _canon(x) for k, x in value.items()}
    if isinstance(value, list):
        return [_canon(x) for x in value]
    return value


@pytest.mark.parametrize("view", _printing_digits())
def test_a_number_in_another_scripts_digits_is_refused_with_its_line(view: str) -> None:
    """Up to three whole variants of the view, every ASCII digit turned: each is refused naming
    the line (exit 1) or reads as the plain output does, its digits kept as printed (they were
    text: a name, a message); one holding a value read from digits is refused."""
    wrong = []
    for v in [v for v in variants(view) if not v.fails and re.search(r"[0-9]", v.text)][:3]:
        text = _turned(v.text, view)
        try:
            code, data = outcome(view, text, v)
            said = "\n".join(failures(data)) if data is not None else ""
            if data is None:  # outcome() reads a ParseError as exit 1: ask for its message
                parse_text(view, text, **v.hints)
        except ParseError as e:
            code, data, said = 1, None, str(e)
        refused = code == 1 and _SAID in said and re.search(r"\bline \d+", said) is not None
        if _read_from_digits(v) and not refused:
            wrong.append(f"{v.name}: exit {code}, {said[:200]!r}")
        elif not refused and _canon(data) != _canon(outcome(view, v.text, v)[1]):
            wrong.append(f"{v.name}: read otherwise than the plain output, not refused: exit {code} {said[:200]!r}")
    assert not wrong, wrong


def test_a_process_name_keeps_any_digits() -> None:
    """nvidia-smi's process table names a process as its command line: digits of any script in
    it are the name's; the listing reads as whole, the name kept as printed."""
    text = _SMI.read_text().replace("python", "pyth٣n٤")
    data = parse_text("nvidia-smi", text)
    assert not failures(data), failures(data)
    assert "pyth٣n٤" in {p["name"] for p in data["processes"]}


def test_a_run_reads_such_a_listing_as_not_judged() -> None:
    """A run's fact on the same output is never a pass: the listing is not whole (parse_failed),
    the line named."""
    v = next(v for v in variants("nvidia-smi-query-gpu") if not v.fails and v.count)
    _, rows = fact_outcome("n1", bind(COMMANDS["query_gpu"]), Expect(cards=v.count), exit_code=0,
                           stdout=_turned(v.text, "ibstat"))
    assert rows and not any(r["ok"] for r in rows), [(r["fact"], r["ok"], r["message"][:120]) for r in rows]
    assert any(_SAID in r["message"] for r in rows), [r["message"][:200] for r in rows]


def test_a_view_that_raises_on_the_stand_in_refuses_the_line_never_a_traceback() -> None:
    """A view whose re-reading with the stand-in raises something other than ParseError (ibv_devinfo's
    'port:\\tǂ' compared as an int: TypeError) read the digits as a number: that line is refused, and
    misread returns instead of raising (the quick review of round 17)."""
    from sncheck.vendors import digits

    def parse(text: str) -> dict:
        port = text.split(":")[1].strip()
        return {"port": int(port) if port.isdigit() else port, "ok": 1 <= (int(port) if port.isdigit() else port)}

    text = "port:\t" + "\u0663" + "\n"   # ARABIC-INDIC DIGIT THREE: str.isdigit() reads it
    assert digits.misread(parse, text, parse(text)) == (1, text.rstrip("\n"))


@pytest.mark.parametrize("exit_code", [0, None])
def test_digits_in_text_are_no_refusal_whatever_the_exit_status(exit_code) -> None:
    """A run's fact whose foreign digits sit in text (a GPU's name) is never refused for them: the
    re-reading is compared with the view's reading before the exit status's errors join it (with no
    exit status, every such host's first foreign digit was blamed: the round's quick review)."""
    v = next(v for v in variants("nvidia-smi-query-gpu") if not v.fails and v.count and "NVIDIA" in v.text)
    _, rows = fact_outcome("n1", bind(COMMANDS["query_gpu"]), Expect(cards=v.count), exit_code=exit_code,
                           stdout=v.text.replace("NVIDIA", "NVIDIA٣"))
    assert not any(_SAID in r["message"] for r in rows), [r["message"][:200] for r in rows]
    if exit_code is None:  # (the missing status itself is still said)
        assert any("without an exit status" in r["message"] for r in rows), [r["message"][:200] for r in rows]
