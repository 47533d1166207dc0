"""Shared file-system signals: CloudWatch series and how long they stay over a line, iowait per node,
near-full mounts.  Used by the fs rules and by fs.verdict, which weighs them together.

Each signal has one query here, and every rule (and the report's charts) reads it through it:
:func:`fsx_utilization_series`, :func:`fsx_free_capacity_series`, :func:`ebs_queue_series`,
:func:`iowait_by_node` (:data:`IOWAIT_BY_NODE_SQL` for SQL that builds on it) and
:func:`data_mounts_over`; :func:`run_evidence` is the evidence of a run over a line.

A CloudWatch series may carry no statistic name (a ``get-metric-data`` export whose query, label and
Id name none: ``statistic`` None).  Such a series is offered only where the export has no series of a
known statistic for the same metric and dimension; each rule decides whether its own logic can judge
it (its ``usable``) and says so in its finding.  A rule that had nothing to judge calls
:func:`examined_nothing` instead of passing."""

from __future__ import annotations

from collections import defaultdict
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
