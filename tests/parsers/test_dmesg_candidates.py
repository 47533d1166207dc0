"""The kernel-log parser looks only at candidate lines: the prefilter must never change what it finds.

Reference: the same parser with every line a candidate.  Inputs: every real dmesg fixture, all of them
joined into one log larger than the vectorised threshold, and mangled copies (hypothesis).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import dmesg
from parsers._base import ParserFailure
from tests.conftest import fixture_files
from tests.parsers.test_fuzz import mangled


def _rows(text: str) -> list[dict[str, object]] | str:
    try:
        return dmesg.parse(text).rows("kernel_event")
    except ParserFailure as exc:
        return f"{type(exc).__name__}: {exc}"


def _every_line(lines: list[str]) -> list[int]:
    return list(range(len(lines)))


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]] | str:
    with monkeypatch.context() as m:
        m.setattr(dmesg, "candidate_lines", _every_line)
        return _rows(text)


def _vectorised(text: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]] | str:
    with monkeypatch.context() as m:
        m.setattr(dmesg, "VECTOR_BELOW", 0)
        return _rows(text)


FIXTURES = fixture_files("dmesg")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_prefilter_keeps_every_event_of_each_fixture(path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    assert _rows(text) == _reference(text, monkeypatch) == _vectorised(text, monkeypatch)


def test_prefilter_on_a_log_past_the_vectorised_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # derived: every real fixture joined, repeated until the text passes VECTOR_BELOW
    joined = "\n".join(p.read_text(encoding="utf-8") for p in FIXTURES) + "\n"
    text = joined * (dmesg.VECTOR_BELOW // len(joined) + 2)
    assert len(text) > dmesg.VECTOR_BELOW
    fast = _rows(text)
    assert isinstance(fast, list) and len(fast) > 100
    assert fast == _reference(text, monkeypatch)


def test_candidate_paths_agree_on_lines_of_every_case() -> None:
    lines = ["[ 1.0] EfA 0000:00:06.0: reset failed", "[ 2.0] ordinary", "  NVRM: indented", "x" * 10]
    python = dmesg.candidate_lines(lines)
    import pyarrow  # noqa: F401  (the vectorised path's engine)

    saved = dmesg.VECTOR_BELOW
    try:
        dmesg.VECTOR_BELOW = 0
        assert dmesg.candidate_lines(lines) == python == [0, 2]
    finally:
        dmesg.VECTOR_BELOW = saved


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_prefilter_on_mangled_logs(data: st.DataObject) -> None:
    text = data.draw(mangled("dmesg"))
    with pytest.MonkeyPatch.context() as m:
        assert _rows(text) == _reference(text, m) == _vectorised(text, m)
