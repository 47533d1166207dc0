"""The probe-answer prefilter (plain substrings of the case-folded text) passes every line the
case-blind regex it replaced would pass: it only decides which lines the catalogue searches, so a line
it wrongly skipped would lose a failure answer."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from parsers.probe_answers import _prefilter, read_answers

#: The regex the prefilter replaced, as it was written.
_REGEX = re.compile(
    r"NVML|NVIDIA-SMI has failed|No devices were found|device handle|GPU is lost|fi_getinfo|"
    r"Driver not installed|version does not exist|"
    r"No IB devices|host engine|specified host|could not be found|not found",
    re.IGNORECASE,
)
#: Its words, as the prefilter's spellings are drawn from them.
_REGEX_WORDS = _REGEX.pattern.split("|")

#: Every spelling re.IGNORECASE takes for these letters (found by trying every code point).
_SPELLINGS = {"i": "iIİı", "k": "kKK", "s": "sSſ"}


@st.composite
def spelled(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(_REGEX_WORDS))
    letters = [draw(st.sampled_from(_SPELLINGS.get(c, c.lower() + c.upper()))) for c in word]
    return draw(st.text(max_size=8)) + "".join(letters) + draw(st.text(max_size=8))


@given(spelled())
def test_every_spelling_the_regex_takes_passes(line: str) -> None:
    assert _REGEX.search(line)
    assert _prefilter(line)


@given(st.text())
def test_any_text_the_regex_takes_passes(text: str) -> None:
    # casefold may pass a few more lines ('ﬀ' folds to 'ff'): harmless, the catalogue decides
    if _REGEX.search(text):
        assert _prefilter(text)


def test_an_answer_in_odd_case_is_still_found() -> None:
    found = read_answers("nvidia-smi-q", "", "NVIDIA-SMI HAS FAİLED because it couldn't communicate", 9)
    assert [a.answer for a in found][:1] == ["driver-unreachable"]
