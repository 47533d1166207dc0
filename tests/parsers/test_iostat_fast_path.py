"""The iostat parser's one loop over the plain device rows of a report (``_more_rows``) gives the rows the
main loop gives, line for line.

Reference: the same parser with that loop turned off.  Inputs: every real iostat fixture, a large capture
(the jc sysstat 11.6 ``-x`` fixture's report 300 times over), a plain ``-d`` capture with integer totals,
reports whose rows stop reading plainly half-way, and mangled copies (hypothesis).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import iostat
from parsers._base import ParserFailure
from tests.conftest import fixture_files, fixture_text
from tests.parsers.test_fuzz import mangled

FIXTURES = fixture_files("iostat")


def _outcome(text: str) -> Any:
    try:
        r = iostat.parse(text)
    except ParserFailure as exc:
        return f"{type(exc).__name__}: {exc}"
    tables = {name: [list(row.items()) for row in rows] for name, rows in r.table_rows().items()}
    return list(r.tables), tables, r.issues, r.issues_dropped


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setattr(iostat, "_more_rows", lambda lines, start, *rest: start)
        return _outcome(text)


def _repeated(name: str, times: int) -> str:
    banner, _, report = fixture_text("iostat", name).partition("\n\n")
    return banner + "\n\n" + "\n\n".join([report.strip()] * times) + "\n"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_each_fixture_reads_the_same(path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    assert _outcome(text) == _reference(text, monkeypatch)


@pytest.mark.parametrize("name", ["jc-ubuntu1804-x-sysstat11.6.out", "jc-centos77-plain-d.out"])
def test_large_capture_reads_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # derived: the real capture's report printed 300 times, as `iostat -x 1 301` does
    text = _repeated(name, 300)
    fast = _outcome(text)
    assert len(fast[1]["iostat_device"]) >= 900
    assert fast == _reference(text, monkeypatch)


BREAKS = [
    "sdb 0,5 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",  # decimal comma
    "sdb 1.2.3 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",  # no number
    "sdb 0.00 0.00",  # cut short
    "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",  # no device name
    "-sdb 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",
    "iostat 1. 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",
    "Linux 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",
    "sdb 1e5 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00",
    "sdb",  # a name alone (sysstat < 12 -h)
    "$ iostat -xy 1 1",
    "...",
    "",
]


@pytest.mark.parametrize("line", BREAKS)
def test_a_row_that_does_not_read_plainly_is_the_main_loops(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _repeated("jc-ubuntu1804-x-sysstat11.6.out", 2).splitlines()
    at = next(i for i, text in enumerate(lines) if text.startswith("sda")) + 1
    text = "\n".join([*lines[:at], line, *lines[at:]]) + "\n"
    assert _outcome(text) == _reference(text, monkeypatch)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mangled_captures_read_the_same(data: st.DataObject) -> None:
    text = data.draw(mangled("iostat"))
    with pytest.MonkeyPatch.context() as m:
        assert _outcome(text) == _reference(text, m)
