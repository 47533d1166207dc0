"""The judge's records: findings with their evidence and routes, and each rule's outcome."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: The closed list of owners a finding can be routed to.
OWNERS = (
    "node-hardware",
    "nccl-network",
    "version-drift",
    "filesystem-capacity",
    "io-pattern",
    "placement-capacity",
    "scheduler",
    "support-bundle",
)


class Severity(str, enum.Enum):
    """A finding's severity; a rule that ran and found nothing is the outcome ``pass`` ([OK]), not a finding."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"critical": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Route:
    owner: str
    target: str
    action: str

    def __post_init__(self) -> None:
        if self.owner not in OWNERS:
            raise ValueError(f"route owner {self.owner!r} is not one of {OWNERS}")

    def as_dict(self) -> dict[str, str]:
        return {"owner": self.owner, "target": self.target, "action": self.action}


@dataclass(frozen=True)
class Evidence:
    file: str
    line: int | None
    text: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text}


#: A finding's params key that ranks its node first in the verdict: a hang traced to this node, whose own
#: evidence (an Xid, a port down, a failed probe) precedes it, is the cause the other nodes' concerns follow.
RANKS_FIRST = "ranks_first"


@dataclass
class Finding:
    rule: str
    rule_version: int
    severity: Severity
    node: str | None
    gpu: int | None
    message: str
    params: dict[str, Any]
    route: Route
    evidence: list[Evidence] = field(default_factory=list)
    bundle_id: str | None = None
    key: tuple[Any, ...] = ()  # what makes this finding distinct besides rule/node/gpu

    @property
    def nodes_named(self) -> set[str]:
        """The nodes this finding is about: its own, and the list a cluster finding names in
        ``params["nodes"]`` (a count under that key would be no list of names: ignored)."""
        named = self.params.get("nodes")
        listed = {n for n in named if isinstance(n, str)} if isinstance(named, list) else set()
        return listed | ({self.node} if self.node else set())

    @property
    def fingerprint(self) -> str:
        basis = json.dumps([self.rule, self.node, self.gpu, list(self.key)], default=str)
        return hashlib.sha256(basis.encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "rule_version": self.rule_version,
            "severity": self.severity.value,
            "node": self.node,
            "gpu": self.gpu,
            "message": self.message,
            "params": self.params,
            "route": self.route.as_dict(),
            "evidence": [e.as_dict() for e in self.evidence],
            "fingerprint": self.fingerprint,
        }


def finding_order(finding: Finding) -> tuple[int, str, int, str]:
    """The one order of findings, wherever they are listed: worst first, then by node (cluster-wide
    findings first), GPU and rule.  ``findings.sort(key=finding_order)``."""
    gpu = finding.gpu if finding.gpu is not None else -1
    return (finding.severity.rank, finding.node or "", gpu, finding.rule)


@dataclass
class Outcome:
    """How one rule ended over the whole analysis, and which nodes it checked or could not examine."""

    rule: str
    outcome: str  # fail | pass | skipped | error
    findings: int
    reason: str | None = None
    #: nodes whose input was absent: not examined there (never counted as passing)
    nodes_without_data: list[str] = field(default_factory=list)
    #: nodes whose input was collected and read (empty for a rule judged on cluster-wide exports)
    nodes_checked: list[str] = field(default_factory=list)
