"""A name an error line shows is quoted and, when long, cut with its length said: one home
(hostlist.quoted), which the isolation commands' refusals call (cli/ops had its own copy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config.hostlist import check_name, expand
from sncheck.errors import ConfigError
from test_hardening import one_line_error

INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "demo-2sn.yaml"


def test_a_host_name_over_the_bound_is_refused_saying_its_length() -> None:
    """A 256-character name of good characters is refused for its length (the 255 bound):
    the line showed its first 60 characters and '...', never why."""
    with pytest.raises(ConfigError) as e:
        check_name("n" * 256)
    assert f"bad host name {'n' * 60!r}... (256 characters)" in str(e.value) and len(str(e.value)) < 200, e.value
    with pytest.raises(ValueError, match=r"bad host name 'n;x' in hostlist 'n\[1-2\],n;x'$"):
        expand("n[1-2],n;x")  # a short one whole, as before


def test_an_entity_no_inventory_holds_is_named_cut_with_its_length(tmp_path: Path) -> None:
    line = one_line_error(CliRunner().invoke(main, ["isolate", "n" * 10_000, "-i", str(INVENTORY),
                                                    "--state-dir", str(tmp_path / "state")]))
    assert f"{'n' * 80!r}... (10000 characters) is not a card, host or switch" in line and len(line) < 600, line[:300]
