"""Shared check for the parser fuzz tests: garbage in gives ParseError or strict JSON."""

import json

from sncheck.errors import ParseError


def only_parse_error_or_json(parser, text: str) -> None:
    """A parser may refuse ``text`` with ParseError; anything else it returns must be
    strict JSON (no NaN) with an ``errors`` list. Any other exception fails the test."""
    try:
        result = parser(text)
    except ParseError:
        return
    assert isinstance(result.get("errors", []), list)
    json.dumps(result, allow_nan=False)
