"""fabricmanager: the fabric_attribute long table (every key of a status block under its unit) and journal
lines whose host was redacted or cut."""

from __future__ import annotations

import pytest

from parsers import fabricmanager
from tests.conftest import FIXTURES

DIR = FIXTURES / "fabricmanager"


def test_status_keys_are_fabric_attributes() -> None:
    r = fabricmanager.parse((DIR / "bottlerocket-3873-p4d-no-glyph-running.txt").read_text())
    by = {a["key"]: a for a in r.rows("fabric_attribute")}
    assert by["Memory"]["value"] == "11.8M" and (by["Memory"]["number"], by["Memory"]["unit"]) == (11.8, "M")
    assert by["Main PID"]["value"] == "128549 (nv-fabricmanage)"
    assert by["Active"]["value"].startswith("active (running) since Thu 2024-05-16 23:22:02 UTC")
    assert {a["entity"] for a in r.rows("fabric_attribute")} == {"nvidia-fabricmanager.service"}
    lines = [a["line"] for a in r.rows("fabric_attribute")]
    assert lines == sorted(lines)


@pytest.mark.parametrize("host", ["xxx", "<redacted>", "<host>", "[REDACTED]", None])
def test_journal_line_with_a_redacted_or_missing_host(host: str | None) -> None:
    stamp = "Jan 10 12:00:01"
    prefix = f"{stamp} {host}" if host else stamp
    text = (
        f"{prefix} nv-fabricmanager[1234]: Successfully configured all the available NVSwitches to route GPU"
        " NVLink traffic.\n"
        f"{prefix} systemd[1]: Started NVIDIA fabric manager service.\n"
    )
    r = fabricmanager.parse(text)
    assert not r.issues
    events = r.rows("fabric_event")
    assert [(e["line"], e["ident"], e["event"]) for e in events][:1] == [
        (1, "nv-fabricmanager", "configured")
    ]
    assert events[0]["pid"] == 1234
