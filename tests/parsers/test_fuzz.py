"""No input crashes a parser: mangled real captures and random text end in rows or a ParserFailure."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsers
from analyzer.store.coerce import coerce_rows
from parsers._base import ParseResult, ParserFailure
from tests.conftest import fixture_files

KINDS = list(parsers.KINDS)


def _check(kind: str, text: str) -> None:
    module = parsers.module_for(kind)
    try:
        result = module.parse(text)
    except ParserFailure:
        return
    assert isinstance(result, ParseResult)
    for table, rows in result.table_rows().items():
        coerce_rows(rows, module.SCHEMA[table])  # every value fits its declared column type


@st.composite
def mangled(draw: st.DrawFn, kind: str) -> str:
    """A real fixture of the kind, cut, with lines dropped, duplicated or garbled."""
    files = fixture_files(kind)
    text = files[draw(st.integers(0, len(files) - 1))].read_text(encoding="utf-8")
    lines = text.splitlines()
    ops = draw(
        st.lists(st.tuples(st.sampled_from("dxgc"), st.integers(0, max(len(lines) - 1, 0))), max_size=6)
    )
    for op, i in ops:
        if not lines:
            break
        i %= len(lines)
        if op == "d":
            del lines[i]
        elif op == "x":
            lines.insert(i, lines[i])
        elif op == "g":
            lines[i] = draw(st.text(max_size=80))
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    cut = draw(st.integers(0, len("\n".join(lines))))
    return "\n".join(lines)[:cut]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mangled_captures_never_crash(kind: str, data: st.DataObject) -> None:
    _check(kind, data.draw(mangled(kind)))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None, derandomize=True)
@given(text=st.text(max_size=400))
def test_random_text_never_crashes(kind: str, text: str) -> None:
    _check(kind, text)
