"""The plan in the orchestrator's own terms: HyperPod request bodies, Slurm node reasons, EKS node labels.

All of it is text for a person to review; hptriage sends no request and runs no command.

- HyperPod API (AWS SageMaker API reference): ``BatchRebootClusterNodes`` and ``BatchReplaceClusterNodes``
  take ``{"ClusterName", "NodeIds"}`` with 1 to 25 EC2 instance ids (``i-`` and 8 or 17 hex digits);
  ``StartClusterHealthCheck`` takes ``{"ClusterName", "DeepHealthCheckConfigurations": [{"InstanceGroupName",
  "InstanceIds", "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}]}`` (1 to 99
  configurations, up to 500 ids each; no ids means the whole instance group, so a node without an id is
  never sent that way).
- Slurm on HyperPod: ``scontrol update node=<nodes> state=fail reason="Action:Reboot"`` (or
  ``"Action:Replace"``); HyperPod acts on the reason only when it is exactly that text.
- EKS on HyperPod: the node label ``sagemaker.amazonaws.com/node-health-status`` set to
  ``UnschedulablePendingReboot`` or ``UnschedulablePendingReplacement`` starts the same recovery (with
  automatic node recovery enabled); the node already carries the label (``Schedulable``), so kubectl needs
  ``--overwrite``.  HyperPod EKS nodes are named ``hyperpod-<instance id>``.

docs/sources.md#remediation-plan names the documents.

>>> batches(["i-%017x" % n for n in range(60)], 25)[-1][:1], [len(b) for b in batches(list(range(60)), 25)]
(['i-00000000000000032'], [25, 25, 10])
>>> slurm_name("ip-10-1-0-11.ec2.internal", "n1"), eks_name("i-0123456789abcdef0", "ip-10-1-0-11")
('ip-10-1-0-11', 'hyperpod-i-0123456789abcdef0')
>>> hostlist_of(["ip-10-1-0-11", "ip-10-1-0-12", "ip-10-1-0-9"])
'ip-10-1-0-[9,11-12]'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: The most instance ids one BatchRebootClusterNodes / BatchReplaceClusterNodes request takes.
BATCH = 25
#: The most instance ids one deep health check configuration takes.
HEALTH_CHECK_IDS = 500
#: An EC2 instance id as the SageMaker API accepts it.
INSTANCE_ID = re.compile(r"^i-[a-f0-9]{8}(?:[a-f0-9]{9})?$")
#: The cluster name a request carries where meta.env names none (the request is refused until edited).
UNKNOWN_CLUSTER = "<cluster-name>"
UNKNOWN_GROUP = "<instance-group-name>"

#: action -> (HyperPod API call, Slurm reason, EKS node-health-status label value); None: no such form
FORMS: dict[str, tuple[str, str | None, str | None]] = {
    "reboot": ("BatchRebootClusterNodes", "Action:Reboot", "UnschedulablePendingReboot"),
    # HyperPod has no call that resets one GPU: a reboot resets every GPU of the node (NVIDIA Xid catalog:
    # a GPU reset or machine restart is a node reboot on HyperPod)
    "reset-gpu": ("BatchRebootClusterNodes", "Action:Reboot", "UnschedulablePendingReboot"),
    "replace": ("BatchReplaceClusterNodes", "Action:Replace", "UnschedulablePendingReplacement"),
    "deep-health-check": ("StartClusterHealthCheck", None, None),
}
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
#: The deep health checks the plan asks for (InstanceStress: DCGM, memory and EFA loopback on the node;
#: InstanceConnectivity: NCCL and EFA between nodes).
DEEP_CHECKS = ["InstanceStress", "InstanceConnectivity"]


def valid_instance_id(value: Any) -> str | None:
    """The instance id as the API takes it, or None (absent, redacted, malformed)."""
    return value if isinstance(value, str) and INSTANCE_ID.match(value) else None


def batches(items: Sequence[T], size: int = BATCH) -> list[list[T]]:
    """The items cut into lists of at most ``size``, in order."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def slurm_name(hostname: str | None, node: str) -> str:
    """The node's Slurm name on HyperPod: its short host name (``ip-10-1-0-11``), else the node's name."""
    if hostname:
        return hostname.split(".", 1)[0]
    return node


def eks_name(instance_id: str | None, hostname: str | None) -> str:
    """The Kubernetes node name of a HyperPod EKS node: ``hyperpod-<instance id>``; without an id, the host
    name (to check against ``kubectl get nodes``)."""
    if instance_id:
        return f"hyperpod-{instance_id}"
    return hostname or "<node-name>"


def hostlist_of(names: Sequence[str]) -> str:
    """The names as one Slurm hostlist expression (python-hostlist)."""
    import hostlist

    return str(hostlist.collect_hostlist(sorted(set(names))))


def slurm_command(names: Sequence[str], reason: str) -> str:
    return f'scontrol update node={hostlist_of(names)} state=fail reason="{reason}"'


def eks_commands(names: Sequence[str], label: str) -> list[str]:
    listed = " ".join(sorted(set(names)))
    return [f"kubectl cordon {listed}", f"kubectl label nodes {listed} {HEALTH_LABEL}={label} --overwrite"]


def health_check_body(cluster: str, groups: dict[str, list[str]]) -> dict[str, Any]:
    """One StartClusterHealthCheck request: one configuration per instance group and id batch."""
    configs = [
        {"InstanceGroupName": group, "InstanceIds": ids, "DeepHealthChecks": list(DEEP_CHECKS)}
        for group, all_ids in sorted(groups.items())
        for ids in batches(all_ids, HEALTH_CHECK_IDS)
    ]
    return {"ClusterName": cluster, "DeepHealthCheckConfigurations": configs}
