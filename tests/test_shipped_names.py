"""One resolver for shipped names (issue 19 item 6): a name is the shipped file; a path
(``./x``, ``x.yaml``, anything with a slash) is that file. A stray file in the working
directory never shadows a shipped name."""

from __future__ import annotations

from pathlib import Path

import pytest

from sncheck.config.playbook import find_playbook
from sncheck.run.inputs import load_playbook
from sncheck.config.shipped import data_dir
from sncheck.health.rules import find_rules
from sncheck.layers.golden import find_reference

FINDERS = [(find_playbook, "pre-upgrade-gate", ".yaml"), (find_rules, "default", ".yaml"),
           (find_reference, "mock-demo", ".json")]


@pytest.mark.parametrize(("find", "name", "suffix"), FINDERS)
def test_a_stray_file_never_shadows_a_shipped_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   find, name: str, suffix: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text("stray\n")
    for folder in ("playbooks", "fixtures/rules", "fixtures/golden"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / f"{name}{suffix}").write_text("stray\n")
    found = find(name)
    assert found is not None and found.read_text() != "stray\n"
    assert found.resolve().is_relative_to(data_dir("playbooks" if find is find_playbook else "fixtures").resolve())


@pytest.mark.parametrize(("find", "name", "suffix"), FINDERS)
def test_a_path_is_the_file_and_only_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              find, name: str, suffix: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / f"{name}{suffix}"
    mine.write_text("mine\n")
    for ref in (f"{name}{suffix}", f"./{name}{suffix}", str(mine)):
        assert find(ref) == Path(ref).expanduser(), ref
    # A path that does not exist is not quietly swapped for the shipped file of that name.
    mine.unlink()
    assert find(f"{name}{suffix}") is None and find(f"./{name}") is None
    assert find("no-such-shipped-name") is None and find("") is None


def test_a_stray_playbook_named_like_a_shipped_one_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pre-upgrade-gate").write_text("name: evil\nlayers: []\n")
    assert load_playbook("pre-upgrade-gate").name == "pre-upgrade-gate"
