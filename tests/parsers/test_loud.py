"""Lossless and loud, for every kind: a data line the parser cannot read is never dropped in silence.

For every real fixture of every kind that gives rows, each data line a row cites is garbled in turn (its
first number gets a letter glued to it, so it still looks like data but no longer reads as a number).  The
parse must then do one of: refuse the file (a ParserFailure), report a ParseIssue at that line, or keep the
garbled word in a row (as printed, in a text column or ``extra``).  And no fixture (they all hold data)
may give zero rows without a ParseIssue, except the answers listed in ``EMPTY_ANSWERS``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import parsers
from parsers._base import ParseResult, ParserFailure
from tests.conftest import fixture_files

#: Real fixtures that hold a complete answer with nothing to tabulate (file name -> why).
EMPTY_ANSWERS: dict[str, str] = {
    "steampipe-1311-get-metric-statistics-empty-datapoints.txt": 'CloudWatch answered "Datapoints": []',
    "lkml-87blbg7tlo-boot-ec2-r5d-apic-verbose-blank-line.txt": "a clean boot log: no kernel event in it",
    "boto3-212-python2-repr-u-prefix-empty.txt": "a boto3 answer printed by Python 2: 'Datapoints': []",
    "boto3-1696-pprint-python2-empty-http-headers.txt": "a boto3 answer printed by pprint: 'Datapoints': []",
}

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _cases() -> list[tuple[str, Path]]:
    return [(kind, path) for kind in parsers.KINDS for path in fixture_files(kind)]


def _parse(kind: str, text: str, name: str) -> ParseResult:
    return parsers.parse(kind, text, filename=name)


def _cited_lines(result: ParseResult) -> list[int]:
    cited = {
        value
        for rows in result.table_rows().values()
        for row in rows
        for key, value in row.items()
        if (key == "line" or key.endswith("_line")) and isinstance(value, int)
    }
    return sorted(cited)


def _kept(result: ParseResult, word: str) -> bool:
    for rows in result.table_rows().values():
        for row in rows:
            for value in row.values():
                if isinstance(value, str) and word in value:
                    return True
                if isinstance(value, (list, dict)) and word in json.dumps(value):
                    return True
    return False


@pytest.mark.parametrize(("kind", "path"), _cases(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_no_data_line_is_dropped_in_silence(kind: str, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        clean = _parse(kind, text, path.name)
    except ParserFailure:
        return  # a fixture the kind refuses as a whole (its own tests say why)
    n_rows = sum(len(rows) for rows in clean.table_rows().values())
    if n_rows == 0:
        assert clean.issues or path.name in EMPTY_ANSWERS, f"{path.name}: zero rows and no ParseIssue"
        return
    lines = text.splitlines()
    cited = [no for no in _cited_lines(clean) if 0 < no <= len(lines) and _NUMBER.search(lines[no - 1])]
    silent = []
    for no in cited[:40]:
        line = lines[no - 1]
        m = _NUMBER.search(line)
        assert m is not None
        garbled_line = f"{line[: m.end()]}q{line[m.end() :]}"
        start, end = m.start(), m.end() + 1  # the garbled word: the run of name characters around it
        while start > 0 and re.match(r"[\w./-]", garbled_line[start - 1]):
            start -= 1
        while end < len(garbled_line) and re.match(r"[\w./-]", garbled_line[end]):
            end += 1
        word_text = garbled_line[start:end]
        garbled = "\n".join([*lines[: no - 1], garbled_line, *lines[no:]]) + "\n"
        try:
            result = _parse(kind, garbled, path.name)
        except ParserFailure:
            continue
        if any(issue.line_no == no for issue in result.issues) or _kept(result, word_text):
            continue
        silent.append((no, garbled_line.strip()[:100]))
    assert not silent, f"{kind} {path.name}: garbled data lines dropped in silence: {silent[:5]}"
