"""The real captures the tests read, one home: the repo's ``fixtures/real`` and the team's shared
``real*`` corpora, and the view each ``expect.yaml`` names for its files.

The shared corpora lie in ``../shared/fixtures`` beside the main checkout (``/work/main``), which is
``../../shared/fixtures`` from a worktree (``/work/wt/NAME``): the first of the two that exists. (The
delivery matrix looked two levels up only, so it read no shared capture from the main checkout, and
the random cuts named ``/work/shared`` outright.)"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = next((p for p in (ROOT.parent / "shared" / "fixtures", ROOT.parents[1] / "shared" / "fixtures")
               if p.is_dir()), None)
CORPORA = (ROOT / "fixtures" / "real", *(sorted(SHARED.glob("real*")) if SHARED else ()))


def named(corpus: Path) -> list[tuple[Path, str]]:
    """(file, view) for each entry of an ``expect.yaml`` under ``corpus`` (the file resolved), in the
    order they list them (expect.yaml files sorted); real-r4's "none-yet" (a format no view read
    when it was collected) left out."""
    out: list[tuple[Path, str]] = []
    for expect in sorted(corpus.rglob("expect.yaml")):
        for entry in yaml.safe_load(expect.read_text(encoding="utf-8")) or []:
            if entry.get("tool") != "none-yet":
                out.append(((expect.parent / entry["file"]).resolve(), entry.get("tool", "")))
    return out
