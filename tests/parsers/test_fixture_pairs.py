"""Every real output of a parser kind is kept with its expected parse, and the parser still makes it.

The pairs are discovered, not listed: each ``tests/fixtures/<kind>/<name>.txt|.out`` of a kind in
``parsers.KINDS`` must have ``<name>.json`` beside it, holding what ``hptriage parse FILE --kind KIND
--format json`` prints of it (tests/fixture_pairs.py says exactly what).  A new fixture without its
``.json`` fails here: see it with ``python scripts/regenerate_fixtures.py pairs:KIND``, read it, and
write it with ``--write pairs:KIND``.  A parser change that changes a parse fails here too: regenerate, and read the diff.  The
hand-written tests of each kind (tests/parsers/test_<kind>*.py) state the edge cases in words.
"""

from __future__ import annotations

import json

import pytest

import parsers
from tests.fixture_pairs import FIXTURES, dumps, expected_path, pair_inputs, parse_as_cli

PAIRS = pair_inputs()
REGENERATE = "python scripts/regenerate_fixtures.py pairs:{kind} (then --write pairs:{kind})"


@pytest.mark.parametrize(("kind", "path"), PAIRS, ids=[f"{k}/{p.name}" for k, p in PAIRS])
def test_parse_equals_its_pair(kind, path) -> None:  # type: ignore[no-untyped-def]
    target = expected_path(path)
    assert target.is_file(), (
        f"tests/fixtures/{kind}/{path.name} has no {target.name} beside it: run {REGENERATE} and review it"
    )
    expected = json.loads(target.read_text(encoding="utf-8"))
    actual = json.loads(dumps(parse_as_cli(kind, path)))
    assert actual == expected, (
        f"the parse of {kind}/{path.name} changed: run {REGENERATE} and review the diff"
    )


def test_every_kind_has_pairs() -> None:
    assert sorted({kind for kind, _ in PAIRS}) == sorted(parsers.KINDS)


def test_no_pair_without_its_input() -> None:
    inputs = {expected_path(path) for _, path in PAIRS}
    stray = [
        p.relative_to(FIXTURES).as_posix()
        for kind in parsers.KINDS
        for p in sorted((FIXTURES / kind).glob("*.json"))
        if p not in inputs
    ]
    assert not stray, f"expected parses whose input is gone (or is no .txt/.out): {stray}"


def test_a_fixture_without_its_pair_is_caught(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Discovery is by folder: a file dropped into a kind's folder becomes a case at once."""
    import tests.fixture_pairs as pairs

    kind_dir = tmp_path / "uptime"
    kind_dir.mkdir()
    (kind_dir / "new-capture.txt").write_text(
        " 10:15:01 up 1 day,  2:03,  1 user,  load average: 0.00, 0.01, 0.05\n"
    )
    (kind_dir / "PROVENANCE.md").write_text("not an input\n")
    monkeypatch.setattr(pairs, "FIXTURES", tmp_path)
    found = pairs.pair_inputs()
    assert [(k, p.name) for k, p in found] == [("uptime", "new-capture.txt")]
    assert not expected_path(found[0][1]).exists()
