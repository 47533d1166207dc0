"""Under CI a skipped test is a failure, unless the test declares its skip optional.

``.ci/run`` sets ``HPTRIAGE_CI=1``.  A test that skips there because a tool is missing (poppler,
Chromium, Java, Pango, a test extra) would otherwise turn CI green with the check never made, so
tests/conftest.py turns every such skip into a failure that names it.  A test whose skip is no lost
check carries ``@pytest.mark.optional("why")``, and ``why`` says so; there are two kinds:

- a case excluded by design, listed with its reason beside the test: a fixture a reference tool (jc)
  cannot read, a case that does not apply (:func:`excluded` builds such a parameter, reported as a
  skip with its reason everywhere, CI included);
- a check the machine may refuse whatever is installed (user or network namespaces in a container, a
  checkout another user cannot read): reported as a skip with the machine's own answer.  Such a test
  names the skip it may take, ``@pytest.mark.optional("why", skips="words of its reason")``, so that its other
  skips (a tool not installed) still fail under CI.

Nothing else may skip under CI.  ``xfail`` is left alone; a module that skips as a whole at
collection (``pytest.importorskip`` at its top) fails the session at its end under CI, named in the
summary.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

#: the variable .ci/run sets; "1" makes an undeclared skip a failure
CI_VARIABLE = "HPTRIAGE_CI"
MARKER = "optional"
MARKER_HELP = (
    "optional(why, skips=''): this test may be skipped under CI (HPTRIAGE_CI=1) with a reason holding "
    "skips, because why (tests/skips.py); any other skip fails there"
)


def under_ci() -> bool:
    return os.environ.get(CI_VARIABLE) == "1"


def excluded(*values: Any, why: str) -> Any:
    """A parametrised case that is not run, reported as a skip saying ``why`` (CI included)."""
    return pytest.param(*values, marks=(pytest.mark.skip(reason=why), pytest.mark.optional(why)))


def cases(values: Iterable[str], exclusions: Mapping[str, str]) -> list[Any]:
    """Each value as a case, those in ``exclusions`` as :func:`excluded` cases with their reason."""
    values = list(values)
    unknown = sorted(set(exclusions) - set(values))
    assert not unknown, f"exclusions name no case: {unknown}"
    return [excluded(v, why=exclusions[v]) if v in exclusions else v for v in values]


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason pytest recorded for a skip ((path, line, reason) or a string)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def failed_under_ci(item: pytest.Item, report: pytest.TestReport) -> bool:
    """Turn ``report`` into a failure when it is a skip the item did not declare optional (under CI
    only); True when it did."""
    if not (under_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return False
    marker = item.get_closest_marker(MARKER)
    if marker is not None and marker.kwargs.get("skips", "") in skip_reason(report):
        return False
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI ({CI_VARIABLE}=1): {skip_reason(report)}\n"
        "A skip under CI is a lost check: install what the test needs (.ci/system-packages, the test "
        "extra), or, if the skip loses no check, mark the test "
        "@pytest.mark.optional('why', skips='words of its reason') (tests/skips.py)."
    )
    return True
