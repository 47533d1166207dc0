"""The remediation plan of one analysis: per node the action its evidence calls for, held to guardrails.

How a node's action is found (docs/plan.md says the same for operators):

1. Each finding asks for an action (:func:`analyzer.plan.decide.decide`: its rule's catalogued action at
   its severity, refined by what it says).  Findings of a cause shared by many nodes (a shared-scope
   rule, a setting one image gives every node, a finding that names no node: the verdict's cluster-wide
   causes) and symptoms of such a cause are one cluster fix (:class:`ClusterAction`), never N node actions.
2. History: a fault logged before the node's last reboot and logged again in this boot, or seen in an
   earlier snapshot of a history store with a reboot of the node since, is back after a reboot: its
   action becomes the rule's ``then`` (replace); rebooted ``loop_reboots`` times or more for it, the node
   is flagged as a reboot loop.
3. The node's action is the heaviest its findings ask for; the lighter ones stay as steps.
4. Guardrails: reboot before replace (unless the finding says the hardware is gone or the history shows
   the fault back after a reboot); every disruptive action rests on a critical finding of the node; a node
   whose GPU state was not examined is ``investigate`` (collect again), whatever else it shows; no
   disruptive action on evidence older than ``max_age`` (or of unknown age); a plan that takes down more
   than ``max_share`` of a cluster or an instance group at once says so and runs in waves.
5. The first step of every disruptive action is a bundle of the node: the evidence leaves with a
   replaced instance, and a reboot clears the kernel log and the GPU state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from analyzer.judge.findings import Finding, Severity
from analyzer.judge.settings import Settings
from analyzer.model.plan import (
    DISRUPTIVE,
    REPLACE_WARNING,
    ClusterAction,
    NodeAction,
    Plan,
    PlanFinding,
    weight,
)
from analyzer.model.report_data import ReportData
from analyzer.model.verdict import CONCERN, CORE_INPUTS
from analyzer.plan import forms
from analyzer.plan.catalog import entry_for
from analyzer.plan.decide import Decision, decide, fault_of, hardware_gone
from analyzer.plan.rules import infos

#: The not-examined row of a node without GPU state (analyzer.model.verdict.CORE_INPUTS).
GPU_STATE = next(k for k in CORE_INPUTS if k.startswith("GPU state"))
KERNEL_LOG = next(k for k in CORE_INPUTS if k.startswith("kernel log"))
#: Two boot times closer than this are one boot (uptime is read to the second, rounded by some readers).
_SAME_BOOT = timedelta(minutes=2)
#: A disruptive rule firing on at least this share of a cluster's nodes (and this many) is said to look shared.
_SHARED_SHARE, _SHARED_MIN = 0.5, 3


@dataclass(frozen=True)
class PlanOptions:
    """What the plan is held to; defaults from thresholds/plan.toml (``[plan]``), a site's --config or
    the command line."""

    as_of: datetime
    #: evidence older than this takes no disruptive action; None: the age is not checked
    max_age: timedelta | None
    #: the most of a cluster or an instance group one wave takes down
    max_share: float
    #: reboots for the same fault from which a node is a reboot loop
    loop_reboots: int
    #: the HyperPod cluster name or ARN for nodes whose meta.env names none
    cluster_name: str | None = None


def options(
    settings: Settings,
    *,
    as_of: datetime | None = None,
    max_age_hours: float | None | str = "default",
    max_share: float | None = None,
    cluster_name: str | None = None,
) -> PlanOptions:
    """The plan's options: the thresholds' ``[plan]`` values unless given (``max_age_hours=None``: the
    age is not checked)."""
    hours = settings.value("plan", "max_age_hours") if max_age_hours == "default" else max_age_hours
    return PlanOptions(
        as_of=(as_of or datetime.now(timezone.utc)).astimezone(timezone.utc),
        max_age=None if hours is None else timedelta(hours=float(hours)),
        max_share=float(settings.value("plan", "max_share") if max_share is None else max_share),
        loop_reboots=int(settings.value("plan", "loop_reboots")),
        cluster_name=cluster_name,
    )


def build(
    data: ReportData,
    opts: PlanOptions,
    history: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Plan:
    """The plan of one analysis; ``history``: earlier findings per node (analyzer.history.repeats)."""
    history = history or {}
    rules = infos()
    verdict = data.verdict
    assert verdict is not None  # ReportData computes it
    nodes: dict[str, dict[str, Any]] = {}
    for n in data.nodes:
        if n.get("node"):
            nodes.setdefault(str(n["node"]), n)
    fired = {f.rule for f in data.findings if f.severity in CONCERN}
    shared_pairs = {(c["rule"], name) for c in verdict.cluster_wide for name in c.get("node_names") or []}
    cluster: dict[str, list[Finding]] = {}
    symptoms: dict[str, list[Finding]] = {}
    per_node: dict[str, list[Finding]] = {}
    for f in data.findings:
        info = rules.get(f.rule)
        explained = [r for r in (info.explained_by if info else ()) if r in fired]
        if (
            f.node is None
            or (info is not None and info.scope == "shared")
            or (f.rule, f.node) in shared_pairs
        ):
            cluster.setdefault(f.rule, []).append(f)
            continue
        if explained:
            symptoms.setdefault(explained[0], []).append(f)
            continue
        per_node.setdefault(f.node, []).append(f)

    not_examined: dict[str, set[str]] = {}
    for row in verdict.not_examined:
        not_examined.setdefault(row["node"], set()).add(row["what"])

    plan = Plan(
        as_of=_iso(opts.as_of),
        settings={
            "max_age_hours": None if opts.max_age is None else opts.max_age.total_seconds() / 3600,
            "max_share": opts.max_share,
            "loop_reboots": opts.loop_reboots,
            "batch_size": forms.BATCH,
            "cluster_name": opts.cluster_name,
        },
    )
    plan.cluster_actions = [_cluster_action(rule, fs, symptoms.get(rule, [])) for rule, fs in cluster.items()]
    for rule, fs in symptoms.items():
        if rule not in cluster:  # the cause fired on nodes too: say where its symptoms are
            plan.cluster_actions.append(_cluster_action(rule, [], fs))
    plan.cluster_actions = [c for c in plan.cluster_actions if c.action != "none"]
    plan.cluster_actions.sort(key=lambda c: (-weight(c.action), Severity(c.severity).rank, c.rule))

    for name in sorted(set(nodes) | set(per_node)):
        row = nodes.get(name, {"node": name})
        action = _node_action(
            name, row, per_node.get(name, []), not_examined.get(name, set()), history.get(name, []), opts
        )
        if action is None:
            plan.nodes_without_action.append(name)
        else:
            plan.actions.append(action)
    plan.actions.sort(key=lambda a: (-weight(a.action), a.node))
    _waves(plan, nodes, opts)
    named = {
        name: str(n["cluster"]) for name, n in nodes.items() if n.get("cluster_in_meta") and n.get("cluster")
    }
    _forms(plan, opts, named)
    _warnings(plan, nodes, opts)
    return plan


# --- one node ----------------------------------------------------------------------------------------


def _node_action(
    name: str,
    row: Mapping[str, Any],
    findings: list[Finding],
    missing: set[str],
    earlier: Sequence[Mapping[str, Any]],
    opts: PlanOptions,
) -> NodeAction | None:
    decided = [(f, decide(f)) for f in findings]
    episodes: list[dict[str, Any]] = []
    # faults logged only before the node's last reboot, by fault: the earlier boots they are in
    before_reboot: dict[tuple[Any, ...], set[int]] = {}
    for _, d in decided:
        if d.earlier_boots:
            before_reboot.setdefault(d.fault, set()).update(d.earlier_boots)
    now_boot = _boot_of(row)
    escalated: dict[str, str] = {}  # fingerprint -> why
    loop = False
    final: list[tuple[Finding, Decision, str, str]] = []
    for f, d in decided:
        action, why = d.action, d.why
        if not d.earlier_boots and f.severity == Severity.CRITICAL and action in DISRUPTIVE and d.then:
            boots = before_reboot.get(d.fault, set())
            reboots, said = len(boots), []
            if boots:
                said.append(
                    f"logged before the node's last reboot too ({_boot_words(boots)}) and back in this boot"
                )
                episodes.append({"fault": _fault_text(d.fault), "where": "an earlier boot of this bundle",
                                 "boots": sorted(boots), "rebooted_since": True})  # fmt: skip
            stored, stored_reboots, notes = _from_store(f, row, now_boot, earlier)
            episodes += stored
            said += notes
            reboots = max(reboots, stored_reboots)
            if d.recurred == "back" and not reboots:
                # a GPU off the bus logs no second Xid 79 until a reset brought it back: it fell again after one
                count = f.params.get("count")
                said.append(f"it fell off the bus {count} times in this boot, back in between after a reset")
                episodes.append({"fault": _fault_text(d.fault), "where": "this boot of the bundle",
                                 "rebooted_since": None})  # fmt: skip
                reboots = 1
            if reboots:
                action = d.then
                why = f"{why}; the same fault is back after a reboot ({'; '.join(said)}): a reboot does not clear it"
                escalated[f.fingerprint] = why
                if reboots >= opts.loop_reboots:
                    loop = True
                    why += f"; rebooted {reboots} times for it: a reboot loop, stop rebooting"
            elif notes:
                why = f"{why}; {'; '.join(notes)}"
        final.append((f, d, action, why))

    kernel_missing = KERNEL_LOG in missing
    gpu_missing = GPU_STATE in missing
    if not final and not gpu_missing and not kernel_missing:
        return None
    node = NodeAction(
        node=name,
        action="none",
        why="",
        instance_id=forms.valid_instance_id(row.get("instance_id")),
        hostname=row.get("hostname"),
        cluster=row.get("cluster"),
        instance_group=row.get("instance_group"),
        instance_type=row.get("instance_type"),
        collected_at=row.get("collected_at"),
        evidence_age_hours=_age_hours(row.get("collected_at"), opts.as_of),
        history=episodes,
        loop=loop,
    )
    node.findings = [
        PlanFinding(
            rule=f.rule,
            severity=f.severity.value,
            message=f.message,
            evidence=[e.as_dict() for e in f.evidence[:3]],
            action=action,
            why=why,
            fingerprint=f.fingerprint,
            gpu=f.gpu,
        )
        for f, _, action, why in sorted(final, key=lambda x: (-weight(x[2]), x[0].severity.rank, x[0].rule))
    ]
    if final:
        f, d, action, why = max(final, key=lambda x: (weight(x[2]), -x[0].severity.rank))
        node.action, node.why = action, why
        repeated = [
            x[0]
            for x in final
            if x[1].recurred == "repeated" and x[2] in DISRUPTIVE and x[0].fingerprint not in escalated
        ]
        if repeated and action != "replace":
            r = repeated[0]
            node.held_back = {
                "action": "replace",
                "guardrail": "reboot-first",
                "why": f"Xid {r.params.get('xid')} recurred {r.params.get('count')} times on the GPU in this boot and "
                f"NVIDIA's investigatory action ({r.params.get('investigatory')}) points at the hardware, but no "
                "reset is seen between them: reset first, replace when it is back after the reset",
            }
        # reboot before replace: a replace rests on the hardware's own verdict or on the history
        if action == "replace" and f.fingerprint not in escalated and not hardware_gone(f, d):
            node.held_back = {
                "action": "replace",
                "guardrail": "reboot-first",
                "why": "reboot before replace: nothing says the hardware is gone and no reboot has been "
                "seen to leave this fault in place",
            }
            node.action, node.why = "reboot", f"{why}; rebooted first"
        critical = [x for x in final if x[0].severity == Severity.CRITICAL and x[2] in DISRUPTIVE]
        if node.action in DISRUPTIVE and not critical:  # never reached by construction: held anyway
            node.held_back = {
                "action": node.action,
                "guardrail": "no-critical-finding",
                "why": "no critical finding of the node asks for it",
            }
            node.action, node.why = "investigate", "no critical finding asks for a disruptive action"
    if gpu_missing:
        intended = node.action
        node.action = "investigate"
        node.why = (
            "the node's GPU state was not examined (no nvidia-smi output in the bundle): collect it again with "
            "nvidia-smi before any action; nothing here says the GPUs are healthy"
        )
        if intended in DISRUPTIVE:
            node.held_back = {
                "action": intended,
                "guardrail": "gpu-state-not-examined",
                "why": "the GPU state was not examined",
            }
    elif node.action in DISRUPTIVE and opts.max_age is not None:
        age = node.evidence_age_hours
        if age is None or age > opts.max_age.total_seconds() / 3600:
            age_text = "of unknown age (no collection time)" if age is None else f"{age:g} h old"
            limit = opts.max_age.total_seconds() / 3600
            node.held_back = {
                "action": node.action,
                "guardrail": "stale-evidence",
                "why": f"the evidence is {age_text}, over the {limit:g} h a disruptive action may rest on",
            }
            node.why = (
                f"collect the node again: the evidence is {age_text} (more than {limit:g} h); {node.why}"
            )
            node.action = "investigate"
    if not final and node.action == "none":
        node.action = "investigate"
        node.why = "collect the node again: its kernel log was not examined"
    node.steps = _steps(node, final, kernel_missing)
    return node


def _from_store(
    f: Finding,
    row: Mapping[str, Any],
    now_boot: datetime | None,
    earlier: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The same fault in earlier bundles of the node (a history store): the episodes, how many boots it
    was seen in before a reboot, and what to say."""
    entry = entry_for(f.rule)
    fault = fault_of(f, entry)
    instance = forms.valid_instance_id(row.get("instance_id"))
    same = [e for e in earlier if _stored_fault(e, entry.same_fault) == fault]
    if not same:
        return [], 0, []
    episodes: list[dict[str, Any]] = []
    boots: set[str] = set()
    replaced: list[str] = []
    unknown: list[str] = []
    for e in same:
        at = _parse(e.get("collected_at"))
        was = forms.valid_instance_id(e.get("instance_id"))
        if instance and was and was != instance:
            replaced.append(f"{e.get('collected_at')} on {was}")
            episodes.append({"fault": _fault_text(fault), "where": f"snapshot {e.get('snapshot_id')}",
                             "collected_at": e.get("collected_at"), "rebooted_since": None,
                             "instance_id": was, "replaced_since": True})  # fmt: skip
            continue
        boot = _parse(e.get("boot_at"))
        rebooted: bool | None = None
        if now_boot is not None and at is not None:
            rebooted = now_boot > at and (boot is None or now_boot - boot > _SAME_BOOT)
        if rebooted:
            boots.add(e.get("boot_at") or e.get("collected_at") or "")
        elif rebooted is None:
            unknown.append(str(e.get("collected_at")))
        episodes.append({"fault": _fault_text(fault), "where": f"snapshot {e.get('snapshot_id')}",
                         "collected_at": e.get("collected_at"), "boot_at": e.get("boot_at"),
                         "rebooted_since": rebooted})  # fmt: skip
    notes = []
    if boots:
        notes.append(
            f"seen in {len(boots)} earlier boot(s) of the history store ({', '.join(sorted(boots))})"
        )
    if unknown:
        notes.append(
            f"seen before ({', '.join(unknown)}); whether the node rebooted since is unknown (no uptime read)"
        )
    if replaced:
        notes.append(
            f"seen before on another instance ({'; '.join(replaced)}): the fault followed the node through a "
            "replacement, look beyond the instance (the image, the job, the placement)"
        )
    return episodes, len(boots), notes


def _stored_fault(e: Mapping[str, Any], keys: Sequence[str]) -> tuple[Any, ...]:
    params = e.get("params") or {}
    return (e.get("rule"), *(str(params.get(k)) for k in keys))


def _steps(
    node: NodeAction, final: list[tuple[Finding, Decision, str, str]], kernel_missing: bool
) -> list[str]:
    steps: list[str] = []
    if node.action in DISRUPTIVE:
        steps.append(
            f"Collect a bundle of {node.node} first (collector.sh on the node, or nvidia-bug-report.sh): the "
            "evidence leaves with a replaced instance, and a reboot clears the kernel log and the GPU state."
        )
        if node.action == "replace":
            steps.append(REPLACE_WARNING)
        steps.append(f"{_doing(node.action)} (wave {node.wave or 1}; the forms are under the plan's hyperpod, "
                     "slurm and eks).")  # fmt: skip
        thens = sorted({d.then for f, d, a, _ in final if a == node.action and d.then and d.then != a})
        after = "Collect and analyze the node again once it is back"
        if thens:
            after += f"; if the same fault is back, {thens[0]}"
        steps.append(after + ".")
    elif node.held_back:
        steps.append(f"Collect the node again and analyze the new bundle; the evidence so far asks for "
                     f"{node.held_back['action']} ({node.held_back['why']}).")  # fmt: skip
    seen: set[str] = set()
    for f, _, action, _ in sorted(final, key=lambda x: (-weight(x[2]), x[0].rule)):
        if action in DISRUPTIVE or action == "none":
            continue
        text = f"{action}: {f.route.action} ({f.rule})"
        if text not in seen:
            seen.add(text)
            steps.append(text)
    if kernel_missing:
        steps.append("Collect the kernel log too (dmesg / journalctl -k): it was not examined.")
    return steps


def _doing(action: str) -> str:
    return {
        "reboot": "Reboot the node",
        "reset-gpu": "Reset the GPU: on HyperPod a node reboot (no call resets one GPU)",
        "replace": "Replace the node",
        "deep-health-check": "Run HyperPod's deep health checks on the node (HyperPod reboots or replaces it "
        "when they fail)",
    }.get(action, action)


# --- cluster-wide causes -----------------------------------------------------------------------------


def _cluster_action(rule: str, findings: list[Finding], symptoms: list[Finding]) -> ClusterAction:
    every = findings or symptoms
    worst = min(every, key=lambda f: f.severity.rank)
    d = decide(worst)
    nodes = sorted(set().union(*(f.nodes_named for f in every)))
    action, why = d.action, d.why
    if action in DISRUPTIVE:
        action = "investigate"
        why = f"{why}; but the cause is shared by {len(nodes)} node(s): one fix where they share it, not a " \
              "node action each"  # fmt: skip
    else:
        why = f"{why}; one cause shared by {len(nodes) or 'the cluster'} node(s): one fix, not a node action each"
    if symptoms:
        named = sorted({f.node for f in symptoms if f.node})
        why += f"; symptoms on {', '.join(named[:10])}{' …' if len(named) > 10 else ''} ({symptoms[0].rule})"
    plan_findings = [
        PlanFinding(f.rule, f.severity.value, f.message, [e.as_dict() for e in f.evidence[:3]], action, why,
                    f.fingerprint, f.gpu)
        for f in (findings or symptoms)[:20]
    ]  # fmt: skip
    return ClusterAction(
        rule=rule,
        action=action,
        severity=worst.severity.value,
        message=worst.message,
        step=worst.route.action,
        why=why,
        nodes=nodes,
        findings=plan_findings,
    )


# --- waves and forms ---------------------------------------------------------------------------------


def _waves(plan: Plan, nodes: Mapping[str, Mapping[str, Any]], opts: PlanOptions) -> None:
    """Disruptive nodes into waves, none taking down more than max_share of a cluster or instance group."""
    totals: dict[tuple[str, ...], int] = {}
    for n in nodes.values():
        for key in _groups(n):
            totals[key] = totals.get(key, 0) + 1
    limit = {k: max(1, math.floor(opts.max_share * v + 1e-9)) for k, v in totals.items()}
    counts: dict[tuple[int, tuple[str, ...]], int] = {}
    order = sorted(plan.disruptive, key=lambda a: (-weight(a.action), -_criticals(a), a.node))
    for a in order:
        keys = _groups(nodes.get(a.node, {"node": a.node, "cluster": a.cluster}))
        wave = 1
        while any(counts.get((wave, k), 0) >= limit.get(k, 1) for k in keys):
            wave += 1
        for k in keys:
            counts[(wave, k)] = counts.get((wave, k), 0) + 1
        a.wave = wave
    for w in sorted({a.wave for a in plan.disruptive if a.wave}):
        members = sorted(a.node for a in plan.disruptive if a.wave == w)
        plan.waves.append({"wave": w, "nodes": members, "count": len(members)})
    over = []
    for key, total in totals.items():
        down = sum(1 for a in plan.disruptive if key in _groups(nodes.get(a.node, {})))
        if down > limit[key]:
            what = (
                f"cluster {key[1]}" if key[0] == "cluster" else f"instance group {key[2]} of cluster {key[1]}"
            )
            over.append(f"{down} of the {total} analysed node(s) of {what}")
    if over:
        plan.warnings.append(
            f"This plan takes down {'; '.join(over)}: more than {opts.max_share:.0%} at once "
            f"(--plan-max-share), so it runs in {len(plan.waves)} waves. Run a wave, check its nodes are "
            "back and healthy (collect and analyze them), then the next."
        )


def _groups(n: Mapping[str, Any]) -> list[tuple[str, ...]]:
    cluster = str(n.get("cluster") or "")
    keys: list[tuple[str, ...]] = [("cluster", cluster)]
    if n.get("instance_group"):
        keys.append(("group", cluster, str(n["instance_group"])))
    return keys


def _criticals(a: NodeAction) -> int:
    return sum(1 for f in a.findings if f.severity == "critical")


def _forms(plan: Plan, opts: PlanOptions, named: Mapping[str, str]) -> None:
    """The HyperPod request bodies, Slurm commands and EKS labels of the disruptive actions, per wave."""
    reboot: list[dict[str, Any]] = []
    replace: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    without: list[dict[str, Any]] = []
    for wave in plan.waves:
        members = [a for a in plan.disruptive if a.wave == wave["wave"]]
        by_call: dict[tuple[str, str], list[NodeAction]] = {}
        for a in members:
            call, reason, label = forms.FORMS[a.action]
            cluster = named.get(a.node) or opts.cluster_name or forms.UNKNOWN_CLUSTER
            a.forms = {"hyperpod": call, "cluster_name": cluster}
            slurm = forms.slurm_name(a.hostname, a.node)
            eks = forms.eks_name(a.instance_id, a.hostname)
            if reason:
                a.forms["slurm"] = forms.slurm_command([slurm], reason)
            if label:
                a.forms["eks"] = forms.eks_commands([eks], label)[-1]
            if a.instance_id is None:
                without.append({"node": a.node, "action": a.action, "wave": wave["wave"]})
            else:
                by_call.setdefault((call, cluster), []).append(a)
        for (call, cluster), group in sorted(by_call.items()):
            ids = [a.instance_id for a in sorted(group, key=lambda a: a.node) if a.instance_id]
            if call == "StartClusterHealthCheck":
                groups: dict[str, list[str]] = {}
                for a in group:
                    if a.instance_id:
                        groups.setdefault(a.instance_group or forms.UNKNOWN_GROUP, []).append(a.instance_id)
                body = forms.health_check_body(cluster, groups)
                for configs in forms.batches(body["DeepHealthCheckConfigurations"], 99):
                    checks.append({"wave": wave["wave"], "body": {"ClusterName": cluster,
                                                                  "DeepHealthCheckConfigurations": configs}})  # fmt: skip
                continue
            target = reboot if call == "BatchRebootClusterNodes" else replace
            for batch in forms.batches(ids):
                target.append({"wave": wave["wave"], "body": {"ClusterName": cluster, "NodeIds": batch}})
        for kind in ("reboot", "replace"):
            chosen = [a for a in members if forms.FORMS[a.action][1] == forms.FORMS[kind][1]]
            if not chosen:
                continue
            _, reason, label = forms.FORMS[kind]
            assert reason is not None and label is not None
            names = [forms.slurm_name(a.hostname, a.node) for a in chosen]
            plan.slurm.append({"wave": wave["wave"], "action": kind, "reason": reason,
                               "nodes": sorted(set(names)), "hostlist": forms.hostlist_of(names),
                               "command": forms.slurm_command(names, reason)})  # fmt: skip
            eks_names = [forms.eks_name(a.instance_id, a.hostname) for a in chosen]
            entry = {"wave": wave["wave"], "action": kind, "label": f"{forms.HEALTH_LABEL}={label}",
                     "nodes": sorted(set(eks_names)), "commands": forms.eks_commands(eks_names, label)}  # fmt: skip
            guessed = sorted(a.node for a in chosen if a.instance_id is None)
            if guessed:
                entry["note"] = (
                    f"no instance id for {', '.join(guessed)}: their host names stand in; a HyperPod EKS node is "
                    "named hyperpod-<instance id> (check kubectl get nodes)"
                )
            plan.eks.append(entry)
    plan.hyperpod = {
        "BatchRebootClusterNodes": [r["body"] for r in reboot],
        "BatchReplaceClusterNodes": [r["body"] for r in replace],
        "StartClusterHealthCheck": [c["body"] for c in checks],
        "nodes_without_instance_id": without,
    }
    for wave in plan.waves:  # the same bodies, wave by wave, in the order to send them
        wave["hyperpod"] = {
            call: [r["body"] for r in rows if r["wave"] == wave["wave"]]
            for call, rows in (
                ("BatchRebootClusterNodes", reboot),
                ("BatchReplaceClusterNodes", replace),
                ("StartClusterHealthCheck", checks),
            )
        }
        wave["slurm"] = [s["command"] for s in plan.slurm if s["wave"] == wave["wave"]]
        wave["eks"] = [c for e in plan.eks if e["wave"] == wave["wave"] for c in e["commands"]]


def _warnings(plan: Plan, nodes: Mapping[str, Mapping[str, Any]], opts: PlanOptions) -> None:
    disruptive = plan.disruptive
    held = [a for a in plan.actions if a.held_back and a.held_back["action"] in DISRUPTIVE]
    for guardrail, said in (
        ("stale-evidence", "held back for stale evidence (--plan-max-age; off reviews an old incident)"),
        ("gpu-state-not-examined", "held back: their GPU state was not examined"),
    ):
        nodes_held = [a.node for a in held if a.held_back and a.held_back.get("guardrail") == guardrail]
        if nodes_held:
            more = f" and {len(nodes_held) - 8} more" if len(nodes_held) > 8 else ""
            plan.warnings.append(
                f"{len(nodes_held)} node(s) {said} ({', '.join(nodes_held[:8])}{more}): collect them again "
                "before any disruptive action (their held_back says what the evidence asked for)."
            )
    if not disruptive:
        return
    missing = plan.hyperpod.get("nodes_without_instance_id") or []
    if missing:
        plan.warnings.append(
            f"{len(missing)} node(s) have no instance id in their bundle (collect with collector.sh --imds, or "
            "find it with `aws sagemaker list-cluster-nodes`): they are in the Slurm and EKS forms, not in the "
            "HyperPod requests."
        )
    if any(a.forms.get("cluster_name") == forms.UNKNOWN_CLUSTER for a in disruptive):
        plan.warnings.append(
            f"The HyperPod requests name the cluster {forms.UNKNOWN_CLUSTER}: meta.env names none; give "
            "--plan-cluster NAME (the requests are refused until it is filled in)."
        )
    groups = {c["InstanceGroupName"] for b in plan.hyperpod.get("StartClusterHealthCheck") or []
              for c in b["DeepHealthCheckConfigurations"]}  # fmt: skip
    if forms.UNKNOWN_GROUP in groups:
        plan.warnings.append(
            f"The deep health check requests name the instance group {forms.UNKNOWN_GROUP}: meta.env names "
            "none; fill in each node's group (aws sagemaker list-cluster-nodes) before sending them."
        )
    if any(a.action == "replace" for a in disruptive):
        plan.warnings.append(REPLACE_WARNING)
    if any(a.loop for a in plan.actions):
        loops = [a.node for a in plan.actions if a.loop]
        plan.warnings.append(
            f"Reboot loop on {', '.join(loops)}: rebooted again and again for the same fault."
        )
    by_rule: dict[tuple[str, str], set[str]] = {}
    for a in disruptive:
        for f in a.findings:
            if f.action in DISRUPTIVE and f.severity == "critical":
                by_rule.setdefault((str(a.cluster or ""), f.rule), set()).add(a.node)
    sizes: dict[str, int] = {}
    for n in nodes.values():
        sizes[str(n.get("cluster") or "")] = sizes.get(str(n.get("cluster") or ""), 0) + 1
    for (cluster, rule), hit in sorted(by_rule.items()):
        total = sizes.get(cluster, 0)
        if len(hit) >= _SHARED_MIN and total and len(hit) / total >= _SHARED_SHARE:
            plan.warnings.append(
                f"{rule} asks for a disruptive action on {len(hit)} of {total} node(s) of cluster {cluster}: "
                "check for a cause they share (an image, a driver, the fabric) before acting on each."
            )


# --- small helpers -----------------------------------------------------------------------------------


def _boot_of(row: Mapping[str, Any]) -> datetime | None:
    at, up = _parse(row.get("collected_at")), row.get("uptime_s")
    if at is None or not isinstance(up, (int, float)):
        return None
    return at - timedelta(seconds=float(up))


def _age_hours(collected: Any, as_of: datetime) -> float | None:
    at = _parse(collected)
    if at is None:
        return None
    return round((as_of - at).total_seconds() / 3600, 1)


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fault_text(fault: Iterable[Any]) -> str:
    rule, *rest = list(fault)
    return str(rule) + (f" ({', '.join(str(r) for r in rest)})" if rest else "")


def _boot_words(boots: set[int]) -> str:
    return ("boot " if len(boots) == 1 else "boots ") + ", ".join(str(b) for b in sorted(boots))
