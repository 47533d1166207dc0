"""Wall-clock (UTC) times of kernel-log events: one implementation for every rule that prints them.

A kernel log prints either a wall time (``dmesg -T`` / ``--ctime``, journald ISO: the parser's ``ts``;
the collector runs ``TZ=UTC dmesg -T``) or seconds since boot (``[430954.509105]``: ``uptime_s``).
Seconds since boot become a wall time when the node's bundle says when it was collected (meta.env
``collected_at``, UTC) and how long the host had been up then (``host_uptime``: ``/proc/uptime``, else
procps ``uptime``): boot = collected_at - uptime, wall = boot + stamp.  The probes run a few seconds
after ``collected_at``, so a computed time can be early by that much; procps ``uptime`` prints minutes
at best, so a time computed from it is marked approximate.  A stamp later than the uptime, or of a log
the parser says is of an earlier boot (``boot`` below 0), is not converted.  ``--reltime`` stamps
(``[+0.000316]``) and syslog lines without a year stay as printed.

Used by gpu.xid, gpu.xid.fallen_off_bus and the host kernel-event rules (panic, OOM, hung task, AER):
they select :func:`stamp_sql` per event and map it with :meth:`KernelClock.at`; messages print
:attr:`KernelTime.shown` (``2026-12-01T07:49:14Z``), params keep the raw stamp (:meth:`KernelTime.params`).

>>> from datetime import datetime
>>> clock = KernelClock.of({"b": (datetime(2026, 12, 1, 8, 0, 0), 431000.0, "proc_uptime")})
>>> t = clock.at("b", {"ts": None, "uptime_s": 430954.509105, "raw": "430954.509105"})
>>> t.shown, t.seen, t.params()
('2026-12-01T07:59:15Z', '2026-12-01T07:59:15', {'ts_raw': '430954.509105', 'ts_utc': '2026-12-01T07:59:15Z', 'ts_basis': 'uptime'})
>>> clock.at("other", {"ts": None, "uptime_s": 12.5, "raw": "12.5"}).shown  # no uptime for that bundle
'uptime 12.5 s'
>>> clock.at("b", {"ts": datetime(2024, 8, 30, 11, 43, 9), "uptime_s": None, "raw": "Fri Aug 30 11:43:09 2024"}).shown
'2024-08-30T11:43:09Z'
>>> clock.at("b", {"ts": None, "uptime_s": 500000.0, "raw": "500000.0"}).utc is None  # later than the uptime
True
>>> span(t, t), span(t, clock.at("b", {"ts": None, "uptime_s": 430960.0, "raw": "430960.0"}))
('2026-12-01T07:59:15Z', '2026-12-01T07:59:15Z .. 2026-12-01T07:59:20Z')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from analyzer.judge.engine import Context

#: Which uptime source wins when a bundle has several (the most precise first).
_UPTIME_ORDER = ("proc_uptime", "uptime")


def stamp_sql(alias: str = "") -> str:
    """SQL for one kernel_event's stamp as a struct (``ts``, ``uptime_s``, ``raw``): select it per event,
    or ``arg_min(<it>, line)`` for the first of a group (a struct is never NULL, so the first line's
    stamp is kept even when it has no time)."""
    p = f"{alias}." if alias else ""
    return f"{{'ts': {p}ts, 'uptime_s': {p}uptime_s, 'raw': {p}ts_raw, 'boot': {p}boot}}"


@dataclass(frozen=True)
class KernelTime:
    """One kernel-log time: as printed, and in UTC when the log or the bundle gives it."""

    utc: datetime | None  # naive, UTC
    raw: str | None  # the stamp as printed
    basis: str | None  # 'printed' (a wall time in the log), 'uptime' (computed), 'uptime, approximate'
    since_boot: bool = False  # the stamp is seconds since boot

    @property
    def iso(self) -> str | None:
        """``2026-12-01T07:49:14Z``, or None."""
        return self.utc.strftime("%Y-%m-%dT%H:%M:%SZ") if self.utc else None

    @property
    def shown(self) -> str | None:
        """What a message prints: the UTC time, else the stamp as printed (seconds since boot said as
        ``uptime 12.5 s``); None: no stamp."""
        if self.iso or self.raw is None:
            return self.iso
        return f"uptime {self.raw} s" if self.since_boot else self.raw

    @property
    def seen(self) -> str | None:
        """The ``first_seen`` / ``last_seen`` param: the UTC time without its ``Z``, else the raw stamp."""
        return self.utc.strftime("%Y-%m-%dT%H:%M:%S") if self.utc else self.raw

    def params(self, prefix: str = "") -> dict[str, Any]:
        """``ts_raw``, ``ts_utc`` and ``ts_basis`` (each key after ``prefix``)."""
        return {f"{prefix}ts_raw": self.raw, f"{prefix}ts_utc": self.iso, f"{prefix}ts_basis": self.basis}


def span(first: KernelTime, last: KernelTime) -> str | None:
    """``A`` or ``A .. B`` for a group's first and last time; None when the first has no stamp."""
    a, b = first.shown, last.shown
    if a is None:
        return None
    return a if b in (None, a) else f"{a} .. {b}"


class KernelClock:
    """Maps a bundle's kernel-log stamps to UTC (see the module text)."""

    def __init__(self, boots: Mapping[str, tuple[datetime, float, str]]) -> None:
        self._boots = dict(boots)  # bundle_id -> (collected_at UTC, uptime_s then, uptime source)

    @classmethod
    def of(cls, found: Mapping[str, tuple[datetime | None, float | None, str | None]]) -> KernelClock:
        """From ``bundle_id -> (collected_at, uptime_s, uptime source)``; incomplete entries are left out."""
        return cls(
            {
                bid: (collected.replace(tzinfo=None), float(up), source or "")
                for bid, (collected, up, source) in found.items()
                if collected is not None and up is not None and up >= 0
            }
        )

    @classmethod
    def load(cls, ctx: Context) -> KernelClock:
        """The clocks of every bundle of the store: its collected_at and its best uptime row."""
        rank = "CASE u.source " + " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(_UPTIME_ORDER))
        rows = ctx.rows(
            f"""
            SELECT n.bundle_id, any_value(n.collected_at) AS collected_at,
                   arg_min(u.uptime_s, ({rank} ELSE 9 END) * 1e9 + u.line) AS uptime_s,
                   arg_min(u.source, ({rank} ELSE 9 END) * 1e9 + u.line) AS source
            FROM node n JOIN host_uptime u ON u.bundle_id = n.bundle_id
            WHERE u.uptime_s IS NOT NULL AND n.collected_at IS NOT NULL
            GROUP BY n.bundle_id
            """
        )
        return cls.of({r["bundle_id"]: (r["collected_at"], r["uptime_s"], r["source"]) for r in rows})

    def clock_of(self, bundle_id: str | None) -> tuple[datetime, float, str] | None:
        """The bundle's (collected_at UTC, uptime_s then, uptime source) that :meth:`at` converts with;
        None when the bundle lacks either."""
        return self._boots.get(bundle_id or "")

    def at(self, bundle_id: str | None, stamp: Mapping[str, Any] | None) -> KernelTime:
        """The time of one event's stamp (a :func:`stamp_sql` struct) in that bundle."""
        stamp = stamp or {}
        raw, ts, up = stamp.get("raw"), stamp.get("ts"), stamp.get("uptime_s")
        if isinstance(ts, datetime):
            return KernelTime(ts.replace(tzinfo=None), raw, "printed")
        if up is None:
            return KernelTime(None, raw, None)
        clock = self._boots.get(bundle_id or "")
        boot = stamp.get("boot")
        if boot is not None and int(boot) < 0:  # seconds since an earlier boot: its start is not known
            return KernelTime(None, raw, None, since_boot=True)
        if clock is None or float(up) > clock[1] + 1:  # no uptime, or stamped after it: an earlier boot
            return KernelTime(None, raw, None, since_boot=True)
        collected, uptime, source = clock
        when = collected - timedelta(seconds=uptime - float(up))
        when = (when + timedelta(microseconds=500_000)).replace(microsecond=0)  # to the nearest second
        basis = "uptime" if source == "proc_uptime" else "uptime, approximate"
        return KernelTime(when, raw, basis, since_boot=True)
