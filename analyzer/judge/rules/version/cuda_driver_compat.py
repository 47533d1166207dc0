"""The CUDA toolkit on a node is newer than the CUDA version its NVIDIA driver supports.

Why it matters: a toolkit newer than the driver's maximum fails at the first CUDA call ('CUDA driver
version is insufficient') or silently loses features (node-debugger diagnostics guide § E, version-checker
script).  The driver's maximum comes from the nvidia-smi 'CUDA Version' field; when only the driver version is
known, the series table of the HyperPod version-checker skill gives it (docs/sources.md#versions).  A newer
*major* version cannot run at all: critical.  A newer *minor* of the same major is a warning: NVIDIA's
minor-version compatibility lets most 12.x applications run on any 12.x-capable driver, except for features
that need the newer driver (PTX JIT).  A node with a toolkit but no driver version read (no nvidia-smi, no
loaded module) gets one info finding saying it was not judged, rather than an [OK].  False positives: the host
toolkit (/usr/local/cuda, nvcc) may not be what the training container uses; containers that ship the
cuda-compat forward-compatibility package run newer CUDA on purpose.
Reference: docs/sources.md#versions.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.version._versions import VERSIONS_SQL, version_key

RULE = RuleInfo(
    id="version.cuda_driver.compat",
    cause_kind="setting",
    setting_keys=("toolkit", "driver_max_cuda"),
    title="CUDA toolkit newer than the driver supports",
    severity=Severity.CRITICAL,
    requires=("software_version",),
    passed="CUDA toolkit within what the node's driver supports",
    route=Route(
        "version-drift",
        "hyperpod-version-checker; hyperpod-node-debugger § E",
        "upgrade the NVIDIA driver or use a CUDA toolkit/container the driver supports",
    ),
    severity_reason=(
        "Critical when the toolkit's CUDA major is newer than the driver supports, since the first CUDA call "
        "fails; a newer minor of the same major is a warning (minor-version compatibility), and a node with "
        "no driver version read is info. Source: NVIDIA CUDA compatibility guide "
        "(docs.nvidia.com/deploy/cuda-compatibility) and HyperPod version-checker skill "
        "(awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    series = sorted(ctx.threshold(RULE, "driver_series_max_cuda"), key=lambda s: -int(s[0]))
    rows = ctx.rows(
        f"""
        WITH v AS ({VERSIONS_SQL})
        SELECT bundle_id, node, component, version, source, source_file, line FROM v
        WHERE component IN ('cuda', 'nvidia_driver', 'cuda_driver_max') AND version IS NOT NULL
        ORDER BY node, component, source
        """
    )
    per_node: dict[tuple[str, str], dict[str, dict[str, object]]] = {}
    for r in rows:
        per_node.setdefault((r["bundle_id"], r["node"]), {}).setdefault(r["component"], r)
    for (bundle_id, node), comps in sorted(per_node.items(), key=lambda kv: kv[0][1]):
        toolkit = comps.get("cuda")
        if toolkit is None:
            continue
        tk = version_key(str(toolkit["version"]))[:2]
        limit, how, src = _driver_max(comps, series)
        if (
            len(tk) >= 2
            and limit is None
            and not any(comps.get(c) for c in ("cuda_driver_max", "nvidia_driver"))
        ):
            yield _not_judged(ctx, bundle_id, node, toolkit)
            continue
        if len(tk) < 2 or limit is None or tk <= limit:
            continue
        major = tk[0] > limit[0]
        tk_s, lim_s = ".".join(map(str, tk)), ".".join(map(str, limit))
        reason = (
            "a newer major version cannot run on this driver"
            if major
            else "same major version: runs only through CUDA minor-version compatibility, without features that need the newer driver"
        )
        evidence = [
            ctx.evidence(str(r["source_file"]), _line(r["line"]))
            for r in (toolkit, src)
            if r and r["source_file"]
        ]
        yield RULE.finding(
            severity=Severity.CRITICAL if major else Severity.WARNING,
            node=node,
            message=f"{node} has CUDA toolkit {tk_s} but its driver supports CUDA up to {lim_s} ({how}); {reason}",
            params={"toolkit": tk_s, "driver_max_cuda": lim_s, "from": how, "major_mismatch": major},
            evidence=evidence,
            bundle_id=bundle_id,
        )


def _not_judged(ctx: Context, bundle_id: str, node: str, toolkit: dict[str, object]) -> Finding:
    """Info: a toolkit is installed but no driver version was read, so the pair cannot be judged."""
    return RULE.finding(
        severity=Severity.INFO,
        node=node,
        message=f"{node}: CUDA toolkit {toolkit['version']} is installed but no NVIDIA driver version was read "
        "(no nvidia-smi output, no loaded nvidia module): compatibility not judged",
        params={"toolkit": toolkit["version"], "driver_max_cuda": None},
        route=Route(
            "version-drift",
            RULE.route.target,
            "collect nvidia-smi -q on the node; on a GPU node, check that the driver is loaded",
        ),
        evidence=[ctx.evidence(str(toolkit["source_file"]), _line(toolkit["line"]))]
        if toolkit["source_file"]
        else [],
        bundle_id=bundle_id,
        key=("not-judged",),
    )


def _driver_max(
    comps: dict[str, dict[str, object]], series: list[list[object]]
) -> tuple[tuple[int, ...] | None, str, dict[str, object] | None]:
    """The driver's maximum CUDA (major, minor), how it was found, and the row it came from."""
    reported = comps.get("cuda_driver_max")
    if reported is not None:
        key = version_key(str(reported["version"]))[:2]
        if len(key) == 2:
            return key, f"nvidia-smi CUDA Version {reported['version']}", reported
    driver = comps.get("nvidia_driver")
    if driver is not None:
        branch = version_key(str(driver["version"]))[:1]
        for first, max_cuda in series:
            if branch and branch[0] >= int(str(first)):
                return version_key(str(max_cuda))[:2], f"driver {driver['version']} series table", driver
    return None, "", None


def _line(value: object) -> int | None:
    return value if isinstance(value, int) else None
