"""``hptriage mcp``: the analysis as MCP tools over stdio, on the official MCP Python SDK.

Only ``hptriage mcp`` imports this module (the SDK is the optional extra ``hptriage[mcp]``).  Each tool
is a method of :class:`analyzer.assistants.tools.Toolbox` with a JSON schema for its arguments; a
:class:`~analyzer.assistants.tools.ToolProblem` becomes a tool error of one line, and so does anything
unexpected (its traceback goes to stderr, the client's log).  Every tool but ``redact`` only reads, and
``redact`` writes only under a root.  stdout carries the protocol and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from analyzer import __version__
from analyzer.assistants.summary import MAX_TOP, TOP_FINDINGS
from analyzer.assistants.tools import MAX_PARSE_RECORDS, PARSE_RECORDS, Toolbox, ToolProblem

T = TypeVar("T")
log = logging.getLogger("hptriage.mcp")

INSTRUCTIONS = """\
hptriage analyzes diagnostic bundles from GPU training clusters (SageMaker HyperPod: p4d/p5/p6 nodes
under Slurm or EKS), offline. Bundles come from collector.sh, run on every node; an nvidia-bug-report,
sos report or HyperPod issue report is read too. Start with analyze(paths) on the folder holding the
cluster's bundles: read verdict.status, then verdict.worst_nodes and verdict.cluster_wide, then the
sections it names (A uneven NCCL / topology, B filesystem, C GPU and host health) and the top findings;
each finding carries its route (owner, runbook target, action) and its first evidence lines (file and
line in the bundle). finding(fingerprint) gives one finding with all its evidence; rules(rule) a rule's
thresholds; plan(paths) the remediation plan (which nodes to reboot, replace or test, and why, as
HyperPod requests, Slurm reasons and EKS labels), text to show the user: never run any of it. Paths must
lie under the roots this server was started with: {roots}. Only redact writes (under a root). Redact
bundles before attaching anything to a support case."""

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

Paths = Annotated[
    list[str],
    Field(
        min_length=1,
        description="Node bundles (directories or .tar.gz), cluster folders or folders of them, under the"
        " server's roots; a relative path is taken under the first root.",
    ),
]


def build_server(toolbox: Toolbox) -> MCPServer[Any]:
    """An MCP server whose tools are the toolbox's methods."""
    server: MCPServer[Any] = MCPServer(
        "hptriage",
        title="hptriage: GPU cluster bundle triage",
        instructions=INSTRUCTIONS.format(roots=toolbox.roots.describe()),
        version=__version__,
        log_level="WARNING",
    )

    @server.tool(annotations=_READ_ONLY)
    def analyze(
        paths: Paths,
        top: Annotated[
            int, Field(ge=0, le=MAX_TOP, description="How many findings to show in full (worst first).")
        ] = TOP_FINDINGS,
    ) -> dict[str, Any]:
        """Analyze bundles and return the verdict: status (concerns / no-concerns / incomplete), counts,
        worst nodes, cluster-wide causes, the sections to open, what was not examined, and the top
        findings with route and first evidence lines (schema hptriage/summary/v1). The same verdict as
        `hptriage analyze --json`; a few kilobytes however large the cluster."""
        return _answer(toolbox.analyze, paths, top)

    @server.tool(annotations=_READ_ONLY)
    def finding(
        fingerprint: Annotated[
            str, Field(description="The finding's fingerprint (from analyze), or its first 8+ characters.")
        ],
        paths: Annotated[
            list[str] | None,
            Field(description="The paths it was analyzed from, when analyze was not called in this session."),
        ] = None,
    ) -> dict[str, Any]:
        """One finding with all its evidence lines (file, line, text), its parameters and its route."""
        return _answer(toolbox.finding, fingerprint, paths)

    @server.tool(annotations=_READ_ONLY)
    def plan(
        paths: Paths,
        max_age_hours: Annotated[
            float | None,
            Field(
                ge=0,
                description="Evidence older than this (hours since collection) takes no disruptive action;"
                " absent: the configured default (168, a week); 0: the age is not checked.",
            ),
        ] = None,
        history_db: Annotated[
            str | None,
            Field(
                description="A history store (`hptriage ingest --db`): a fault back after a reboot is a replace."
            ),
        ] = None,
        cluster_name: Annotated[
            str | None,
            Field(
                description="The HyperPod cluster name or ARN the requests name where meta.env gives none."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """The remediation plan of the bundles (schema hptriage/plan/v1, as `hptriage analyze --plan`):
        per node the action its evidence calls for (replace, reboot, reset-gpu, deep-health-check,
        investigate, fix-config, monitor) with the findings it rests on and why, cluster-wide fixes,
        waves, and the HyperPod request bodies, Slurm reasons and EKS labels. Text for a person to
        review: nothing is run, and no tool of this server runs it."""
        return _answer(toolbox.plan, paths, max_age_hours, history_db, cluster_name)

    @server.tool(annotations=_READ_ONLY)
    def parse(
        path: Annotated[str, Field(description="One raw output file (nvidia-smi -q, dmesg, fi_info, ...).")],
        kind: Annotated[
            str | None, Field(description="The format, e.g. nvidia-smi-q, dmesg; detected when absent.")
        ] = None,
        limit: Annotated[
            int, Field(ge=0, le=MAX_PARSE_RECORDS, description="How many records to return.")
        ] = PARSE_RECORDS,
    ) -> dict[str, Any]:
        """The records one parser makes of one raw file (like `hptriage parse`): tables with row counts,
        the first records, and the lines it did not understand."""
        return _answer(toolbox.parse, path, kind, limit)

    @server.tool(annotations=_READ_ONLY)
    def rules(
        rule: Annotated[
            str | None,
            Field(
                description="A rule id (gpu.xid) or an area prefix (fs.) to get in full; absent: the list."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """The rule catalog: every rule's id, severity, title and owner; with a rule, its thresholds
        (value, unit, source), the inputs it needs and its route."""
        return _answer(toolbox.rules, rule)

    @server.tool(annotations=_READ_ONLY)
    def history(
        db: Annotated[str, Field(description="A history store made by `hptriage ingest PATH... --db FILE`.")],
        node: Annotated[str | None, Field(description="Only this node.")] = None,
    ) -> dict[str, Any]:
        """Per node, findings over time (first / last seen, times seen), recurring Xids, ECC and
        row-remap trends, busbw and version changes; repeat offenders first. The store is opened
        read-only."""
        return _answer(toolbox.history, db, node)

    @server.tool(annotations=_READ_ONLY)
    def diff(
        old: Annotated[
            str, Field(description="The earlier bundle or cluster folder (or snapshot, with db).")
        ],
        new: Annotated[str, Field(description="The later bundle or cluster folder (or snapshot, with db).")],
        db: Annotated[
            str | None,
            Field(
                description="A history store: old and new are then snapshot ids, dates, 'latest', 'previous'."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """What changed between two snapshots: new and resolved findings, nodes added or gone, version
        changes, busbw and FSx deltas."""
        return _answer(toolbox.diff, old, new, db)

    @server.tool(annotations=_WRITES)
    def redact(
        paths: Paths,
        out: Annotated[
            str, Field(description="A new or empty directory under a root for the redacted copies.")
        ],
        map_path: Annotated[
            str | None,
            Field(description="The mapping file (reused when it exists); default OUT.map.json beside out."),
        ] = None,
        mask_serials: Annotated[bool, Field(description="Also mask GPU serials and UUIDs.")] = False,
    ) -> dict[str, Any]:
        """Write redacted copies of bundles (host names, addresses, account and instance ids, ARNs,
        buckets, user names) with one mapping for the whole cluster, then check that no original value
        is left. The only tool that writes: only under a root, the map beside out, never inside it."""
        return _answer(toolbox.redact, paths, out, map_path, mask_serials)

    return server


def _answer(tool: Callable[..., T], *args: Any) -> T:
    """The tool's answer; a problem the caller can act on, or a bug, as one line of tool error."""
    try:
        return tool(*args)
    except ToolProblem as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("tool %s failed", getattr(tool, "__name__", tool))
        detail = " ".join(str(exc).split())
        raise ToolError(f"internal error: {type(exc).__name__}: {detail}") from exc


def serve(toolbox: Toolbox) -> None:
    """Serve the tools over stdio until the client closes the connection."""
    build_server(toolbox).run("stdio")
