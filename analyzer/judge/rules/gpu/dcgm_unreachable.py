"""dcgmi could not run its diagnostics: no DCGM host engine to talk to, or it hung.

Why it matters: a bundle collected with ``--dcgm`` is meant to carry DCGM's verdict on the GPUs; when
``dcgmi`` answers "Unable to connect to host engine" (nv-hostengine / the nvidia-dcgm service is not
running) or runs into the probe's timeout, that verdict is missing and the node's GPUs were not
diagnosed: the node must not read as DCGM-clean.  Read from the probe's failure answers
(``probe_answer``, parsers.probe_answers: stdout, ``.err``, exit code).  Warning: the node is not known
to be faulty, but its health checks cannot run (HyperPod's deep health checks use DCGM too).
False positives: none; a missing ``dcgmi`` (exit 127) is a coverage fact, not this.
Source: docs/sources.md#probe-failure-answers.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.dcgm.unreachable",
    cause_kind="setting",
    setting_keys=("answer", "exit_code"),
    node_local=True,
    title="DCGM diagnostics could not run",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("dcgm_test", "probe_answer.family=dcgm"),
    passed="dcgmi reached its host engine wherever it ran",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "start the DCGM host engine (systemctl start nvidia-dcgm, or nv-hostengine) and collect again with --dcgm",
    ),
    severity_reason=(
        "The node is not known to be faulty, but its GPUs were not diagnosed and HyperPod's deep health "
        "checks need DCGM too, so restore the host engine soon. Source: NVIDIA DCGM documentation (dcgmi "
        "needs a running nv-hostengine) and AWS SageMaker HyperPod deep health checks documentation."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """SELECT bundle_id, node, answer, exit_code, source_file, line, text FROM probe_answer
           WHERE family = 'dcgm' AND answer IN ('hostengine-unreachable', 'timeout')
           ORDER BY node, answer"""
    )
    done: set[str] = set()
    for r in rows:
        if r["bundle_id"] in done:
            continue
        done.add(r["bundle_id"])
        said = "hung until the probe's timeout" if r["answer"] == "timeout" else f"answered {r['text']!r}"
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']}: dcgmi {said}; the node's GPUs were not diagnosed by DCGM",
            params={"answer": r["answer"], "exit_code": r["exit_code"], "text": r["text"]},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
