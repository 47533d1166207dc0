"""Fixture pairs: each real output ``tests/fixtures/<kind>/<name>.txt|.out`` and its expected parse ``<name>.json``.

The expected parse is what ``hptriage parse tests/fixtures/<kind>/<name>.txt --kind <kind> --format json``
prints, run from the repository root: its records (stdout, one object per row with its ``table``) and
the lines it reports as not understood (stderr, the file's path left off).  Written with sorted keys and
an indent of 2, so that a regeneration reads as a diff.

``scripts/regenerate_fixtures.py`` writes the ``.json`` files; tests/parsers/test_fixture_pairs.py
checks them.  Only top-level ``.txt``/``.out`` files of a kind's folder are parser inputs: sub-folders
(``cloudwatch/refused/``) and the folders that are no kind (``collector``, ``generated``,
``probe-answers``) hold inputs tested otherwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import parsers

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
INPUT_SUFFIXES = (".txt", ".out")


def pair_inputs() -> list[tuple[str, Path]]:
    """Every parser input among the fixtures, with its kind (the folder it lies in)."""
    found = []
    for kind in parsers.KINDS:
        folder = FIXTURES / kind
        if folder.is_dir():
            found += [
                (kind, p) for p in sorted(folder.iterdir()) if p.is_file() and p.suffix in INPUT_SUFFIXES
            ]
    return found


def expected_path(path: Path) -> Path:
    return path.with_suffix(".json")


def parse_as_cli(kind: str, path: Path) -> dict[str, Any]:
    """What ``hptriage parse FILE --kind KIND --format json`` prints of a fixture, as one JSON document."""
    from click.testing import CliRunner

    from analyzer.cli import cli

    rel = path.relative_to(ROOT).as_posix()
    cwd = os.getcwd()
    os.chdir(ROOT)  # the parser sees the same relative file name wherever the tests run from
    try:
        result = CliRunner().invoke(cli, ["parse", rel, "--kind", kind, "--format", "json"])
    finally:
        os.chdir(cwd)
    if result.exit_code != 0:
        raise AssertionError(f"hptriage parse {rel} --kind {kind} exited {result.exit_code}: {result.output}")
    return {
        "command": f"hptriage parse {rel} --kind {kind} --format json",
        "records": json.loads(result.stdout),
        "issues": [line.removeprefix(rel + ":").strip() for line in result.stderr.splitlines()],
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
