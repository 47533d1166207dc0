"""nvidia-smi could not query the GPUs: the driver is unreachable, no GPU answered, a GPU is lost, or it hung.

Why it matters: these answers are the loudest symptom a sick GPU node gives.  "couldn't communicate
with the NVIDIA driver" (the module is not loaded or failed to bring the GPUs up), "No devices were
found", "Unable to determine the device handle for GPU ...: Unknown Error" / "GPU is lost" (a GPU fell
off the bus), "Failed to initialize NVML: Driver/library version mismatch" (a driver update without a
reboot) and a probe that ran into its timeout (the driver is hung) all mean no job can use the node's
GPUs as they are; so does an nvidia-bug-report that says no NVIDIA driver is loaded ("GPU Driver not
installed?", "/proc/driver/nvidia/version does not exist"), read as that report's nvidia-smi answer.
Where the output holds no such line, nvidia-smi's exit code says it (it is NVML's
return value: 9 driver not loaded, 6 no GPU found, 15 GPU lost, 16 reset required, 14 infoROM
corrupted, 18 version mismatch).  Read from the catalogue of failure answers (``parsers.probe_answers``: stdout, the
probe's ``.err`` and the manifest's exit code) of every nvidia-smi probe.  One finding per node naming
every answer, with the line that says it.  Critical on an instance type with GPUs (``sku.toml``); a
warning where the instance type is unknown (the node may have no GPU to query).  A missing
``nvidia-smi`` (exit 127) or a permission problem is a coverage fact (``bundle.coverage``), not this.
False positives: a collector run inside a container without the GPUs mapped (then nvidia-smi answers
the same way; collect on the host).
Source: docs/sources.md#nvidia-smi-failure-answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from parsers.probe_answers import COLLECTION_ANSWERS

RULE = RuleInfo(
    id="gpu.smi.unreachable",
    node_local=True,
    title="nvidia-smi cannot query the GPUs",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("gpu", "gpu_query", "smi_gpu", "probe_answer.family=nvidia-smi"),
    passed="nvidia-smi answered on every node it ran on",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "reboot the node (a driver/library mismatch clears with it); if nvidia-smi still fails, drain and "
        "replace",
    ),
    severity_reason=(
        "When nvidia-smi cannot reach the driver or a GPU, no job can use the node's GPUs as they are: "
        "reboot it, and drain it if nvidia-smi still fails; it is a warning only where the instance type "
        "does not say the node has GPUs. Source: NVML API reference (GPU lost, driver/library version "
        "mismatch) and the HyperPod node-debugger skill (awslabs/agent-plugins), GPU section."
    ),
)

#: What each answer means for the operator, in the finding's words.
SAYS = {
    "driver-unreachable": "cannot communicate with the NVIDIA driver",
    "driver-not-loaded": "cannot run: no NVIDIA driver is loaded",
    "no-devices": "finds no GPU",
    "gpu-lost": "reports a lost GPU",
    "device-handle-error": "cannot open a GPU",
    "nvml-mismatch": "reports a driver/library version mismatch",
    "nvml-init-failed": "cannot initialise NVML",
    "timeout": "hung until the probe's timeout",
    "insufficient-power": "reports a GPU without its power cables",
    "inforom-corrupted": "reports a corrupted infoROM",
    "reset-required": "reports a GPU that needs a reset",
}


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """SELECT a.bundle_id, a.node, n.instance_type, a.kind, a.answer, a.pci, a.stream, a.exit_code,
                  a.source_file, a.line, a.text
           FROM probe_answer a JOIN node n USING (bundle_id)
           WHERE a.family = 'nvidia-smi' ORDER BY a.node, a.path, a.line NULLS LAST"""
    )
    by_node: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["answer"] in COLLECTION_ANSWERS:
            continue
        by_node.setdefault((r["bundle_id"], r["node"]), []).append(r)
    for (bundle_id, node), answers in by_node.items():
        instance_type = answers[0]["instance_type"]
        sku = ctx.settings.instance(instance_type) or {}
        gpu_type = bool(sku.get("gpus"))
        kinds = sorted({a["kind"] for a in answers if a["kind"]})
        said = sorted({SAYS.get(a["answer"], a["answer"]) for a in answers})
        gpus = sorted({a["pci"] for a in answers if a["pci"]})
        where = f" ({', '.join(gpus)})" if gpus else ""
        what = instance_type or "instance type unknown"
        message = f"{node} ({what}): nvidia-smi {'; '.join(said)}{where} — {', '.join(kinds)}" + (
            "" if gpu_type else "; the instance type does not say the node has GPUs"
        )
        yield RULE.finding(
            severity=Severity.CRITICAL if gpu_type else Severity.WARNING,
            node=node,
            message=message,
            params={
                "answers": sorted({a["answer"] for a in answers}),
                "probes": kinds,
                "gpus": gpus,
                "exit_codes": sorted({a["exit_code"] for a in answers if a["exit_code"] is not None}),
                "instance_type": instance_type,
                "first": answers[0]["text"],
            },
            evidence=[ctx.evidence(a["source_file"], a["line"]) for a in answers[:3]],
            bundle_id=bundle_id,
        )
