"""A GPU's applications clocks set below their defaults, or below its same-type peers'.

Why it matters: ``nvidia-smi -ac <memory,graphics>`` pins the clocks a GPU runs compute work at; set
below the default (``nvidia-smi -rac`` resets them) the GPU computes slower on every step and paces the
job, with no error anywhere.  Read from ``-q`` "Applications Clocks" and "Default Applications Clocks"
(Graphics, Memory), else the CSV ``clocks.applications.*`` and ``clocks.default_applications.*``.  Each clock
is held to its default; where no default was read, to the median of the same instance type and GPU model
on the other nodes (docs/sources.md#gpu-power-limits; at least ``min_nodes`` nodes, else the node is not
examined).  More than ``below_fraction`` below is a warning, one per node naming the GPUs and both
values.  GPUs that print N/A (GeForce boards, drivers that dropped applications clocks) are not judged.
False positives: a site that pins lower clocks on purpose (power or thermal headroom).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu._lowered import Low, Measure, evidence, fmt, judge, per_node, said
from analyzer.judge.signals.gpus import gpu_states

TARGET = "hyperpod-node-debugger § G"
ROUTES = {
    "set": Route(
        "node-hardware",
        TARGET,
        "reset the applications clocks (nvidia-smi -rac) and remove what set them (a lifecycle script, a "
        "Slurm prolog, an admin's change)",
    ),
    "peers": Route(
        "node-hardware",
        TARGET,
        "read the GPU's default applications clocks (nvidia-smi -q -d CLOCK) and reset them (nvidia-smi -rac)",
    ),
}

RULE = RuleInfo(
    id="gpu.clocks.app_lowered",
    title="GPU applications clocks more than {below_fraction:pct} % below their defaults or their peers'",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=(
        "gpu.app_clock_graphics_mhz",
        "gpu.app_clock_memory_mhz",
        "gpu_query.app_clock_graphics_mhz",
        "gpu_query.app_clock_memory_mhz",
    ),
    cause_kind="setting",
    setting_keys=("values",),
    passed="every GPU's applications clocks at their defaults or peers'",
    route=ROUTES["set"],
    severity_reason=(
        "Applications clocks set below their defaults slow every kernel the GPU runs, but it computes "
        "correctly: degraded, not broken. Source: NVIDIA's nvidia-smi documentation (-ac / "
        "--applications-clocks sets the memory and graphics clocks compute work runs at, -rac resets them "
        "to the defaults; the Applications Clocks and Default Applications Clocks fields)."
    ),
)

GRAPHICS = Measure(
    "graphics applications clock",
    "MHz",
    lambda s: s.get("app_clock_graphics_mhz"),
    lambda s: s.get("default_app_clock_graphics_mhz"),
    ("app_clock_graphics_mhz", "default_app_clock_graphics_mhz"),
)
MEMORY = Measure(
    "memory applications clock",
    "MHz",
    lambda s: s.get("app_clock_memory_mhz"),
    lambda s: s.get("default_app_clock_memory_mhz"),
    ("app_clock_memory_mhz", "default_app_clock_memory_mhz"),
)


def check(ctx: Context) -> Iterable[Finding]:
    below = float(ctx.threshold(RULE, "below_fraction"))
    judged = judge(ctx, gpu_states(ctx), [GRAPHICS, MEMORY], below, int(ctx.threshold(RULE, "min_nodes")))
    yield from per_node(
        ctx,
        judged,
        lambda lo: "set" if lo.basis == "default" else "peers",
        lambda bundle_id, node, cause, lows: _finding(ctx, bundle_id, node, cause, lows, below),
    )


def _finding(ctx: Context, bundle_id: str, node: str, cause: str, lows: list[Low], below: float) -> Finding:
    ref_name = "default" if cause == "set" else "peers' median"
    text = said(lows, lambda lo: f"{lo.measure.name} {fmt(lo.value)} MHz, {ref_name} {fmt(lo.reference)} MHz")
    why = (
        "set below the default, as nvidia-smi -ac does"
        if cause == "set"
        else f"below the other {lows[0].group} nodes ({lows[0].peer_nodes} nodes); no default was read"
    )
    ev = [e for lo in lows[:3] for e in evidence(ctx, lo.state, lo.measure.fields)]
    gpus = list(dict.fromkeys(lo.state.index for lo in lows))
    return RULE.finding(
        node=node,
        message=f"{node}: applications clocks lowered on {len(gpus)} GPU(s), {text} ({why})",
        params={
            "cause": cause,
            "gpus": gpus,
            "values": sorted(
                {f"{lo.measure.name} {fmt(lo.value)} MHz of {fmt(lo.reference)} MHz" for lo in lows}
            ),
            "basis": lows[0].basis,
            "peer_group": lows[0].group or None,
            "peer_nodes": lows[0].peer_nodes or None,
            "below_fraction": below,
            "source": lows[0].state.source,
        },
        route=ROUTES[cause],
        evidence=[e for i, e in enumerate(ev) if e not in ev[:i]],
        bundle_id=bundle_id,
        key=(cause,),
    )
