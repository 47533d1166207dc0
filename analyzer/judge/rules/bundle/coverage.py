"""Per-node collection coverage: failed, timed-out and missing-tool probes, unparsed files, missing kinds.

Why it matters: a check that had no data is not a pass.  For every node this rule counts the probes of
the manifest that ran (exit 0), failed (another exit code), timed out (124) or found no tool (127),
and the files that could not be parsed (status failed / tool-error); it lists the kinds of data its
peers have and it lacks (the HyperPod issue-report script does not gather most kinds by default).
One finding per node with anything to say: info, or warning when the node has no parsed file at all
(every other rule is blind on it).  Healthy, complete nodes give no finding.
False positives: a kind that exists only on some node roles (controller vs worker).
Reference: docs/sources.md#bundle-coverage; hyperpod-issue-report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzer.judge.coverage import NOT_CARRIED
from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="bundle.coverage",
    title="Collection coverage per node",
    severity=Severity.WARNING,
    requires=("node.source",),
    passed="every probe ran and every file parsed; no kind missing",
    route=Route(
        "support-bundle",
        "hyperpod-issue-report",
        "re-collect the node with the missing probes (install the tool, raise the probe timeout)",
    ),
    severity_reason=(
        "Warning when a node has no parsed file at all, since every rule is blind on it; info for failed "
        "probes or missing kinds, which are not passes but not faults either. Source: HyperPod issue-report "
        "skill (awslabs/agent-plugins: what the default report gathers); ours: the severity split."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_share = ctx.threshold(RULE, "peer_kind_share")
    nodes = ctx.rows("SELECT bundle_id, node FROM node ORDER BY node")
    probes = ctx.rows(
        "SELECT bundle_id, path, kind, exit_code, line FROM probe WHERE node IS NOT NULL AND node <> '' "
        # a kind a foreign input cannot carry is no failed probe: the verdict lists it as not examined
        f"AND coalesce(note, '') NOT LIKE '{NOT_CARRIED}%' ORDER BY line"
    )
    files = ctx.rows(
        "SELECT bundle_id, path, kind, status, source_file FROM file WHERE node IS NOT NULL AND node <> '' ORDER BY path"
    )
    kinds: dict[str, set[str]] = defaultdict(set)
    parsed: dict[str, int] = defaultdict(int)
    unparsed: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f["status"] == "parsed":
            parsed[f["bundle_id"]] += 1
            if f["kind"]:
                kinds[f["bundle_id"]].add(f["kind"])
        elif f["status"] in ("failed", "tool-error"):
            unparsed[f["bundle_id"]].append(f"{f['path']} ({f['status']})")
    outcome: dict[str, dict[str, list[dict[str, object]]]] = defaultdict(lambda: defaultdict(list))
    for p in probes:
        code = p["exit_code"]
        what = (
            "ok" if code == 0 else "timed_out" if code == 124 else "missing_tool" if code == 127 else "failed"
        )
        outcome[p["bundle_id"]][what].append(p)
    having: dict[str, int] = defaultdict(int)  # kind -> nodes that have it, counted once for all
    for n in nodes:
        for k in kinds[n["bundle_id"]]:
            having[k] += 1
    for n in nodes:
        bid, node = n["bundle_id"], n["node"]
        others = len(nodes) - 1  # the peers of this node (a kind it lacks counts only theirs)
        missing = sorted(
            k for k, c in having.items() if k not in kinds[bid] and others and c / others >= min_share
        )
        res = outcome[bid]
        bad = {w: sorted(f"{p['path']}" for p in res[w]) for w in ("failed", "timed_out", "missing_tool")}
        if not (missing or unparsed[bid] or any(bad.values()) or parsed[bid] == 0):
            continue
        severity = Severity.WARNING if parsed[bid] == 0 else Severity.INFO
        parts = [f"probes: {len(res['ok'])} ran"]
        parts += [f"{len(v)} {w.replace('_', ' ')}: {_named(v)}" for w, v in bad.items() if v]
        if unparsed[bid]:
            parts.append(f"{len(unparsed[bid])} file(s) not parsed: {_named(unparsed[bid])}")
        if missing:
            parts.append(f"no data for {', '.join(missing)} (peers have it)")
        if parsed[bid] == 0:
            parts.append("no file parsed: every rule is blind on this node")
        evidence = [
            ctx.evidence(f"{node}/manifest.tsv", int(str(p["line"]))) for w in bad for p in res[w][:3]
        ]
        yield RULE.finding(
            severity=severity,
            node=node,
            message=f"{node} coverage: " + "; ".join(parts),
            params={
                "probes_ok": len(res["ok"]),
                **{w: v for w, v in bad.items()},
                "not_parsed": unparsed[bid],
                "files_parsed": parsed[bid],
                "missing_kinds": missing,
            },
            evidence=evidence,
            bundle_id=bid,
            key=("coverage",),
        )


def _named(items: list[str], limit: int = 5) -> str:
    """The first names and how many more (the full lists are in the finding's params).

    >>> _named(["a.txt", "b.txt", "c.txt"], 2)
    'a.txt, b.txt and 1 more'
    """
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
