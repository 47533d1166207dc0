"""The verdict: what the analysis says first, computed once and shown the same by every report.

The ranking of worst nodes is defined here and nowhere else: a node is ranked by its number of
critical *causes*, then its warning causes, then its *spread* (how many distinct rules raised a concern
on it), then by name.  Findings of one rule that name one cause in ``params["cause"]`` (the driver, CUDA
and VBIOS drift of one driver install) count once, at their worst severity; every other finding is a
cause of its own.  Only nodes with at least one critical or warning finding are ranked.

Findings fold into a cluster-wide cause (and do not rank their nodes) only where they share one cause:
a rule of shared scope (a file system, the placement, a spine link), a finding that names no node, or a
*setting* rule (``RuleInfo.cause_kind == "setting"``: a governor, persistence mode, a version: what one
image, one configuration or one install gives every node) whose findings carry the same value
(``RuleInfo.setting_keys`` and ``params["cause"]``) on every node it examined of one instance type, at least
EVERY_NODE_MIN of them.  A *fault* rule (an Xid, an ECC error, a link down, a full disk: an event or a
defect of one device) never folds: three nodes with an Xid each are three sick nodes, all ranked,
however many nodes there are.  A cluster-wide entry names its nodes (``node_names``, and in its message).

>>> from analyzer.judge.findings import Finding, Route, Severity
>>> route = Route("node-hardware", "runbook", "drain")
>>> def f(node, severity, rule="gpu.x"):
...     return Finding(rule, 1, severity, node, None, "m", {}, route)
>>> v = compute([f("b", Severity.WARNING), f("b", Severity.WARNING, "gpu.y"), f("a", Severity.CRITICAL),
...              f("c", Severity.INFO)], [], [{"node": n} for n in "abc"])
>>> [(r.node, r.critical, r.warning, r.score) for r in v.worst_nodes]
[('a', 1, 0, 1), ('b', 0, 2, 2)]
>>> v.status, v.sections
('concerns', ['C'])
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.intake.records import UnreadInput
from analyzer.judge.findings import RANKS_FIRST, Finding, Outcome, Severity
from analyzer.model.sections import section_of

if TYPE_CHECKING:
    from analyzer.judge.engine import RuleInfo

#: Worst nodes kept in the verdict (the findings themselves are all in the JSON and HTML).
TOP_NODES = 20

CONCERN = (Severity.CRITICAL, Severity.WARNING)


@dataclass(frozen=True)
class NodeRank:
    """One ranked node: its concern counts and spread (distinct rules with a concern on it)."""

    node: str
    critical: int
    warning: int
    score: int  # spread: distinct rules that raised a concern on this node
    rules: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rules": list(self.rules)}


@dataclass
class Verdict:
    status: str  # concerns | no-concerns | incomplete (no concern, but a core input, an input or a rule was not judged)
    sections: list[str]
    worst_nodes: list[NodeRank]
    ranked_nodes: int  # how many nodes had a concern (worst_nodes keeps the first TOP_NODES)
    counts: dict[str, int]
    cluster_wide: list[dict[str, Any]] = field(default_factory=list)
    unread_inputs: list[UnreadInput] = field(default_factory=list)
    not_examined: list[dict[str, Any]] = field(default_factory=list)
    #: what was given but not judged, in words (older snapshots of a cluster: compare them with diff)
    notes: list[str] = field(default_factory=list)
    #: rules that failed to run ({rule, title, reason}): what they judge was not judged.  The text
    #: reports list them; the JSON carries them as rules[] with outcome "error" and the reason.
    rule_errors: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "sections": self.sections,
            "worst_nodes": [r.as_dict() for r in self.worst_nodes],
            "ranked_nodes": self.ranked_nodes,
            "counts": self.counts,
            "cluster_wide": self.cluster_wide,
            "unread_inputs": [u.as_dict() for u in self.unread_inputs],
            "not_examined": self.not_examined,
            "notes": self.notes,
        }


def cause_of(f: Finding) -> tuple[str, str]:
    """What a finding counts as in the ranking: its rule's named cause, else the finding itself."""
    cause = f.params.get("cause")
    return (f.rule, str(cause)) if cause else (f.rule, f.fingerprint)


def rank_nodes(findings: Iterable[Finding]) -> list[NodeRank]:
    """Every node with a concern, worst first (a node a finding names as the first cause, then critical
    causes, then warning causes, then spread, then name); findings that share a cause count once, at their
    worst severity."""
    worst: dict[tuple[str, tuple[str, str]], Severity] = {}
    rules: dict[str, set[str]] = {}
    first: set[str] = set()
    for f in findings:
        if not f.node or f.severity not in CONCERN:
            continue
        if f.params.get(RANKS_FIRST) is True:
            first.add(f.node)
        key = (f.node, cause_of(f))
        if key not in worst or f.severity.rank < worst[key].rank:
            worst[key] = f.severity
        rules.setdefault(f.node, set()).add(f.rule)
    critical: Counter[str] = Counter(node for (node, _), sev in worst.items() if sev == Severity.CRITICAL)
    warning: Counter[str] = Counter(node for (node, _), sev in worst.items() if sev == Severity.WARNING)
    ranked = [
        NodeRank(node, critical[node], warning[node], len(names), tuple(sorted(names)))
        for node, names in rules.items()
    ]
    ranked.sort(key=lambda r: (r.node not in first, -r.critical, -r.warning, -r.score, r.node))
    return ranked


#: The inputs without which a node gets no clean bill: the verdict is "incomplete" when a node lacks one.
#: what -> requirements (any of them), in the engine's requirement form (analyzer.judge.coverage).
CORE_INPUTS: dict[str, tuple[str, ...]] = {
    # a failure answer of nvidia-smi is the GPU state too (judged by gpu.smi.unreachable)
    "GPU state (nvidia-smi -q, --query-gpu or the nvidia-smi table)": (
        "gpu",
        "gpu_query",
        "smi_gpu",
        "probe_answer.family=nvidia-smi",
    ),
    "kernel log (dmesg / journalctl -k)": ("kernel_event",),
}
#: A node-scope rule firing on every node of a cluster at least this big is a cluster-wide cause.
EVERY_NODE_MIN = 3


#: Nodes named in a cluster-wide entry's message (the entry's ``node_names`` lists all).
NAMED_IN_MESSAGE = 5


@dataclass(frozen=True)
class RuleScope:
    """What the verdict needs of a rule's metadata (analyzer.judge.engine.RuleInfo)."""

    title: str = ""
    scope: str = "node"
    explained_by: tuple[str, ...] = ()
    #: "fault" (never folds into a cluster-wide cause) or "setting" (folds where the value is shared)
    cause_kind: str = "fault"
    setting_keys: tuple[str, ...] = ()

    @classmethod
    def of(cls, info: RuleInfo, title: str | None = None) -> RuleScope:
        """The verdict's view of a rule's RuleInfo (its title as given, with thresholds filled in)."""
        return cls(
            info.title if title is None else title,
            info.scope,
            info.explained_by,
            info.cause_kind,
            info.setting_keys,
        )


def builtin_scopes() -> dict[str, RuleScope]:
    """The metadata of every installed rule, for a verdict computed without it (ReportData alone)."""
    from analyzer.judge.rules import load_rules

    return {m.RULE.id: RuleScope.of(m.RULE) for m in load_rules()}


def setting_of(f: Finding, meta: RuleScope) -> str:
    """The value a setting rule's finding states (its ``setting_keys`` and ``params["cause"]``), as text:
    findings with the same value on every node of a type are one cause."""
    keys = ("cause", *meta.setting_keys)
    return json.dumps([f.params.get(k) for k in keys], sort_keys=True, default=str)


def compute(
    findings: Sequence[Finding],
    outcomes: Sequence[Outcome],
    nodes: Sequence[dict[str, Any]],
    rules: dict[str, RuleScope] | None = None,
    unread_inputs: Sequence[UnreadInput] = (),
    not_examined: Sequence[dict[str, Any]] = (),
) -> Verdict:
    """The verdict over one analysis: status, sections to read, worst nodes, cluster-wide causes."""
    rules = builtin_scopes() if rules is None else rules
    concerns = [f for f in findings if f.severity in CONCERN]
    fired = {f.rule for f in concerns}
    node_names = {n["node"] for n in nodes if n.get("node")}
    shared: dict[str, list[Finding]] = {}
    ranked_findings: list[Finding] = []
    for f in concerns:
        meta = rules.get(f.rule, RuleScope())
        if f.node is None or meta.scope == "shared":
            shared.setdefault(f.rule, []).append(f)
        elif set(meta.explained_by) & fired:
            continue  # a symptom of a shared cause that fired: the node is its victim
        else:
            ranked_findings.append(f)
    # a setting rule whose findings state the same value on every node it examined of one instance type
    # names no node worse than another: one shared cause.  A fault rule never folds (its findings are
    # faults of separate devices or separate events, each a sick node)
    by_value: dict[tuple[str, str], set[str]] = {}
    for f in ranked_findings:
        meta = rules.get(f.rule, RuleScope())
        if meta.cause_kind == "setting":
            by_value.setdefault((f.rule, setting_of(f, meta)), set()).add(f.node or "")
    types = {n["node"]: n.get("instance_type") or "" for n in nodes if n.get("node")}
    checked = {o.rule: set(o.nodes_checked) for o in outcomes if o.nodes_checked}
    everywhere_on: dict[tuple[str, str], set[str]] = {}
    for (rule, value), hit in by_value.items():
        examined = checked.get(rule, node_names) & node_names
        for itype in {types.get(n, "") for n in examined}:
            peers = {n for n in examined if types.get(n, "") == itype}
            if len(peers) >= EVERY_NODE_MIN and peers <= hit:
                everywhere_on.setdefault((rule, value), set()).update(peers)
    everywhere = {rule for rule, _ in everywhere_on}
    kept: list[Finding] = []
    for f in ranked_findings:
        meta = rules.get(f.rule, RuleScope())
        if meta.cause_kind == "setting" and f.node in everywhere_on.get((f.rule, setting_of(f, meta)), ()):
            shared.setdefault(f.rule, []).append(f)
        else:
            kept.append(f)
    ranked = rank_nodes(kept)
    counts = Counter(f.severity.value for f in findings)
    errors = [
        {"rule": o.rule, "title": rules.get(o.rule, RuleScope()).title or o.rule, "reason": o.reason or ""}
        for o in outcomes
        if o.outcome == "error"
    ]
    if concerns:
        status = "concerns"
    elif not_examined or unread_inputs or errors:  # a rule that failed to run judged nothing
        status = "incomplete"
    else:
        status = "no-concerns"
    return Verdict(
        status=status,
        sections=sorted({section_of(f.rule) for f in concerns}),
        worst_nodes=ranked[:TOP_NODES],
        ranked_nodes=len(ranked),
        counts={s: counts.get(s, 0) for s in ("critical", "warning", "info")},
        cluster_wide=[
            _cluster_entry(rule, group, rules.get(rule, RuleScope()), rule in everywhere)
            for rule, group in shared.items()
        ],
        unread_inputs=list(unread_inputs),
        not_examined=list(not_examined),
        rule_errors=errors,
    )


def _cluster_entry(rule: str, group: list[Finding], meta: RuleScope, everywhere: bool) -> dict[str, Any]:
    """One cluster-wide cause: its rule, worst severity, a message that names its nodes, and the nodes."""
    nodes = sorted(set().union(*(f.nodes_named for f in group)))
    worst = min(group, key=lambda f: f.severity.rank)
    if len(group) == 1:
        message = worst.message
    else:
        where = (
            "every examined node of its instance type" if everywhere
            else f"{len(nodes)} node(s)" if nodes
            else "the cluster"
        )  # fmt: skip
        message = f"{meta.title or rule}: {len(group)} findings on {where}; first: {worst.message}"
    if nodes and (len(group) > 1 or not all(_names(message, n) for n in nodes)):
        shown = ", ".join(nodes[:NAMED_IN_MESSAGE])
        more = f" and {len(nodes) - NAMED_IN_MESSAGE} more" if len(nodes) > NAMED_IN_MESSAGE else ""
        message = f"{message} (nodes: {shown}{more})"
    return {
        "rule": rule,
        "severity": worst.severity.value,
        "message": message,
        "nodes": len(nodes),
        "node_names": nodes,
    }


def _names(text: str, node: str) -> bool:
    """The text names the node as a word of its own (p5-1 is not named by p5-10).

    >>> _names("p5-10: Xid 79", "p5-1"), _names("on p5-1, p5-10", "p5-1")
    (False, True)
    """
    return re.search(rf"(?<![\w.-]){re.escape(node)}(?![\w.-])", text) is not None
