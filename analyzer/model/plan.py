"""The remediation plan as every renderer is given it: per node the action its evidence calls for, the
cluster-wide fixes, the waves, and the same plan in the orchestrator's own terms.

The plan is built by :mod:`analyzer.plan.build` from the report data (and, where given, a history
store); this module holds only its records and the action vocabulary, so renderers read it as they read
the verdict.  hptriage runs none of it: every request body and command is text for a person to review.

Actions, lightest first (:data:`ACTIONS`); the last four take the node out of service
(:data:`DISRUPTIVE`):

- ``none``: nothing to do on the node;
- ``monitor``: nothing now; watch a trend (corrected ECC, remapped-row history, EFA counters);
- ``fix-config``: a setting, an install, a version or a mount (governor, persistence mode, driver, NCCL,
  aws-ofi-nccl, /dev/shm, the NVMe mount, a power limit): fixed where it is set, never by rebooting;
- ``investigate``: look closer or collect again before any action (a warning, an application-class
  fault, a node whose GPU state was not examined, evidence too old to act on);
- ``deep-health-check``: HyperPod's on-demand deep health checks on the node (it is unschedulable
  while they run, and HyperPod reboots or replaces it when they fail);
- ``reset-gpu``: a GPU reset (NVIDIA's RESET_GPU; on HyperPod done as a node reboot);
- ``reboot``: a node reboot (HyperPod BatchRebootClusterNodes, Slurm ``Action:Reboot``, EKS label);
- ``replace``: new hardware for the instance (BatchReplaceClusterNodes; destroys the instance's root and
  secondary volumes).

>>> weight("replace") > weight("reboot") > weight("reset-gpu") > weight("investigate") > weight("none")
True
>>> sorted(DISRUPTIVE)
['deep-health-check', 'reboot', 'replace', 'reset-gpu']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The action words, lightest first.
ACTIONS: tuple[str, ...] = (
    "none",
    "monitor",
    "fix-config",
    "investigate",
    "deep-health-check",
    "reset-gpu",
    "reboot",
    "replace",
)
#: Actions that take the node out of service: each needs a critical finding of the node behind it.
DISRUPTIVE = frozenset({"deep-health-check", "reset-gpu", "reboot", "replace"})
#: What hptriage says at the top of every plan.
READ_ONLY = (
    "hptriage is read-only: it ran none of this and runs none of it. Every request body and command below "
    "is text for a person to review against the cluster as it is now, then run by hand."
)
#: What a replacement does to the instance's storage (AWS SageMaker API reference, BatchReplaceClusterNodes).
REPLACE_WARNING = (
    "Replacing a node destroys every volume of its instance, root and secondary (checkpoints, caches and "
    "logs kept on the node are lost): copy what is needed to FSx or S3 first. On Slurm a controller node "
    "cannot be replaced."
)


def weight(action: str) -> int:
    """The rank of an action word (heavier is more disruptive); an unknown word ranks as ``investigate``."""
    return ACTIONS.index(action) if action in ACTIONS else ACTIONS.index("investigate")


@dataclass(frozen=True)
class PlanFinding:
    """A finding a node's action rests on, with the action it alone would call for and why."""

    rule: str
    severity: str
    message: str
    evidence: list[dict[str, Any]]
    action: str
    why: str
    fingerprint: str
    gpu: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "gpu": self.gpu,
            "message": self.message,
            "evidence": self.evidence,
            "action": self.action,
            "why": self.why,
            "fingerprint": self.fingerprint,
        }


@dataclass
class NodeAction:
    """One node's action: the heaviest its findings call for, after the guardrails."""

    node: str
    action: str
    why: str
    instance_id: str | None = None
    hostname: str | None = None
    cluster: str | None = None
    instance_group: str | None = None
    instance_type: str | None = None
    collected_at: str | None = None
    evidence_age_hours: float | None = None
    findings: list[PlanFinding] = field(default_factory=list)
    #: what to do, in order (the evidence first for a disruptive action)
    steps: list[str] = field(default_factory=list)
    #: the action the evidence called for and the guardrail that held it back ({action, why})
    held_back: dict[str, str] | None = None
    #: earlier episodes of the same fault (an earlier boot of the bundle, an earlier snapshot)
    history: list[dict[str, Any]] = field(default_factory=list)
    #: rebooted for the same fault again and again
    loop: bool = False
    wave: int | None = None
    #: the orchestrator's forms of this node's action (HyperPod call, Slurm reason, EKS label)
    forms: dict[str, Any] = field(default_factory=dict)

    @property
    def disruptive(self) -> bool:
        return self.action in DISRUPTIVE

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "instance_id": self.instance_id,
            "hostname": self.hostname,
            "cluster": self.cluster,
            "instance_group": self.instance_group,
            "instance_type": self.instance_type,
            "action": self.action,
            "disruptive": self.disruptive,
            "why": self.why,
            "wave": self.wave,
            "collected_at": self.collected_at,
            "evidence_age_hours": self.evidence_age_hours,
            "held_back": self.held_back,
            "loop": self.loop,
            "history": self.history,
            "steps": self.steps,
            "forms": self.forms,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass
class ClusterAction:
    """One cause shared by many nodes (a file system, the placement, one image's setting): one fix."""

    rule: str
    action: str
    severity: str
    message: str
    step: str
    why: str
    nodes: list[str] = field(default_factory=list)
    findings: list[PlanFinding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "action": self.action,
            "severity": self.severity,
            "message": self.message,
            "step": self.step,
            "why": self.why,
            "nodes": self.nodes,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass
class Plan:
    """The whole plan: what the top says, the node actions, the cluster fixes, the waves and the forms."""

    as_of: str
    settings: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    actions: list[NodeAction] = field(default_factory=list)
    cluster_actions: list[ClusterAction] = field(default_factory=list)
    #: [{wave, nodes, reason}] in the order to run them
    waves: list[dict[str, Any]] = field(default_factory=list)
    #: request bodies: BatchRebootClusterNodes, BatchReplaceClusterNodes, StartClusterHealthCheck
    hyperpod: dict[str, Any] = field(default_factory=dict)
    #: [{wave, action, reason, hostlist, nodes, command}]
    slurm: list[dict[str, Any]] = field(default_factory=list)
    #: [{wave, action, label, nodes, commands}]
    eks: list[dict[str, Any]] = field(default_factory=list)
    #: nodes whose evidence asks for nothing
    nodes_without_action: list[str] = field(default_factory=list)
    read_only: str = READ_ONLY
    replace_warning: str = REPLACE_WARNING

    def counts(self) -> dict[str, int]:
        """How many nodes get each action (cluster fixes apart)."""
        out = {a: 0 for a in ACTIONS}
        for a in self.actions:
            out[a.action] = out.get(a.action, 0) + 1
        return {a: n for a, n in out.items() if n}

    @property
    def disruptive(self) -> list[NodeAction]:
        return [a for a in self.actions if a.disruptive]

    def as_dict(self) -> dict[str, Any]:
        return {
            "as_of": self.as_of,
            "read_only": self.read_only,
            "replace_warning": self.replace_warning,
            "settings": self.settings,
            "warnings": self.warnings,
            "counts": self.counts(),
            "actions": [a.as_dict() for a in self.actions],
            "cluster_actions": [c.as_dict() for c in self.cluster_actions],
            "waves": self.waves,
            "hyperpod": self.hyperpod,
            "slurm": self.slurm,
            "eks": self.eks,
            "nodes_without_action": self.nodes_without_action,
        }
