"""Nodes collected while still settling after a boot: NVLink training, GPUs and the fabric coming up.

For a few minutes after a boot the NVLink links train, Fabric Manager programs the NVSwitches (fabric
state "In Progress") and GPUs finish initialising: a snapshot taken then shows links down, fewer GPUs
and an unfinished fabric that are no fault.  A node is *settling* when its uptime at collection (the
uptime probe) is below the settle window (``settle_minutes`` of ``gpu.fabric.state`` in
``analyzer/judge/thresholds/gpu.toml``; sources: docs/sources.md#boot-settling).  Rules that judge these
states report them on a settling node as settling (info, the boot time in the message), not as faults.
A node without an uptime reading is never settling: its findings stand.

>>> from datetime import datetime
>>> s = Settling(datetime(2026, 12, 1, 8, 0, 0), 95.0)
>>> s.boot_utc, s.describe()
('2026-12-01T07:58:25Z', 'booted 2026-12-01T07:58:25Z, 1.6 minutes before collection')
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.judge.engine import Context

#: The rule that owns the settle window (one owner per number; the other rules read it there).
OWNER = "gpu.fabric.state"


@dataclass(frozen=True)
class Settling:
    """A node collected soon after its boot: when it was collected and how long it had been up."""

    collected_at: datetime
    uptime_s: float

    @property
    def boot_utc(self) -> str:
        return (self.collected_at - timedelta(seconds=self.uptime_s)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def describe(self) -> str:
        return f"booted {self.boot_utc}, {self.uptime_s / 60:.1f} minutes before collection"


def settling_nodes(ctx: Context) -> dict[str, Settling]:
    """bundle_id -> Settling for every node whose uptime at collection is inside the settle window."""

    def make() -> dict[str, Settling]:
        window_s = float(ctx.settings.value(OWNER, "settle_minutes")) * 60
        rows = ctx.rows(
            """SELECT n.bundle_id, any_value(n.collected_at) AS collected_at, min(u.uptime_s) AS uptime_s
               FROM node n JOIN host_uptime u USING (bundle_id)
               WHERE u.uptime_s IS NOT NULL AND n.collected_at IS NOT NULL GROUP BY n.bundle_id"""
        )
        return {
            r["bundle_id"]: Settling(r["collected_at"].replace(tzinfo=None), float(r["uptime_s"]))
            for r in rows
            if 0 <= float(r["uptime_s"]) < window_s
        }

    result: dict[str, Settling] = ctx.memo("settling_nodes", make)
    return result
