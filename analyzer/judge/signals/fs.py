"""Shared file-system signals: CloudWatch series and how long they stay over a line, iowait per node,
near-full mounts.  Used by the fs rules and by fs.verdict, which weighs them together.

Each signal has one query here, and every rule (and the report's charts) reads it through it:
:func:`fsx_utilization_series`, :func:`fsx_free_capacity_series`, :func:`ebs_queue_series`,
:func:`iowait_by_node` (:data:`IOWAIT_BY_NODE_SQL` for SQL that builds on it) and
:func:`data_mounts_over`; :func:`run_evidence` is the evidence of a run over a line; :func:`device_mounts`
ties the block devices iostat names to the mount points df and /proc/mounts name.

A CloudWatch series may carry no statistic name (a ``get-metric-data`` export whose query, label and
Id name none: ``statistic`` None).  Such a series is offered only where the export has no series of a
known statistic for the same metric and dimension; each rule decides whether its own logic can judge
it (its ``usable``) and says so in its finding.  A rule that had nothing to judge calls
:func:`examined_nothing` instead of passing."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from analyzer.judge import engine
from analyzer.judge.engine import Context
from analyzer.judge.findings import Evidence

#: AWS/FSx percentage metrics that say how much of a provisioned limit is in use (docs/sources.md#fsx-ebs-metrics).
FSX_UTIL_METRICS = (
    "DiskIopsUtilization",
    "NetworkThroughputUtilization",
    "FileServerDiskIopsUtilization",
    "FileServerDiskThroughputUtilization",
    "CPUUtilization",
)
#: The rules whose finding is a shared storage cause: per-node iowait is their symptom (explained_by).
STORAGE_CAUSES = (
    "fs.fsx.utilization_sustained",
    "fs.fsx.free_capacity_low",
    "fs.ebs.queue_sustained",
    "fs.lustre.ost_imbalance",
    "fs.lustre.full",
    "fs.verdict",
)
#: Statistic preferred when a series was exported with several.
_STAT_ORDER = ("Maximum", "Average", "p99", "p90", "Sum", "Minimum", "SampleCount")


@dataclass
class Series:
    bundle_id: str
    namespace: str
    metric: str
    dimension_name: str | None
    dimension_value: str | None
    statistic: str | None  # None: the export names no statistic (see the module docstring)
    period_s: int
    points: list[tuple[datetime, float, str, int | None]] = field(
        default_factory=list
    )  # ts, value, file, line
    #: the export gave a period, or it was derived from two datapoints (else period_s is 60 by default)
    period_known: bool = True

    @property
    def label(self) -> str:
        return f"{self.dimension_value or '?'} {self.metric} ({self.statistic or 'statistic unknown'})"

    @property
    def peak(self) -> float:
        return max(p[1] for p in self.points)


@dataclass(frozen=True)
class Run:
    """How long a series stayed at/above (or above) a line."""

    minutes_over: float
    longest_minutes: float
    window_minutes: float
    longest_start: datetime | None
    longest_end: datetime | None
    peak: float
    peak_at: tuple[str, int | None]  # evidence of the peak datapoint
    #: evidence of the first datapoint of the longest run (None when no datapoint reached the line)
    longest_start_at: tuple[str, int | None] | None = None

    def as_params(self) -> dict[str, Any]:
        return {
            "minutes_over": round(self.minutes_over, 1),
            "longest_minutes": round(self.longest_minutes, 1),
            "window_minutes": round(self.window_minutes, 1),
            "longest_start": self.longest_start.isoformat() if self.longest_start else None,
            "longest_end": self.longest_end.isoformat() if self.longest_end else None,
            "peak": round(self.peak, 3),
        }


def series(
    ctx: Context, namespace: str, metrics: tuple[str, ...], stats: tuple[str, ...] = _STAT_ORDER
) -> list[Series]:
    """One series per (dimension, metric), in the first statistic of ``stats`` the export has; the
    series of no named statistic when the export has none of them (other statistics are left out)."""
    rows = ctx.rows(
        f"""
        SELECT bundle_id, namespace, metric, dimension_name, dimension_value, statistic,
               coalesce(period_s, 60) AS period_s, period_s IS NOT NULL AS period_known, ts, value,
               source_file, coalesce(value_line, line) AS line
        FROM cw_metric
        WHERE namespace = ? AND metric IN ({",".join("?" * len(metrics))}) AND value IS NOT NULL AND ts IS NOT NULL
        ORDER BY dimension_value, metric, statistic, ts
        """,
        namespace,
        *metrics,
    )
    found: dict[tuple[Any, ...], Series] = {}
    for r in rows:
        key = (r["dimension_value"], r["metric"], r["statistic"])
        s = found.get(key)
        if s is None:
            s = found[key] = Series(
                r["bundle_id"], r["namespace"], r["metric"], r["dimension_name"], r["dimension_value"],
                r["statistic"], int(r["period_s"]), period_known=bool(r["period_known"]),
            )  # fmt: skip
        s.points.append((r["ts"], float(r["value"]), r["source_file"], r["line"]))
    order = (*stats, None)  # a named statistic first; no name last
    best: dict[tuple[Any, ...], Series] = {}
    for (dim, metric, stat), s in found.items():
        if stat not in order:
            continue
        cur = best.get((dim, metric))
        if cur is None or order.index(stat) < order.index(cur.statistic):
            best[(dim, metric)] = s
    return [best[k] for k in sorted(best, key=lambda k: (str(k[0]), k[1]))]


def examined_nothing(reason: str) -> None:
    """End a rule that had no series of its own to judge (only other metrics, or only series its logic
    cannot read) as not examined instead of 'pass': raises ``analyzer.judge.engine.NotExamined(reason)``."""
    raise engine.NotExamined(reason)


def unknown_statistic_note(s: Series, why: str) -> dict[str, Any]:
    """``{"statistic_note": ...}`` for a series of no named statistic, else ``{}``."""
    if s.statistic is not None:
        return {}
    return {"statistic_note": f"the export names no statistic (get-metric-data); judged because {why}"}


def fsx_utilization_series(ctx: Context) -> list[Series]:
    """The AWS/FSx utilisation series (:data:`FSX_UTIL_METRICS`, Maximum preferred): fs.fsx.utilization_sustained
    and fs.verdict."""
    return series(ctx, "AWS/FSx", FSX_UTIL_METRICS)


def fsx_free_capacity_series(ctx: Context) -> list[Series]:
    """The AWS/FSx FreeDataStorageCapacity series (Minimum preferred): fs.fsx.free_capacity_low and fs.verdict."""
    return series(ctx, "AWS/FSx", ("FreeDataStorageCapacity",), ("Minimum", "Average", "Maximum"))


def ebs_queue_series(ctx: Context) -> list[Series]:
    """The AWS/EBS VolumeQueueLength series (Average preferred): fs.ebs.queue_sustained and fs.verdict."""
    return series(ctx, "AWS/EBS", ("VolumeQueueLength",), ("Average", "Maximum", "p99", "p90"))


def run_over(s: Series, line: float, strict: bool = False) -> Run:
    """Minutes at/above ``line`` (above when ``strict``), the longest unbroken run, the window.

    A run breaks at a datapoint under the line or at a gap longer than 1.5 periods.
    """
    period_min = s.period_s / 60.0
    pts = sorted(s.points, key=lambda p: p[0])
    over = 0
    best: tuple[int, datetime | None, datetime | None] = (0, None, None)
    best_at: tuple[str, int | None] | None = None
    cur_n, cur_start, prev_ts = 0, None, None
    cur_at: tuple[str, int | None] | None = None
    for ts, value, file, no in pts:
        hit = value > line if strict else value >= line
        gap = prev_ts is not None and (ts - prev_ts).total_seconds() > 1.5 * s.period_s
        if hit:
            over += 1
            if cur_n == 0 or gap:
                cur_n, cur_start, cur_at = 0, ts, (file, no)
            cur_n += 1
            if cur_n > best[0]:
                best, best_at = (cur_n, cur_start, ts), cur_at
        else:
            cur_n = 0
        prev_ts = ts
    peak = max(pts, key=lambda p: p[1])
    window = ((pts[-1][0] - pts[0][0]).total_seconds() / 60.0 + period_min) if pts else 0.0
    end = best[2]
    return Run(
        minutes_over=over * period_min,
        longest_minutes=best[0] * period_min,
        window_minutes=window,
        longest_start=best[1],
        longest_end=end,
        peak=peak[1],
        peak_at=(peak[2], peak[3]),
        longest_start_at=best_at,
    )


def run_evidence(ctx: Context, run: Run) -> list[Evidence]:
    """The datapoints a finding on ``run`` cites: the peak, then the first datapoint of the longest run
    (once when they are the same line)."""
    points = [run.peak_at]
    if run.longest_start_at is not None and run.longest_start_at != run.peak_at:
        points.append(run.longest_start_at)
    return [ctx.evidence(file, line) for file, line in points]


#: Mean and peak %iowait per node over the interval reports of ``iostat -c`` (the first report, since
#: boot, excluded): columns bundle_id, node, mean, peak, reports, source_file, line (of the peak).
IOWAIT_BY_NODE_SQL = """
    SELECT bundle_id, node, avg(iowait_pct) AS mean, max(iowait_pct) AS peak, count(*) AS reports,
           min(source_file) AS source_file, arg_max(line, iowait_pct) AS line
    FROM iostat_cpu WHERE since_boot IS NOT TRUE AND iowait_pct IS NOT NULL
    GROUP BY bundle_id, node
"""


def iowait_by_node(ctx: Context) -> list[dict[str, Any]]:
    """The rows of :data:`IOWAIT_BY_NODE_SQL`, by node: fs.iowait.high and fs.verdict."""
    return ctx.rows(f"{IOWAIT_BY_NODE_SQL} ORDER BY node")


#: Mount points and file-system types that are not data volumes.
_NOT_DATA = """
    (mountpoint IN ('/', '/dev', '/dev/shm', '/run', '/run/lock', '/sys/fs/cgroup') OR mountpoint LIKE '/boot%'
     OR mountpoint LIKE '/snap/%' OR mountpoint LIKE '/run/%' OR mountpoint LIKE '/sys/%' OR mountpoint LIKE '/proc%'
     OR mountpoint LIKE '/etc/%' OR mountpoint LIKE '/var/log/%' OR device LIKE '/dev/loop%'
     OR coalesce(fstype, '') IN ('tmpfs', 'devtmpfs', 'squashfs', 'overlay', 'efivarfs', 'vfat', 'proc', 'sysfs')
     OR device IN ('tmpfs', 'devtmpfs', 'shm', 'overlay', 'efivarfs', 'udev', 'none'))
"""


def data_mounts_over(ctx: Context, pct: float) -> list[dict[str, Any]]:
    """Data mounts (FSx, /opt/sagemaker, NVMe scratch, other volumes) used more than ``pct``."""
    return ctx.rows(
        f"""
        SELECT bundle_id, node, mountpoint, device, fstype, use_pct, size_bytes, avail_bytes, source_file, line,
               coalesce(is_lustre, false) AS is_lustre, coalesce(is_network, false) AS is_network
        FROM filesystem_usage
        WHERE use_pct > ? AND mountpoint IS NOT NULL AND NOT {_NOT_DATA}
        ORDER BY node, mountpoint
        """,
        pct,
    )


def by_node(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["node"]].append(r)
    return out


#: A partition and its disk: nvme0n1p1 -> nvme0n1, mmcblk0p2 -> mmcblk0, md0p1 -> md0, xvda1 -> xvda, sda2 -> sda.
_PARTITION = re.compile(r"((?:nvme\d+n\d+|mmcblk\d+|md\d+|nbd\d+)p\d+|(?:[shv]|xv)d[a-z]+\d+)")
_PART_SUFFIX = re.compile(r"p?\d+$")


def disk_of(name: str) -> str:
    """The disk a partition is on (a name that is no partition is its own disk).

    >>> disk_of("nvme0n1p15"), disk_of("xvda1"), disk_of("sdb"), disk_of("md127"), disk_of("dm-0")
    ('nvme0n1', 'xvda', 'sdb', 'md127', 'dm-0')
    """
    return _PART_SUFFIX.sub("", name) if _PARTITION.fullmatch(name) else name


@dataclass(frozen=True)
class DeviceMount:
    """The mount points of a block device, "/" first, and how they were tied to it when no line names it."""

    mounts: tuple[str, ...] = ()
    #: None when a df or /proc/mounts line names the device (or a partition of it); else how it was inferred
    inferred: str | None = None

    @property
    def label(self) -> str:
        """``on /``, ``on / (inferred: ...)``, ``on /opt/sagemaker``, or ``(no mount found)``."""
        if not self.mounts:
            return "(no mount found)"
        return "on " + ", ".join(self.mounts) + (f" (inferred: {self.inferred})" if self.inferred else "")


def _shown(mounts: set[str]) -> tuple[str, ...]:
    """Mount points as shown: "/" first; /boot partitions only when nothing else is on the device."""
    kept = {m for m in mounts if not m.startswith("/boot")} or mounts
    return tuple(sorted(kept, key=lambda m: (m != "/", m)))


def device_mounts(
    ctx: Context, devices: Mapping[tuple[str, str], Iterable[str]]
) -> dict[tuple[str, str, str], DeviceMount]:
    """Where the block devices iostat names (``devices``: (bundle_id, node) -> names) are mounted, from the
    node's df and /proc/mounts lines: ``/dev/nvme1n1`` on /opt/sagemaker is nvme1n1; a partition
    (``/dev/nvme0n1p1``) is its disk's; ``/dev/mapper/NAME`` is the device iostat -N prints as NAME.
    Two inferences, said in :attr:`DeviceMount.inferred`: "/" on ``/dev/root`` (DLAMI and Ubuntu cloud
    images) is the disk that holds the /boot or /boot/efi partition, when one disk does and no line names
    "/" on a device; the one ``dm-N`` iostat names is the one ``/dev/mapper`` mount (the DLAMI's
    /dev/mapper/vg.01-lv_ephemeral on /opt/dlami/nvme).  A device none of this ties is absent."""
    rows = ctx.rows(
        """
        SELECT DISTINCT bundle_id, node, device, mountpoint FROM (
            SELECT bundle_id, node, device, mountpoint FROM filesystem_usage
            UNION ALL SELECT bundle_id, node, device, mountpoint FROM "mount")
        WHERE device LIKE '/dev/%' AND mountpoint IS NOT NULL
        """
    )
    by_node: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for r in rows:
        by_node[(r["bundle_id"], r["node"])].append((r["device"][5:], r["mountpoint"]))
    out: dict[tuple[str, str, str], DeviceMount] = {}
    for key, names in devices.items():
        lines = by_node.get(key, [])
        on_disk: dict[str, set[str]] = defaultdict(set)  # disk (or partition) -> mount points
        mapper: dict[str, set[str]] = defaultdict(set)
        root_alias: set[str] = set()
        boot_disks: set[str] = set()
        for dev, mountpoint in lines:
            if dev == "root":
                root_alias.add(mountpoint)
            elif dev.startswith("mapper/"):
                mapper[dev[7:]].add(mountpoint)
            elif "/" not in dev:
                on_disk[dev].add(mountpoint)
                on_disk[disk_of(dev)].add(mountpoint)
                if mountpoint.startswith("/boot"):
                    boot_disks.add(disk_of(dev))
        root_named = any("/" in m for m in (*on_disk.values(), *mapper.values()))
        names = list(names)
        dms = [n for n in names if n.startswith("dm-") and n not in on_disk]
        for name in names:
            found = set(on_disk.get(name, ())) | set(mapper.get(name, ()))
            inferred: list[str] = []
            if root_alias and not root_named and len(boot_disks) == 1 and name in boot_disks:
                boot = sorted(m for m in on_disk[name] if m.startswith("/boot"))
                found |= root_alias
                inferred.append(f"{', '.join(sorted(root_alias))} is on /dev/root, on the disk of {boot[0]}")
            if not found and dms == [name] and len(mapper) == 1:
                ((only, mounts),) = mapper.items()
                found |= mounts
                inferred.append(f"the one device-mapper device, the one /dev/mapper mount ({only})")
            if found:
                out[(key[0], key[1], name)] = DeviceMount(_shown(found), "; ".join(inferred) or None)
    return out


@dataclass(frozen=True)
class LustreUse:
    """One Lustre file system as ``lfs df`` shows it (OSTs only; several nodes' captures of it together)."""

    fsname: str
    bundle_id: str
    mountpoints: tuple[str, ...]  # where the nodes mount it (lfs df's path)
    nodes: tuple[str, ...]
    osts: int
    max_pct: float
    min_pct: float
    top: dict[str, Any]  # the fullest OST: i (index), f (file), l (line)
    bottom: dict[str, Any]  # the emptiest OST
    full_osts: tuple[int, ...]  # OSTs above the full line
    #: the file system's own use: its filesystem_summary line, else used / (used + available) of its OSTs
    total_pct: float | None
    total_from: str  # "summary" or "osts" (or "none")
    avail_bytes: int | None
    summary_at: tuple[str, int] | None  # the summary line (file, line)
    full_line: float

    @property
    def spread_pct(self) -> float:
        return round(self.max_pct - self.min_pct, 1)

    @property
    def full(self) -> bool:
        """Every OST above the full line, or the file system as a whole: grow it or free space."""
        return (self.osts > 0 and self.min_pct > self.full_line) or (
            self.total_pct is not None and self.total_pct > self.full_line
        )


def lustre_use(ctx: Context, full_line: float) -> list[LustreUse]:
    """Each Lustre file system of the ``lfs df`` captures, judged against ``full_line``: fs.lustre.full,
    fs.lustre.ost_imbalance and fs.data.full (which leaves a Lustre mount that lfs df shows full to
    fs.lustre.full)."""
    rows = ctx.rows(
        """
        WITH ost AS (  -- one row per OST (the fullest where several nodes captured it)
            SELECT fsname, target_index, max(use_pct) AS use_pct,
                   arg_max(struct_pack(b := bundle_id, n := node, i := target_index, f := source_file, l := line,
                                       u := used_bytes, a := avail_bytes), use_pct) AS pos
            FROM lustre_target WHERE target_type = 'OST' AND use_pct IS NOT NULL GROUP BY ALL),
        sums AS (
            SELECT fsname, max(use_pct) AS use_pct,
                   arg_max(struct_pack(f := source_file, l := line, a := avail_bytes), use_pct) AS pos
            FROM lustre_target WHERE target_type = 'summary' AND use_pct IS NOT NULL GROUP BY ALL),
        seen AS (
            SELECT fsname, list(DISTINCT mountpoint ORDER BY mountpoint) FILTER (WHERE mountpoint IS NOT NULL) AS mounts,
                   list(DISTINCT node ORDER BY node) AS nodes
            FROM lustre_target WHERE target_type IN ('OST', 'summary') GROUP BY ALL)
        SELECT o.fsname, count(*) AS osts, max(o.use_pct) AS max_pct, min(o.use_pct) AS min_pct,
               arg_max(o.pos, o.use_pct) AS top, arg_min(o.pos, o.use_pct) AS bottom,
               list(o.target_index ORDER BY o.target_index) FILTER (WHERE o.use_pct > ?) AS full_osts,
               sum(struct_extract(o.pos, 'u')) AS used, sum(struct_extract(o.pos, 'a')) AS avail, bool_and(struct_extract(o.pos, 'u') IS NOT NULL AND struct_extract(o.pos, 'a') IS NOT NULL) AS sized,
               any_value(s.use_pct) AS summary_pct, any_value(s.pos) AS summary_at,
               any_value(seen.mounts) AS mounts, any_value(seen.nodes) AS nodes
        FROM ost o LEFT JOIN sums s USING (fsname) LEFT JOIN seen USING (fsname)
        GROUP BY o.fsname ORDER BY o.fsname
        """,
        full_line,
    )
    out = []
    for r in rows:
        if r["summary_pct"] is not None:
            total, source = float(r["summary_pct"]), "summary"
            avail = r["summary_at"]["a"]
        elif r["sized"] and (r["used"] or 0) + (r["avail"] or 0) > 0:
            total = round(100.0 * r["used"] / (r["used"] + r["avail"]), 1)
            source, avail = "osts", int(r["avail"])
        else:
            total, source, avail = None, "none", None
        at = r["summary_at"]
        out.append(
            LustreUse(
                fsname=r["fsname"],
                bundle_id=r["top"]["b"],
                mountpoints=tuple(r["mounts"] or ()),
                nodes=tuple(r["nodes"] or ()),
                osts=r["osts"],
                max_pct=r["max_pct"],
                min_pct=r["min_pct"],
                top=r["top"],
                bottom=r["bottom"],
                full_osts=tuple(r["full_osts"] or ()),
                total_pct=total,
                total_from=source,
                avail_bytes=avail,
                summary_at=(at["f"], at["l"]) if at else None,
                full_line=full_line,
            )  # fmt: skip
        )
    return out
