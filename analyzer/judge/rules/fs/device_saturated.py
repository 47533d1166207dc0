"""A block device saturated: iostat -x %util and await both above their lines in most interval reports.

Why it matters: a root or data volume that cannot keep up stalls every write to it (checkpoints, logs,
container layers, caches) and holds the GPUs back (mfu-debugger node diagnostics § 4: ``iostat -x``
indicators await > 10 ms and %util > 80).  Judged per device over the interval reports of one capture
(the first report, averages since boot, is left out): the device is saturated when %util is above
``util_pct`` and await above ``await_ms`` in at least ``sustained_fraction`` of the interval reports, and
there are at least ``min_intervals`` of them (the collector's ``iostat -x 2 3`` prints two).  A report in
which ``-z`` left an idle device out counts as one below the lines.  await is the slower of r_await and
w_await (old sysstat's combined await where only that is printed); discard and flush waits are left out.
Each device is named with its mount points (signals.fs.device_mounts: df and /proc/mounts, partitions to
their disk, "/" on /dev/root to the disk of /boot/efi); a device no line ties to a mount is still judged.
False positives: %util counts time with at least one request in flight, so a device that serves requests
in parallel (NVMe, EBS, RAID) reads 100 % busy long before it is saturated (sysstat iostat man page): a
high %util with a low await is no saturation, hence both lines.  A bundle taken during a checkpoint
write stays within ``sustained_fraction`` only if the write outlasts the capture.
Not examined: a node whose iostat has no -x columns (%util and an await), or fewer interval reports than
``min_intervals``.  Reference: docs/sources.md#local-storage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import DeviceMount, device_mounts

RULE = RuleInfo(
    id="fs.device.saturated",
    node_local=True,
    title="Block device saturated: %util above {util_pct} % and await above {await_ms} ms sustained",
    severity=Severity.WARNING,
    requires=("iostat_device",),
    passed="no block device held above both the %util and the await line",
    route=Route(
        "filesystem-capacity",
        "hyperpod-mfu-debugger references/node-diagnostics.md § 4; hyperpod-node-debugger § I",
        "find what keeps the device busy (checkpoints, logs, caches, dataset reads); move that I/O to the "
        "instance-store NVMe (/opt/dlami/nvme) or FSx, or raise the EBS volume's provisioned IOPS and throughput",
    ),
    severity_reason=(
        "A device whose requests wait more than 10 ms while it is busy more than 80 % of each interval "
        "slows every read and write on it; jobs slow down but do not fail. %util alone is no saturation on "
        "NVMe and EBS, which serve requests in parallel: high %util with a low await is a busy, healthy "
        "device. Source: HyperPod mfu-debugger node diagnostics § 4 (awslabs/agent-plugins: await above "
        "10 ms, %util above 80); sysstat iostat man page (%util of parallel devices)."
    ),
)

_DEVICES = """
    WITH rows AS (
        SELECT bundle_id, node, source_file, coalesce(host, '') AS host, device, report_no, line, util_pct,
               coalesce(greatest(r_await_ms, w_await_ms), await_ms) AS wait_ms,
               CASE WHEN r_await_ms IS NULL AND w_await_ms IS NULL THEN 'await'
                    WHEN coalesce(w_await_ms, -1) >= coalesce(r_await_ms, -1) THEN 'w_await'
                    ELSE 'r_await' END AS which
        FROM iostat_device WHERE since_boot IS NOT TRUE),
    reports AS (  -- the interval reports of each capture, a -z report without device rows too (avg-cpu)
        SELECT bundle_id, node, source_file, coalesce(host, '') AS host, count(DISTINCT report_no) AS intervals
        FROM (SELECT bundle_id, node, source_file, host, report_no FROM iostat_device WHERE since_boot IS NOT TRUE
              UNION ALL
              SELECT bundle_id, node, source_file, host, report_no FROM iostat_cpu WHERE since_boot IS NOT TRUE)
        GROUP BY ALL)
    SELECT bundle_id, node, source_file, host, device, any_value(intervals) AS intervals,
           count(*) FILTER (WHERE util_pct IS NOT NULL AND wait_ms IS NOT NULL) AS measured,
           count(*) FILTER (WHERE util_pct > ? AND wait_ms > ?) AS over,
           median(wait_ms) AS wait_median, max(wait_ms) AS wait_max,
           median(util_pct) AS util_median, max(util_pct) AS util_max,
           arg_max(which, wait_ms) AS which, arg_max(line, wait_ms) AS worst_line,
           min(line) FILTER (WHERE util_pct > ? AND wait_ms > ?) AS first_over_line
    FROM rows JOIN reports USING (bundle_id, node, source_file, host)
    GROUP BY ALL ORDER BY node, device, host, source_file
"""


def check(ctx: Context) -> Iterable[Finding]:
    util_line = ctx.threshold(RULE, "util_pct")
    wait_line = ctx.threshold(RULE, "await_ms")
    least = int(ctx.threshold(RULE, "min_intervals"))
    share = ctx.threshold(RULE, "sustained_fraction")
    extended = {
        (r["bundle_id"], r["node"]): r["extended"]
        for r in ctx.rows(
            "SELECT bundle_id, node, bool_or(util_pct IS NOT NULL AND coalesce(r_await_ms, w_await_ms, await_ms)"
            " IS NOT NULL) AS extended FROM iostat_device GROUP BY ALL"
        )
    }
    rows = [r for r in ctx.rows(_DEVICES, util_line, wait_line, util_line, wait_line) if r["measured"]]
    intervals: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        intervals[(r["bundle_id"], r["node"])] = max(intervals[(r["bundle_id"], r["node"])], r["intervals"])
    for (bundle, node), has_x in sorted(extended.items(), key=lambda kv: kv[0][1]):
        if not has_x:
            ctx.not_judged(
                [node],
                "iostat without the -x columns (%util and an await): per-device saturation needs iostat -x",
            )
        elif (held := intervals[(bundle, node)]) < least:
            ctx.not_judged(
                [node],
                f"iostat -x with {held} interval report{'s' * (held != 1)} besides the since-boot one: "
                f"sustained needs {least}",
            )
    judged = [r for r in rows if r["intervals"] >= least]
    devices: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in judged:
        devices[(r["bundle_id"], r["node"])].add(r["device"])
    mounts = device_mounts(ctx, devices)
    for r in judged:
        if r["over"] < share * r["intervals"]:
            continue
        yield _finding(
            ctx, r, mounts.get((r["bundle_id"], r["node"], r["device"]), DeviceMount()), util_line, wait_line
        )


def _finding(
    ctx: Context, r: dict[str, Any], where: DeviceMount, util_line: float, wait_line: float
) -> Finding:
    wait_median, wait_max = round(float(r["wait_median"]), 2), round(float(r["wait_max"]), 2)
    util_median, util_max = round(float(r["util_median"]), 2), round(float(r["util_max"]), 2)
    host = f" (host {r['host']})" if r["host"] else ""
    lines = dict.fromkeys((r["first_over_line"], r["worst_line"]))
    return RULE.finding(
        node=r["node"],
        message=(
            f"{r['node']}{host} {r['device']} {where.label} saturated: %util above {util_line:g} % with "
            f"await above {wait_line:g} ms in {r['over']} of {r['intervals']} interval reports; {r['which']} "
            f"median {wait_median:g} ms (max {wait_max:g}), %util median {util_median:g} % (max {util_max:g})"
        ),
        params={
            "device": r["device"],
            "mounts": list(where.mounts),
            "mount_inferred": where.inferred,
            "host": r["host"] or None,
            "intervals_over": r["over"],
            "intervals": r["intervals"],
            "await_field": r["which"],
            "await_median_ms": wait_median,
            "await_max_ms": wait_max,
            "util_median_pct": util_median,
            "util_max_pct": util_max,
            "util_line_pct": util_line,
            "await_line_ms": wait_line,
        },
        evidence=[ctx.evidence(r["source_file"], line) for line in lines],
        bundle_id=r["bundle_id"],
        key=(r["device"], r["host"], r["source_file"]),
    )
