"""The cluster timeline: every node's dated events on one UTC axis, and the first event of the incident.

:func:`build` reads the store with SQL and returns a :class:`Timeline`: a list of typed :class:`Event` (node,
family, what, its time in UTC or None with why, the clock it was read by, its source file and line, its
level), the events left out where one file holds very many of one kind (:class:`LeftOut`, counted), and the
:class:`Incident` with its first event.  The report model hands it to every renderer; a rule may call it to
search a node's evidence before a time (:meth:`Timeline.before`).

Events and their families (:data:`FAMILIES`):

- kernel events (``kernel_event``): the signature catalog's families (parsers/kernel_signatures.toml; the
  signature's severity is the level, a PCIe AER line whose severity says Corrected is info); ``xid`` (NVRM
  Xid, the level from the Xid catalog, analyzer/judge/xid_catalog.py); ``sxid`` (NVSwitch SXid, critical
  when the line says fatal); ``gpu_driver`` (NVRM faults without an Xid: fallen off the bus, GPU lost and
  RmInitAdapter failures critical; GSP timeouts, RPC failures, MMU faults, bus timeouts and memory errors a
  warning); ``link`` (link flaps: a NIC or EFA link down, a bond failover and an NVLink error a warning, a
  link up info); ``kernel_error`` (an error line no signature claims: a warning).  Lines that say who a
  device is (gpu_identity, nvrm_driver_loaded, efa_driver_loaded, efa_probe, nvrm_message) are no events
  here.  An event printed in several logs of one node counts once (:func:`kernel_events.distinct`).
- job-log events (``job_log_event``): ``watchdog`` (PyTorch's watchdog timeout: critical, a hang; the
  heartbeat monitor's stuck watchdog: a warning), ``hang_began`` (the timed-out collective's start: the
  watchdog line's time minus its ``ran for``), ``nccl`` (PyTorch's NCCL errors and ProcessGroupNCCL errors
  critical, NCCL's WARN lines a warning), ``cuda`` (CUDA errors, critical) and ``rank_exit`` (torchelastic's
  failed ranks, critical).  Each is on the node its host maps to (the line's host, else its rank's:
  :mod:`analyzer.judge.signals.job`, :mod:`analyzer.judge.hosts`), else on no node, its host named.
- ``probe`` (a probe's failure answer, ``probe_answer``), ``boot`` (collected_at minus the uptime) and
  ``collected`` (``node.collected_at``): info.

Clocks (``Event.clock``, :data:`CLOCKS`): a kernel stamp in seconds since boot is converted as the rules
convert it (:class:`analyzer.judge.signals.kernel_time.KernelClock`: collected_at - uptime + stamp, for the
current boot only); ``dmesg -T`` prints the host's local time: placed when the manifest's command ran it
under ``TZ=UTC`` (collector.sh does), else not placed; a stamp that prints its zone (``journalctl -o
short-iso``/``short-full``/``short-unix``, ``dmesg --time-format iso``, Talos) is UTC; a job log's dated stamp
is placed in its own zone (``Z``, ``+02:00``) and not placed where it prints none.  A time that cannot be
placed is kept with ``utc`` None and ``why`` (a syslog stamp has no year and no zone; glog prints no year;
``--reltime`` counts from the line before; seconds since boot on a node with no uptime, or in a log whose
boot is not known): listed, never guessed.

The incident (:class:`Incident`): hangs and critical events make its anchors.  A hang spans from the
start of its collective (``hang_began``) to its watchdog line; a critical event is a point; spans and
points less than :data:`GAP_S` apart are one cluster.  The incident is the latest cluster; its first event
is the earliest fault-class event (critical or warning; failed probes, boots and collections are never
first: their time is when they were seen) from :data:`LOOKBACK_S` before the cluster's start to its end.
Ties at one second keep the order of file and line.  Where a file's events of one kind were left out
(more than ``KEEP_HEAD + KEEP_TAIL``), the incident's window is searched again in full, so the first event
is exact.  Times converted from seconds since boot can be early by the seconds between ``collected_at``
and the probe that read the uptime.

>>> e = Event("n1", "xid", "Xid 79", datetime(2026, 12, 1, 7, 59, 15), "kernel-uptime", "critical", "n1/cmd/dmesg.txt", 3)
>>> e.iso, e.where, e.fault, e.row
('2026-12-01T07:59:15Z', 'n1/cmd/dmesg.txt:3', True, 'n1')
>>> job_time({"ts": datetime(2025, 6, 26, 8, 24, 44), "utc_offset": "+02:00", "time_text": "x"})[0]
datetime.datetime(2025, 6, 26, 6, 24, 44)
>>> job_time({"ts": None, "utc_offset": None, "time_text": "E626 06:24:44.903881913"})[1:]
('glog', 'glog stamps print month, day and time: no year and no zone')
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from analyzer.judge.engine import Context
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals import kernel_events
from analyzer.judge.signals.job import host_of, rank_hosts
from analyzer.judge.signals.kernel_time import KernelClock
from analyzer.judge.xid_catalog import xid_entry
from parsers import _kernel_catalog as catalog

#: Hang and critical events (and spans) less than this apart are one cluster (seconds).
GAP_S = 1800.0
#: The first event of the incident is searched from this long before its cluster's start (seconds).
LOOKBACK_S = 1800.0
#: Kernel events read per file and kind (signature, else event type): the first and the last this many;
#: the rest are counted (:class:`LeftOut`) and searched again only inside the incident's window.
KEEP_HEAD = 200
KEEP_TAIL = 200
#: Job-log events read per file and kind, first and last (a 1,024-node job prints 8,192 watchdog lines).
JOB_KEEP = 10_000


@dataclass(frozen=True)
class Family:
    id: str
    title: str
    group: str  # kernel, gpu, link, job, probe, boot, collection: what the chart's marker shape says


def _families() -> dict[str, Family]:
    out = {f.id: Family(f.id, f.title, "kernel") for f in catalog.FAMILIES.values()}
    for fid, title, group in (
        ("xid", "GPU Xid errors (NVRM)", "gpu"),
        ("sxid", "NVSwitch SXid errors", "gpu"),
        (
            "gpu_driver",
            "GPU driver faults (fallen off the bus, GSP, RmInitAdapter, MMU, bus timeouts)",
            "gpu",
        ),
        ("link", "Link flaps (NIC/EFA link down and up, bond failover, NVLink errors)", "link"),
        ("kernel_error", "Other kernel errors (no catalog signature)", "kernel"),
        ("hang_began", "Hang began (watchdog line's time minus its 'ran for')", "job"),
        ("watchdog", "PyTorch watchdog timeouts", "job"),
        ("nccl", "NCCL errors", "job"),
        ("cuda", "CUDA errors", "job"),
        ("rank_exit", "Rank exits (torchelastic)", "job"),
        ("probe", "Failed probes (seen at collection)", "probe"),
        ("boot", "Boots (collected_at minus uptime)", "boot"),
        ("collected", "Collection (meta.env collected_at)", "collection"),
    ):
        out[fid] = Family(fid, title, group)
    return out


FAMILIES: dict[str, Family] = _families()

#: clock key -> what it is (a report says the clocks its events were read by)
CLOCKS: dict[str, str] = {
    "kernel-uptime": "kernel log seconds since boot + boot time (collected_at - /proc/uptime)",
    "kernel-uptime-approx": "kernel log seconds since boot + boot time (collected_at - procps uptime, to the minute)",
    "kernel-zoned": "kernel log time with its zone (journal, dmesg --time-format iso)",
    "dmesg-T-utc": "dmesg -T under TZ=UTC",
    "dmesg-T-local": "dmesg -T in the host's local time, zone unknown",
    "kernel-no-zone": "kernel log time without a zone",
    "syslog": "syslog / journal short stamp (no year, no zone)",
    "reltime": "dmesg --reltime (time since the line before)",
    "kernel-since-boot": "kernel log seconds since boot",
    "none": "no time printed",
    "job-zoned": "job log time in its own zone",
    "job-no-zone": "job log date without a zone",
    "glog": "job log glog stamp (no year, no zone)",
    "job-partial": "job log time without a date",
    "collection": "meta.env collected_at (UTC)",
    "boot": "collected_at - /proc/uptime",
    "boot-approx": "collected_at - procps uptime (to the minute)",
    "probe": "seen at collection (collected_at; the probe's own start is not recorded)",
}


def clock_text(clock: str) -> str:
    """What an ``Event.clock`` is, in words (a job log's zone after its key: ``job-zoned +02:00``).

    >>> clock_text("job-zoned +02:00"), clock_text("dmesg-T-utc")
    ('job log time in its own zone (+02:00)', 'dmesg -T under TZ=UTC')
    """
    key, _, zone = clock.partition(" ")
    return CLOCKS.get(key, key) + (f" ({zone})" if zone else "")


_LEVELS = ("critical", "warning", "info")
#: kernel event types that say who a device is, or that a driver loaded: no events of the timeline
_NOT_EVENTS = ("gpu_identity", "nvrm_driver_loaded", "efa_driver_loaded", "efa_probe", "nvrm_message")
_GPU_DRIVER = {
    "fallen_off_bus": "critical",
    "gpu_lost": "critical",
    "gpu_init_failed": "critical",
    "gsp_timeout": "warning",
    "gsp_rpc_failed": "warning",
    "bus_timeout": "warning",
    "mmu_error": "warning",
    "memory_error": "warning",
}
_LINK = {"link_down": "warning", "bond_failover": "warning", "nvlink_error": "warning", "link_up": "info"}
#: an event type's family where a row carries no signature (the catalog's first family of that type)
_TYPE_FAMILY: dict[str, str] = {}
for _sig in catalog.SIGNATURES:
    if not _sig.claims_only:
        _TYPE_FAMILY.setdefault(_sig.event_type, _sig.family)
_TYPE_LEVEL: dict[str, str] = {}
for _sig in catalog.SIGNATURES:
    if not _sig.claims_only:  # the worst severity of the type's signatures
        old = _TYPE_LEVEL.get(_sig.event_type, "info")
        _TYPE_LEVEL[_sig.event_type] = min(old, _sig.severity, key=_LEVELS.index)

_JOB_KINDS = {
    "watchdog_timeout": ("watchdog", "critical"),
    "watchdog_hang": ("watchdog", "warning"),
    "nccl_error": ("nccl", "critical"),
    "process_group_error": ("nccl", "critical"),
    "nccl_warn": ("nccl", "warning"),
    "cuda_error": ("cuda", "critical"),
    "rank_exit": ("rank_exit", "critical"),
}
_CTIME = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} \d{1,2} \d\d:\d\d:\d\d \d{4}$")
_ZONED = re.compile(r"(?:Z|[+-]\d\d:?\d\d|\bUTC|\bGMT)$")
_UNIX = re.compile(r"^\d{9,}(?:\.\d+)?$")
_SYSLOG = re.compile(r"^(?:[A-Za-z]{3}|\d{1,2}月)\s+\d{1,2}\s+\d\d:\d\d")
_RELTIME = re.compile(r"^\+\s*\d")
_GLOG = re.compile(r"^[EWIF]\d{3,4} \d\d:\d\d:\d\d")
_OFFSET = re.compile(r"^([+-])(\d\d):?(\d\d)$")


@dataclass(frozen=True)
class Event:
    """One dated event of one node (or of a host no bundle is of)."""

    node: str | None
    family: str  # a key of FAMILIES
    what: str  # a few words: "Xid 79 on 0000:9b:00.0: GPU has fallen off the bus"
    utc: datetime | None  # naive UTC; None: the time cannot be placed (``why`` says why)
    clock: str  # a key of CLOCKS
    level: str  # critical, warning or info
    source_file: str | None
    line: int | None
    time_text: str | None = None  # the time as printed
    why: str | None = None
    host: str | None = None  # a job-log line's host (as printed)
    bundle_id: str | None = None
    #: a watchdog line: when its collective began (the line's time minus its ``ran for``)
    since: datetime | None = None

    @property
    def iso(self) -> str | None:
        """``2026-12-01T07:59:15Z``, or None when not placed."""
        return self.utc.strftime("%Y-%m-%dT%H:%M:%SZ") if self.utc else None

    @property
    def where(self) -> str:
        """``file:line`` (the file alone where no line is known)."""
        if not self.source_file:
            return "-"
        return f"{self.source_file}:{self.line}" if self.line else self.source_file

    @property
    def fault(self) -> bool:
        """A fault-class event: critical or warning, and timed when it happened (not when it was seen)."""
        return self.level != "info" and self.family not in ("probe", "boot", "collected")

    @property
    def severe(self) -> bool:
        """A hang or a critical event: what anchors an incident."""
        return self.level == "critical" and self.fault

    @property
    def row(self) -> str:
        """The timeline row the event sits in: its node, else its host (no bundle), else the job log."""
        if self.node:
            return self.node
        return f"{self.host} (no bundle)" if self.host else "job logs (host unknown)"


@dataclass(frozen=True)
class LeftOut:
    """Events of one kind in one file not read (between the first and the last ``KEEP_*``): counted."""

    node: str | None
    family: str
    count: int
    source_file: str
    after_line: int
    before_line: int
    bundle_id: str
    key: str  # the kernel_event signature, else event type


@dataclass(frozen=True)
class Incident:
    """The latest cluster of hangs and critical events, and its first event."""

    first: Event
    start: datetime  # the cluster's start (a hang's begin, or the first critical event)
    end: datetime  # the cluster's last event
    window_start: datetime  # start - lookback: where the first event was searched from
    anchor: Event  # the cluster's earliest hang or critical event
    events: tuple[Event, ...]  # the fault-class events of the window, by time (the first first)
    hangs: int  # watchdog timeouts in the cluster
    critical: int  # other critical events in the cluster


@dataclass
class Timeline:
    events: list[Event]
    left_out: list[LeftOut] = field(default_factory=list)
    incident: Incident | None = None
    no_incident: str | None = None  # why nothing is marked first
    lookback_s: float = LOOKBACK_S
    gap_s: float = GAP_S

    _sorted: tuple[int, list[Event]] = field(default=(-1, []), repr=False, compare=False)

    @property
    def placed(self) -> list[Event]:
        """The events with a UTC time, by time (then file and line); sorted once per list of events."""
        if self._sorted[0] != len(self.events):
            self._sorted = (
                len(self.events),
                sorted((e for e in self.events if e.utc is not None), key=_order),
            )
        return self._sorted[1]

    @property
    def unplaced(self) -> list[Event]:
        """The events whose time cannot be placed, each with why."""
        return [e for e in self.events if e.utc is None]

    def before(
        self, node: str, when: datetime, within_s: float | None = None, faults_only: bool = True
    ) -> list[Event]:
        """A node's placed events before ``when`` (UTC; and not before ``when - within_s``), by time: the
        evidence a node logged before a hang began."""
        since = when - timedelta(seconds=within_s) if within_s is not None else None
        return [
            e
            for e in self.placed
            if e.node == node
            and e.utc is not None
            and e.utc < when
            and (since is None or e.utc >= since)
            and (e.fault or not faults_only)
        ]


def _order(e: Event) -> tuple[Any, ...]:
    return (e.utc or datetime.min, e.source_file or "", e.line or 0, e.family, e.row)


def build(ctx: Context, *, lookback_s: float = LOOKBACK_S, gap_s: float = GAP_S) -> Timeline:
    """The cluster's timeline from the store (see the module text); made once per context."""

    def make() -> Timeline:
        return _build(ctx, lookback_s, gap_s)

    timeline: Timeline = ctx.memo(f"timeline.{lookback_s}.{gap_s}", make)
    return timeline


def _build(ctx: Context, lookback_s: float, gap_s: float) -> Timeline:
    nodes = ctx.rows("SELECT bundle_id, node, hostname, collected_at FROM node")
    clock = KernelClock.load(ctx)
    events: list[Event] = []
    kernel, left_out = _kernel(ctx, clock, nodes)
    events += kernel
    events += _jobs(ctx, nodes)
    events += _probes(ctx)
    events += _boots(ctx, clock, nodes)
    events += _collections(ctx, nodes)
    timeline = Timeline(events, left_out, lookback_s=lookback_s, gap_s=gap_s)
    _incident(timeline)
    if timeline.incident is not None and left_out:
        more = _search_left_out(ctx, clock, timeline, left_out)
        if more:
            timeline.events += more
            _incident(timeline)
    return timeline


# --- kernel events ------------------------------------------------------------------------------------

_KERNEL = f"""
    SELECT bundle_id, node, source_file, line, ts_raw, uptime_s, ts, boot, event_type, signature, xid, pci,
           gpu_index, pid, process, severity, message, interface, device,
           coalesce(signature, event_type) AS key,
           row_number() OVER (PARTITION BY bundle_id, source_file, coalesce(signature, event_type) ORDER BY line) AS rn,
           count(*) OVER (PARTITION BY bundle_id, source_file, coalesce(signature, event_type)) AS n
    FROM kernel_event
    WHERE event_type IS NOT NULL AND event_type NOT IN ({", ".join(f"'{t}'" for t in _NOT_EVENTS)})
    QUALIFY rn <= ? OR rn > n - ?
    ORDER BY bundle_id, source_file, line
"""


def _commands(ctx: Context) -> dict[str, list[tuple[str, str]]]:
    """bundle_id -> (path in bundle, the manifest's command) of its kernel logs."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in ctx.rows(
        "SELECT bundle_id, path, command FROM probe WHERE kind = 'dmesg' AND command IS NOT NULL"
    ):
        out[r["bundle_id"]].append((r["path"], r["command"]))
    return out


def _command_of(
    commands: Mapping[str, list[tuple[str, str]]], bundle_id: str, source_file: str
) -> str | None:
    for path, command in commands.get(bundle_id, ()):
        if source_file == path or source_file.endswith("/" + path):
            return command
    return None


def _kernel(
    ctx: Context, clock: KernelClock, nodes: list[dict[str, Any]]
) -> tuple[list[Event], list[LeftOut]]:
    rows = ctx.rows(_KERNEL, KEEP_HEAD, KEEP_TAIL)
    commands = _commands(ctx)
    collected = {n["bundle_id"]: n["collected_at"] for n in nodes}
    by_file: dict[tuple[str, str], str | None] = {}
    left: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    out: list[Event] = []
    for r in kernel_events.distinct(rows):
        file_key = (r["bundle_id"], r["source_file"])
        if file_key not in by_file:
            by_file[file_key] = _command_of(commands, *file_key)
        out.append(kernel_event(r, clock, by_file[file_key], collected.get(r["bundle_id"])))
    for r in rows:
        if r["n"] > KEEP_HEAD + KEEP_TAIL:
            left[(r["bundle_id"], r["source_file"], r["key"])].append(r)
    gaps = []
    for (bundle_id, source_file, key), kept in left.items():
        head = [r for r in kept if r["rn"] <= KEEP_HEAD]
        tail = [r for r in kept if r["rn"] > KEEP_HEAD]
        family, _ = _kernel_family(kept[0])
        gaps.append(
            LeftOut(
                kept[0]["node"],
                family,
                int(kept[0]["n"]) - len(kept),
                source_file,
                max(r["line"] for r in head),
                min(r["line"] for r in tail),
                bundle_id,
                key,
            )
        )
    return out, gaps


def _kernel_family(r: Mapping[str, Any]) -> tuple[str, str]:
    """(family, level) of a kernel_event row."""
    etype = str(r.get("event_type") or "")
    sig = catalog.BY_ID.get(str(r.get("signature") or ""))
    text = str(r.get("severity") or "")
    if etype == "pcie_aer" and "corrected" in text.lower() and "uncorrect" not in text.lower():
        return (sig.family if sig else "pcie_aer"), "info"
    if sig is not None:
        return sig.family, sig.severity
    if etype == "xid":
        return "xid", xid_entry(int(r["xid"])).severity.value if r.get("xid") is not None else "warning"
    if etype == "sxid":
        return "sxid", "critical" if "non" not in text.lower() and "fatal" in text.lower() else "warning"
    if etype in _GPU_DRIVER:
        return "gpu_driver", _GPU_DRIVER[etype]
    if etype in _LINK:
        return "link", _LINK[etype]
    if etype in _TYPE_FAMILY:
        return _TYPE_FAMILY[etype], _TYPE_LEVEL.get(etype, "warning")
    return "kernel_error", "warning"


def _kernel_what(r: Mapping[str, Any], family: str) -> str:
    """A few words for a kernel event."""
    etype = str(r.get("event_type") or "")
    where = r.get("pci") or (f"GPU{r['gpu_index']}" if r.get("gpu_index") is not None else None)
    dev = r.get("interface") or r.get("device") or where
    message = " ".join(str(r.get("message") or "").split())
    if dev and message.startswith(str(dev)):
        dev = None  # the message names it first
    if etype in ("xid", "sxid"):
        head = f"{'Xid' if etype == 'xid' else 'SXid'} {r.get('xid')}" + (f" on {where}" if where else "")
    elif family == "link":
        head = etype.replace("_", " ") + (f" {dev}" if dev else "")
    else:
        head = str(r.get("signature") or etype).replace("_", " ") + (f" {dev}" if dev else "")
    return _cut(f"{head}: {message}" if message else head)


def kernel_time(
    r: Mapping[str, Any], clock: KernelClock, command: str | None, collected: datetime | None = None
) -> tuple[datetime | None, str, str | None]:
    """(UTC or None, clock key, why not placed) of a kernel_event row (see the module text).

    >>> from datetime import datetime
    >>> t = datetime(2026, 12, 1, 8, 0, 0)
    >>> c = KernelClock.of({"b": (t, 46901.13, "proc_uptime")})
    >>> kernel_time({"bundle_id": "b", "ts": None, "uptime_s": 1843.308145, "ts_raw": "1843.308145", "boot": 0}, c, "dmesg")[:2]
    (datetime.datetime(2026, 11, 30, 19, 29, 2), 'kernel-uptime')
    >>> kernel_time({"bundle_id": "x", "ts": None, "uptime_s": 12.5, "ts_raw": "12.5", "boot": 0}, c, "dmesg", t)[1:]
    ('kernel-since-boot', "seconds since boot, and the node's bundle has no uptime reading to convert them")
    >>> t = datetime(2024, 8, 30, 11, 43, 9)
    >>> [kernel_time({"ts": t, "ts_raw": "Fri Aug 30 11:43:09 2024"}, c, cmd)[1] for cmd in ("TZ=UTC dmesg -T", "dmesg -T")]
    ['dmesg-T-utc', 'dmesg-T-local']
    """
    raw = " ".join(str(r.get("ts_raw") or "").split())
    ts, up, boot = r.get("ts"), r.get("uptime_s"), r.get("boot")
    if isinstance(ts, datetime):
        if _CTIME.match(raw):
            if command and "TZ=UTC" in command:
                return ts, "dmesg-T-utc", None
            return (
                None,
                "dmesg-T-local",
                "dmesg -T prints the host's local time and the bundle does not say its zone",
            )
        if _ZONED.search(raw) or _UNIX.match(raw):
            return ts.replace(tzinfo=None), "kernel-zoned", None
        return None, "kernel-no-zone", "the stamp prints no zone"
    if up is not None:
        if boot is None:
            return (
                None,
                "kernel-since-boot",
                "seconds since boot in a log that may span boots (which one is not known)",
            )
        if int(boot) < 0:
            return (
                None,
                "kernel-since-boot",
                f"seconds since an earlier boot (boot {int(boot)}), whose start is not known",
            )
        known = clock.clock_of(r.get("bundle_id"))
        if known is None:
            why = (
                "seconds since boot, and the node's collection time in UTC is not known"
                if collected is None
                else "seconds since boot, and the node's bundle has no uptime reading to convert them"
            )
            return None, "kernel-since-boot", why
        t = clock.at(r.get("bundle_id"), {"ts": None, "uptime_s": up, "raw": raw, "boot": boot})
        if t.utc is None:
            return (
                None,
                "kernel-since-boot",
                "stamped later than the node's uptime at collection: of an earlier boot",
            )
        return t.utc, "kernel-uptime" if t.basis == "uptime" else "kernel-uptime-approx", None
    if _SYSLOG.match(raw):
        return None, "syslog", "a syslog stamp prints no year and no zone"
    if _RELTIME.match(raw):
        return None, "reltime", "dmesg --reltime prints the time since the line before"
    if raw:
        return None, "none", f"the stamp {raw!r} is no time that can be placed"
    return None, "none", "the line prints no time"


def kernel_event(
    r: Mapping[str, Any], clock: KernelClock, command: str | None, collected: datetime | None = None
) -> Event:
    """The timeline event of a kernel_event row."""
    family, level = _kernel_family(r)
    utc, clock_key, why = kernel_time(r, clock, command, collected)
    return Event(
        r.get("node"),
        family,
        _kernel_what(r, family),
        utc,
        clock_key,
        level,
        r.get("source_file"),
        r.get("line"),
        r.get("ts_raw"),
        why,
        bundle_id=r.get("bundle_id"),
    )


def _search_left_out(
    ctx: Context, clock: KernelClock, timeline: Timeline, gaps: list[LeftOut]
) -> list[Event]:
    """The events left out of a file's middle that fall inside the incident's window (all of them: a
    window is minutes long), so that the first event is exact."""
    incident = timeline.incident
    assert incident is not None
    lo, hi = incident.window_start, incident.end
    # one query for every gap: its file, kind and lines, and the window in its node's seconds since boot
    cols: dict[str, list[Any]] = {k: [] for k in ("b", "f", "k", "lo", "hi", "up_lo", "up_hi")}
    for gap in gaps:
        known = clock.clock_of(gap.bundle_id)
        up: tuple[float | None, float | None] = (None, None)
        if known is not None:
            collected, uptime, _ = known
            up = (
                uptime - (collected - lo).total_seconds() - 1,
                uptime - (collected - hi).total_seconds() + 1,
            )
        values = (gap.bundle_id, gap.source_file, gap.key, gap.after_line, gap.before_line, *up)
        for key, value in zip(cols, values, strict=True):
            cols[key].append(value)
    rows = ctx.rows(
        """WITH g AS (SELECT unnest(?::VARCHAR[]) AS b, unnest(?::VARCHAR[]) AS f, unnest(?::VARCHAR[]) AS k,
                             unnest(?::BIGINT[]) AS lo, unnest(?::BIGINT[]) AS hi,
                             unnest(?::DOUBLE[]) AS up_lo, unnest(?::DOUBLE[]) AS up_hi)
           SELECT e.bundle_id, e.node, e.source_file, e.line, e.ts_raw, e.uptime_s, e.ts, e.boot, e.event_type,
                  e.signature, e.xid, e.pci, e.gpu_index, e.pid, e.process, e.severity, e.message, e.interface,
                  e.device
           FROM kernel_event e JOIN g ON e.bundle_id = g.b AND e.source_file = g.f
                AND coalesce(e.signature, e.event_type) = g.k AND e.line > g.lo AND e.line < g.hi
           WHERE (e.ts IS NOT NULL AND e.ts BETWEEN ? AND ?)
              OR (e.ts IS NULL AND e.uptime_s BETWEEN g.up_lo AND g.up_hi)
           ORDER BY e.bundle_id, e.source_file, e.line""",
        *cols.values(),
        lo,
        hi,
    )
    commands = _commands(ctx)
    collected_at = {
        n["bundle_id"]: n["collected_at"] for n in ctx.rows("SELECT bundle_id, collected_at FROM node")
    }
    found = []
    for r in rows:
        e = kernel_event(
            r,
            clock,
            _command_of(commands, r["bundle_id"], r["source_file"]),
            collected_at.get(r["bundle_id"]),
        )
        if e.utc is not None and lo <= e.utc <= hi:
            found.append(e)
    return found


# --- job logs -----------------------------------------------------------------------------------------

_JOBS = f"""
    SELECT bundle_id, node, source_file, line, kind, code, time_text, ts, utc_offset, host, rank, pg_rank,
           op_type, seq_num, ran_for_ms, exit_code, message,
           row_number() OVER (PARTITION BY bundle_id, source_file, kind ORDER BY line) AS rn,
           count(*) OVER (PARTITION BY bundle_id, source_file, kind) AS n
    FROM job_log_event WHERE kind IN ({", ".join(f"'{k}'" for k in _JOB_KINDS)})
    QUALIFY rn <= ? OR rn > n - ?
    ORDER BY bundle_id, source_file, line
"""


def job_time(r: Mapping[str, Any]) -> tuple[datetime | None, str, str | None]:
    """(UTC or None, clock key, why not placed) of a job_log_event row: a dated stamp in its printed zone."""
    ts, offset, text = r.get("ts"), r.get("utc_offset"), str(r.get("time_text") or "").strip()
    if isinstance(ts, datetime):
        m = _OFFSET.match(str(offset or ""))
        if m is None:
            return (
                None,
                "job-no-zone",
                "the log prints its date without a zone (local time of an unknown zone)",
            )
        delta = timedelta(hours=int(m[2]), minutes=int(m[3])) * (1 if m[1] == "+" else -1)
        return ts.replace(tzinfo=None) - delta, "job-zoned", None
    if _GLOG.match(text):
        return None, "glog", "glog stamps print month, day and time: no year and no zone"
    if text:
        return None, "job-partial", f"the stamp {text!r} gives no date and no zone"
    return None, "none", "the line prints no time"


def _jobs(ctx: Context, nodes: list[dict[str, Any]]) -> list[Event]:
    rows = ctx.rows(_JOBS, JOB_KEEP, JOB_KEEP)
    if not rows:
        return []
    index = HostIndex(nodes)
    hosts = rank_hosts(ctx)
    out: list[Event] = []
    for r in rows:
        family, level = _JOB_KINDS[r["kind"]]
        host = host_of(r, hosts)
        node = index.match(host)
        utc, clock_key, why = job_time(r)
        zone = r.get("utc_offset")
        clock_key = f"job-zoned {zone}" if clock_key == "job-zoned" and zone else clock_key
        who = f"rank {r['rank']}" if r.get("rank") is not None else None
        who = who or (f"group rank {r['pg_rank']}" if r.get("pg_rank") is not None else None)
        what = _job_what(r, who)
        began = None
        if r["kind"] == "watchdog_timeout" and utc is not None and r.get("ran_for_ms") is not None:
            began = utc - timedelta(milliseconds=int(r["ran_for_ms"]))
        common = {"host": host, "bundle_id": r["bundle_id"]}
        out.append(
            Event(node, family, what, utc, clock_key, level, r["source_file"], r["line"], r.get("time_text"),
                  why, since=began, **common)
        )  # fmt: skip
        if r["kind"] == "watchdog_timeout" and r.get("ran_for_ms") is not None:
            op = f"{r.get('op_type') or 'collective'}" + (
                f" SeqNum {r['seq_num']}" if r.get("seq_num") is not None else ""
            )
            out.append(
                Event(node, "hang_began", _cut(f"{who + ': ' if who else ''}{op} began (timed out after "
                      f"{int(r['ran_for_ms']) / 1000:.0f} s)"), began, clock_key, "critical", r["source_file"],
                      r["line"], r.get("time_text"), why, **common)
            )  # fmt: skip
    return out


def _job_what(r: Mapping[str, Any], who: str | None) -> str:
    kind = r["kind"]
    lead = f"{who}: " if who else ""
    if kind == "watchdog_timeout":
        op = r.get("op_type") or "collective"
        seq = f" SeqNum {r['seq_num']}" if r.get("seq_num") is not None else ""
        ran = f" after {int(r['ran_for_ms']) / 1000:.0f} s" if r.get("ran_for_ms") is not None else ""
        return _cut(f"{lead}watchdog timeout: {op}{seq}{ran}")
    if kind == "rank_exit":
        exit_code = f" (exit code {r['exit_code']})" if r.get("exit_code") is not None else ""
        return _cut(f"{lead}rank exited{exit_code}")
    message = " ".join(str(r.get("message") or "").split())
    code = f"{r['code']}: " if r.get("code") else ""
    return _cut(f"{lead}{code}{message}")


# --- probes, boots, collections -----------------------------------------------------------------------


def _probes(ctx: Context) -> list[Event]:
    rows = ctx.rows(
        """SELECT a.bundle_id, a.node, a.kind, a.answer, a.source_file, a.line, n.collected_at
           FROM probe_answer a LEFT JOIN node n ON n.bundle_id = a.bundle_id
           QUALIFY row_number() OVER (PARTITION BY a.bundle_id, a.kind, a.answer ORDER BY a.source_file, a.line) = 1
           ORDER BY a.node, a.kind"""
    )
    out = []
    for r in rows:
        at = r["collected_at"]
        why = None if at is not None else "the node's collection time in UTC is not known"
        out.append(
            Event(r["node"], "probe", _cut(f"{r['kind']}: {r['answer']}"), at, "probe", "info", r["source_file"],
                  r["line"], why=why, bundle_id=r["bundle_id"])
        )  # fmt: skip
    return out


def _boots(ctx: Context, clock: KernelClock, nodes: list[dict[str, Any]]) -> list[Event]:
    lines: dict[tuple[str, str, float], tuple[str, int]] = {}
    for r in ctx.rows(
        "SELECT bundle_id, source, uptime_s, source_file, line FROM host_uptime "
        "WHERE uptime_s IS NOT NULL ORDER BY bundle_id, line"
    ):
        lines.setdefault((r["bundle_id"], r["source"], float(r["uptime_s"])), (r["source_file"], r["line"]))
    out = []
    for n in nodes:
        known = clock.clock_of(n["bundle_id"])
        if known is None:
            continue
        collected, uptime, source = known
        boot = (collected - timedelta(seconds=uptime) + timedelta(microseconds=500_000)).replace(
            microsecond=0
        )
        file, line = lines.get((n["bundle_id"], source, uptime), (None, None))
        approx = source != "proc_uptime"
        out.append(
            Event(n["node"], "boot", f"booted (up {uptime / 86400:.1f} days at collection)", boot,
                  "boot-approx" if approx else "boot", "info", file, line, bundle_id=n["bundle_id"])
        )  # fmt: skip
    return out


def _collections(ctx: Context, nodes: list[dict[str, Any]]) -> list[Event]:
    out = []
    for n in nodes:
        if not n["node"]:
            continue
        evidence = ctx.meta_evidence(n["node"], "collected_at")
        at = n["collected_at"]
        at = at.replace(tzinfo=None) if isinstance(at, datetime) else None
        why = None if at else "meta.env gives no collection time in UTC"
        out.append(
            Event(n["node"], "collected", "collected", at, "collection", "info", evidence.file, evidence.line,
                  why=why, bundle_id=n["bundle_id"])
        )  # fmt: skip
    return out


# --- the incident -------------------------------------------------------------------------------------


def _incident(timeline: Timeline) -> None:
    """Mark the first event of the latest cluster of hangs and critical events (see the module text)."""
    placed = timeline.placed
    spans: list[tuple[datetime, datetime, Event]] = []
    for e in placed:
        if e.severe and e.utc is not None:
            spans.append((e.since or e.utc, e.utc, e))
    if not spans:
        timeline.incident = None
        timeline.no_incident = (
            "no hang and no critical event could be placed in time"
            if any(e.severe for e in timeline.unplaced)
            else "no hang and no critical event in the evidence"
        )
        return
    spans.sort(key=lambda s: (s[0], _order(s[2])))
    gap = timedelta(seconds=timeline.gap_s)
    clusters: list[list[tuple[datetime, datetime, Event]]] = [[spans[0]]]
    end = spans[0][1]
    for span in spans[1:]:
        if span[0] > end + gap:
            clusters.append([span])
        else:
            clusters[-1].append(span)
        end = max(end, span[1])
    last = clusters[-1]
    start = min(s[0] for s in last)
    stop = max(s[1] for s in last)
    window_start = start - timedelta(seconds=timeline.lookback_s)
    window = [e for e in placed if e.fault and e.utc is not None and window_start <= e.utc <= stop]
    anchor = min((s for s in last), key=lambda s: (s[0], _order(s[2])))[2]
    hangs = sum(1 for s in last if s[2].family == "watchdog")
    timeline.incident = Incident(
        first=window[0],
        start=start,
        end=stop,
        window_start=window_start,
        anchor=anchor,
        events=tuple(window),
        hangs=hangs,
        critical=sum(1 for s in last if s[2].family not in ("watchdog", "hang_began")),
    )
    timeline.no_incident = None


def _cut(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summary(timeline: Timeline) -> dict[str, Any]:
    """Counts for a report: events placed and not, per clock, and the nodes each clock placed."""
    placed: dict[str, int] = defaultdict(int)
    unplaced: dict[str, int] = defaultdict(int)
    for e in timeline.events:
        (placed if e.utc is not None else unplaced)[e.clock] += 1
    return {"placed": dict(placed), "unplaced": dict(unplaced)}


def families_of(events: Iterable[Event]) -> list[str]:
    """The families the events are of, in :data:`FAMILIES` order."""
    present = {e.family for e in events}
    return [f for f in FAMILIES if f in present]
