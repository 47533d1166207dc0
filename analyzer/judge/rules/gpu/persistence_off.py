"""GPU persistence mode is off: the driver tears the GPU state down whenever no process holds it.

Why it matters: without persistence every job start re-initialises the GPUs (seconds per GPU) and
health tools see a cold GPU; DCGM's software deployment check warns about it (a warning, not a
failure).  NVIDIA recommends the nvidia-persistenced daemon over the legacy persistence mode
(``nvidia-smi -pm 1``); the HyperPod AMIs keep it on.  Info: jobs still run correctly, only slower to
start.  One finding per node listing the GPUs.
Read from ``-q``, else the CSV ``persistence_mode``, else the plain table.
False positives: none on training nodes; nvidia-persistenced may be used instead (it also reports On).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import GpuState, gpu_states

RULE = RuleInfo(
    id="gpu.persistence.off",
    cause_kind="setting",
    setting_keys=("gpus",),
    node_local=True,
    title="GPU persistence mode off",
    severity=Severity.INFO,
    requires=("node",),
    requires_any=("gpu.persistence_mode", "gpu_query.persistence_mode", "smi_gpu.persistence_mode"),
    passed="persistence mode on for every GPU",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "run nvidia-persistenced (or enable persistence mode: nvidia-smi -pm 1)",
    ),
    severity_reason=(
        "NVIDIA's driver persistence documentation (docs.nvidia.com/deploy/driver-persistence) says that "
        "without persistence the driver tears a GPU's state down when its last client exits, so every job "
        "start initialises the GPUs again, and that the nvidia-persistenced daemon, which keeps the driver "
        "loaded and the GPUs initialised while no client holds them, is preferred over the legacy "
        "persistence mode (nvidia-smi -pm 1). Jobs still run correctly, only slower to start, and the "
        "software deployment check of DCGM (NVIDIA DCGM diagnostics documentation) reports it as a warning, "
        "not a failure, so it is context, not a fault."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    nodes: dict[tuple[str, str], list[GpuState]] = {}
    for s in gpu_states(ctx):
        if s.get("persistence") is False:
            nodes.setdefault((s.bundle_id, s.node), []).append(s)
    for (bundle_id, node), off in nodes.items():
        gpus = [s.index for s in off]
        evidence = [e for s in off[:3] for e in s.evidence(ctx, "persistence")]
        yield RULE.finding(
            node=node,
            message=f"{node}: persistence mode is off on {len(gpus)} GPU(s): {', '.join(map(str, gpus))}",
            params={"gpus": gpus, "count": len(gpus), "source": off[0].source},
            evidence=evidence,
            bundle_id=bundle_id,
        )
