"""Every fixture says where it comes from, in a row of its folder's PROVENANCE.md (or README.md).

A file under tests/fixtures/ is named by a table row of the nearest PROVENANCE.md or README.md above it
(its own folder first; ``collector/dmesg/x.txt`` is named in ``collector/PROVENANCE.md``).  The row's
first cell names the file: its name, or its path from that folder or from tests/fixtures/.  The rest of
the row names its source, one of:

- a public repository ``owner/name`` with a file at a commit (``path @ <hex>``) or a thread
  (``issue #N``, ``PR #N``, ``pull request #N``);
- a public page, ``(public page)`` with its document's ``title "..."`` (a URL alone goes stale, an id of
  a search index is no public name) or, for a page without a title (a code file, untitled notes), a
  ``line "..."`` of it that finds it and is not a line of the fixture itself;
- SYNTHETIC, DERIVED, HAND-WRITTEN or HAND-EDITED, with ``from`` what (the fixture or format it was
  made from).

Left out: the PROVENANCE.md/README.md files themselves, the expected parses ``<name>.json`` beside
each parser input (tests/fixture_pairs.py; they are generated, not collected) and tests/fixtures/generated/
(written by scripts/regenerate_fixtures.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.fixture_pairs import expected_path, pair_inputs

NOTES = ("PROVENANCE.md", "README.md")

_REPO = r"\b[A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9]\b"
_THREAD = r"\b(?:issue|PR|pull request)s? #\d+"
_COMMIT = r"@ ?`?[0-9a-f]{7,40}\b|\b[0-9a-f]{40}\b"
_TITLE = r'\btitle "[^"]{3,}"|\btitle “[^”]{3,}”'
_LINE = r'\bline "(?P<line>.{8,}?)"(?=[\s,;.)]|$)'
_MADE = r"\b(?:SYNTHETIC|DERIVED|HAND-WRITTEN|HAND-EDITED|synthetic|derived|hand-written|hand-edited)\b"


def fixtures_needing_provenance() -> list[Path]:
    pairs = {expected_path(path) for _, path in pair_inputs()}
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name not in NOTES and p not in pairs and FIXTURES / "generated" not in p.parents
    )


def notes_for(path: Path) -> Path | None:
    """The nearest PROVENANCE.md or README.md above a fixture, up to tests/fixtures/."""
    for folder in path.parents:
        for name in NOTES:
            if (folder / name).is_file():
                return folder / name
        if folder == FIXTURES:
            return None
    return None


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def rows_naming(path: Path, notes: Path) -> list[str]:
    """The source cells of the table rows of ``notes`` whose first cell names ``path``."""
    names = {path.name, path.relative_to(notes.parent).as_posix(), path.relative_to(FIXTURES).as_posix()}
    rows = []
    for line in notes.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("|") or re.fullmatch(r"[\s|:-]+", line):
            continue
        cells = _cells(line)
        if cells and cells[0].strip("`") in names:
            # the source cells: all but the file and the last ("what is special"), the second of three
            rows.append(" | ".join(cells[1:-1] if len(cells) > 2 else cells[1:]))
    return rows


def source_named(row: str, fixture_text: str = "") -> str | None:
    """How a row names its source, or None when it names none.  A quoted ``line`` names a page only
    when it is not in the fixture: any fixture's own line would "find" the fixture."""
    if re.search(_REPO, row) and (re.search(_THREAD, row) or re.search(_COMMIT, row)):
        return "repository"
    if "public page" in row and re.search(_TITLE, row):
        return "public page"
    lines = [m["line"].replace("\\|", "|") for m in re.finditer(_LINE, row)]
    if "public page" in row and any(line not in fixture_text for line in lines):
        return "public page"
    if re.search(_MADE, row) and re.search(r"\bfrom\b", row):
        return "made"
    return None


FILES = fixtures_needing_provenance()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_fixture_has_a_provenance_row_naming_its_source(path: Path) -> None:
    rel = path.relative_to(FIXTURES).as_posix()
    notes = notes_for(path)
    assert notes is not None, f"{rel}: no PROVENANCE.md or README.md in its folder or above it"
    rows = rows_naming(path, notes)
    assert rows, f"{rel}: no row of {notes.relative_to(FIXTURES)} names it (first cell: its name or path)"
    text = path.read_text(encoding="utf-8", errors="replace")
    assert any(source_named(row, text) for row in rows), (
        f"{rel}: its row names no source (owner/name with path @ commit or issue/PR #N, a public page by its"
        f' title "..." or a line "..." of it, or SYNTHETIC/DERIVED/HAND-WRITTEN from what): {rows[0][:200]}'
    )


def test_the_check_reads_rows_as_meant() -> None:
    assert source_named("NVIDIA/DCGM | issue #49 (description) | ...") == "repository"
    assert source_named(
        "kellyjonbrazil/jc `tests/fixtures/x.out` | d1927456b02e6c2a6e6395cd6ce873b6565ec37d"
    ) == ("repository")
    assert (
        source_named('(public page) title "Basic Slurm Commands", SageMaker HyperPod workshop')
        == "public page"
    )
    assert source_named('(public page) notes with the host prompt "ash6-hpccdgx-node0009"') is None
    assert (
        source_named('(public page) a Go test, line "// Note: a comment above the constant"', "data")
        == "public page"
    )
    assert source_named('(public page) notes, line "GPU0 X NV18 NV18"', "GPU0 X NV18 NV18\\n") is None
    assert source_named("DERIVED from `dmesg/a.txt`: the address redacted") == "made"
    assert source_named("(public page) server admin notes (host fuji) | (in source column)") is None
    assert source_named("same notes | (in source column) | second host") is None
    assert source_named("hand-written | collector format") is None  # from what?
    assert source_named("stas00/ml-engineering | same file and commit (section ...)") is None


def test_a_file_without_a_row_is_caught(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The check reads the folder's notes: a file they do not name has no row, a row without a source fails."""
    import tests.test_fixture_provenance as check

    kind = tmp_path / "uptime"
    kind.mkdir()
    (kind / "PROVENANCE.md").write_text(
        "| file | source | what is special |\n|---|---|---|\n| `named.txt` | hand-written | nothing |\n"
    )
    for name in ("named.txt", "unnamed.txt"):
        (kind / name).write_text("up 1 day\n")
    monkeypatch.setattr(check, "FIXTURES", tmp_path)
    assert check.notes_for(kind / "unnamed.txt") == kind / "PROVENANCE.md"
    assert check.rows_naming(kind / "unnamed.txt", kind / "PROVENANCE.md") == []
    rows = check.rows_naming(kind / "named.txt", kind / "PROVENANCE.md")
    assert rows == ["hand-written"] and check.source_named(rows[0]) is None
