"""The aws-ofi-nccl plugin on a node does not match the EFA installer release it runs with.

Why it matters: the plugin is built against one libfabric/EFA generation; the HyperPod version-checker skill's
pairing table gives EFA installer 1.29+ with aws-ofi-nccl v1.7.3+, 1.26-1.28 with v1.7.0-v1.7.2 and 1.20-1.25
with v1.6.0+.  A plugin outside its installer's range loads but can fail at init or fall back to slower paths;
EFA/OFI mismatches are a known source of uneven NCCL bandwidth (performance-debugger details guide).  Both
versions come from the node's versions capture (``efa_installer``; ``ofi_nccl`` from the installer's package
list, the plugin library, or the NCCL log line).  Installer releases the table does not cover (< 1.20) and
unparseable versions are not judged.
False positives: the table is the version-checker skill's recommendation (1.29+ row marked "recommended"); a
newer plugin than the 1.26-1.28 row names may work.  A plugin inside the training container is not seen.
Reference: docs/sources.md#versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.version._versions import in_range, parse_version

RULE = RuleInfo(
    id="version.efa_ofi.pairing",
    cause_kind="setting",
    setting_keys=("efa_installer", "ofi_nccl"),
    title="aws-ofi-nccl outside the range for the EFA installer",
    severity=Severity.WARNING,
    requires=("software_version",),
    passed="aws-ofi-nccl, where known, paired with the EFA installer",
    route=Route(
        "version-drift",
        "hyperpod-version-checker; hyperpod-node-debugger § E",
        "install the aws-ofi-nccl release paired with the EFA installer (or upgrade both together)",
    ),
    severity_reason=(
        "An aws-ofi-nccl outside its EFA installer's range loads but can fail at init or fall back to slower "
        "paths, and a newer plugin may work. Source: HyperPod version-checker skill (awslabs/agent-plugins, "
        "EFA installer to aws-ofi-nccl pairing table)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    table = [tuple(str(x) for x in row) for row in ctx.threshold(RULE, "pairing")]
    rows = ctx.rows(
        """
        SELECT bundle_id, node, component, version, source, source_file, line FROM software_version
        WHERE component IN ('efa_installer', 'ofi_nccl') AND version IS NOT NULL
        ORDER BY bundle_id, node, component, source, line
        """
    )
    per_node: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = {}
    for r in rows:
        if parse_version(r["version"]) is not None:
            comps = per_node.setdefault((r["bundle_id"], r["node"]), {})
            comps.setdefault(r["component"], {}).setdefault(r["version"], r)
    for (bundle_id, node), comps in sorted(per_node.items(), key=lambda kv: kv[0][1]):
        for efa in comps.get("efa_installer", {}).values():
            efa_key = parse_version(efa["version"]) or ()
            row = next((t for t in table if in_range(efa_key, t[0], t[1])), None)
            if row is None:
                continue
            wanted = f"v{row[2]}" + (f"-v{row[3]}" if row[3] else "+")
            for ofi in comps.get("ofi_nccl", {}).values():
                if in_range(parse_version(ofi["version"]) or (), row[2], row[3]) is not False:
                    continue
                installer = f"{row[0]}-{row[1]}" if row[1] else f"{row[0]}+"
                yield RULE.finding(
                    node=node,
                    message=(
                        f"{node} has EFA installer {efa['version']} with aws-ofi-nccl {ofi['version']}; "
                        f"installer {installer} pairs with aws-ofi-nccl {wanted}"
                    ),
                    params={
                        "efa_installer": efa["version"],
                        "ofi_nccl": ofi["version"],
                        "installer_range": installer,
                        "ofi_wanted": wanted,
                    },
                    evidence=[ctx.evidence(x["source_file"], x["line"]) for x in (efa, ofi)],
                    bundle_id=bundle_id,
                    key=(efa["version"], ofi["version"]),
                )
