"""Run the rules over the store; every rule ends 'fail', 'pass', 'skipped' or 'error'."""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from analyzer.judge.findings import Evidence, Finding, Outcome, Route, Severity, finding_order
from analyzer.judge.settings import Settings, load_settings

if TYPE_CHECKING:
    import duckdb

    from analyzer.store.deferred import Deferred


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata: what it checks, what it needs, who acts on it."""

    id: str
    #: may name the rule's thresholds, ``{warning_pct}`` (a fraction as a percentage: ``{fraction:pct}``),
    #: so that it says what a site's --config judges by: read it through :meth:`title_for`
    title: str
    severity: Severity
    requires: tuple[str, ...]
    route: Route
    version: int = 1
    #: alternative sources: at least one of them (see analyzer.judge.coverage for what "has" means)
    requires_any: tuple[str, ...] = ()
    #: what an [OK] line says when the rule ran and found nothing ("no TCP fallback seen"); thresholds
    #: as in the title, read through :meth:`passed_for`
    passed: str = ""
    #: where the cause of a finding lies: "node" (a fault of that node: the node is ranked), "shared"
    #: (a cause shared by many nodes — a file system, a spine link, the placement, a cluster-wide
    #: version: listed as cluster-wide, its nodes not ranked for it)
    scope: str = "node"
    #: rules whose finding explains this rule's findings as symptoms (iowait on every node of a saturated
    #: file system): when one of them fired, this rule's findings do not rank their nodes
    explained_by: tuple[str, ...] = ()
    #: why the rule's worst severity is what it is, and the public source that says so (shown in the
    #: rule catalog: ``hptriage rules``, docs/rules.md)
    severity_reason: str = ""
    #: the rule judges every input from its own rows alone (one node bundle, or one cluster ``extra/``
    #: folder): it compares no node with another and joins no node's rows with rows about it from
    #: another input, so it may run where each bundle is read (``hptriage ingest --parquet``), its
    #: findings on a cluster being the union of its findings on each input.  False (the default) runs
    #: the rule once over the whole snapshot; a rule pack may leave it so.
    node_local: bool = False
    #: what a finding of a node-scope rule is about, for the verdict's cluster-wide causes: "fault" (an
    #: event or a defect of one device or one node: an Xid, an ECC error, a link down, a full disk;
    #: findings on many nodes are as many faults, and each ranks its node however many nodes show one)
    #: or "setting" (a value that one image, one configuration or one install gives many nodes: a
    #: governor, persistence mode, a version; findings that carry the same value on every examined
    #: node of an instance type are one cause, cluster-wide).  A rule is a fault unless it says so.
    cause_kind: str = "fault"
    #: of a "setting" rule: the params keys whose values are the setting (``governors``, ``driver``);
    #: findings fold into one cluster-wide cause only where these values (and ``params["cause"]``) agree.
    #: None of them: every finding of the rule states the same fact ("persistence mode off").
    setting_keys: tuple[str, ...] = ()
    #: a rule that judges a node (or a GPU, a pair) against its peers: the threshold key of the least
    #: number of peers it needs (``min_nodes``; its unit says of what).  With fewer, the rule does not
    #: judge them (:meth:`Context.not_judged`, :class:`TooFewPeers`): they are not examined, never passed.
    peers: str = ""

    def __post_init__(self) -> None:
        if self.scope not in ("node", "shared"):
            raise ValueError(f"rule {self.id}: scope {self.scope!r} is not 'node' or 'shared'")
        if self.cause_kind not in ("fault", "setting"):
            raise ValueError(f"rule {self.id}: cause_kind {self.cause_kind!r} is not 'fault' or 'setting'")
        if self.setting_keys and self.cause_kind != "setting":
            raise ValueError(f"rule {self.id}: setting_keys are for a cause_kind 'setting' rule")

    def title_for(self, settings: Settings) -> str:
        """The title with its threshold placeholders filled from ``settings`` (defaults or a site's).

        >>> from analyzer.judge.findings import Route, Severity
        >>> rule = RuleInfo("fs.iowait.high", "CPU iowait above {iowait_pct} %", Severity.WARNING, (),
        ...                 Route("io-pattern", "runbook", "look"))
        >>> rule.title_for(load_settings())
        'CPU iowait above 20 %'
        """
        return _ThresholdText(self.id, settings).format(self.title)

    def passed_for(self, settings: Settings) -> str:
        """The pass phrase with its threshold placeholders filled from ``settings``."""
        return _ThresholdText(self.id, settings).format(self.passed)

    def finding(
        self,
        *,
        node: str | None,
        message: str,
        params: dict[str, Any],
        gpu: int | None = None,
        severity: Severity | None = None,
        route: Route | None = None,
        evidence: Iterable[Evidence] = (),
        bundle_id: str | None = None,
        key: tuple[Any, ...] = (),
    ) -> Finding:
        """A finding of this rule: its id and version filled in, its severity and route unless given.

        ``key`` is what tells this finding apart from others of the rule on the same node and GPU (it
        goes into the fingerprint with them).
        """
        return Finding(
            rule=self.id,
            rule_version=self.version,
            severity=self.severity if severity is None else severity,
            node=node,
            gpu=gpu,
            message=message,
            params=params,
            route=self.route if route is None else route,
            evidence=list(evidence),
            bundle_id=bundle_id,
            key=key,
        )


class _ThresholdText(string.Formatter):
    """Fills ``{key}`` in a rule's title or pass phrase with the value of its threshold ``key`` (a number
    written as ``%g`` writes it, ``{key:pct}`` a fraction as a percentage: 0.05 -> 5)."""

    def __init__(self, rule: str, settings: Settings) -> None:
        self.rule = rule
        self.settings = settings

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return self.settings.value(self.rule, str(key))

    def format_field(self, value: Any, format_spec: str) -> str:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if format_spec == "pct" and number:
            return format(value * 100, "g")
        if not format_spec and number:
            return format(value, "g")
        return str(format(value, format_spec))


class NotExamined(Exception):
    """Raised by a rule's check() that found none of its own input among the tables it was given (only
    other metrics of an export, say): the rule ends ``skipped`` with this reason, never ``pass``."""


#: How the reason of a comparison that lacked peers begins (an outcome's reason, a node's not-examined why).
TOO_FEW_PEERS = "too few peers"


class CannotJudge(NotExamined):
    """Raised by a rule's check() that read its input but had nothing to judge it against (no expected
    line for the instance type, no peers): the rule ends ``skipped`` with this reason as it is, never
    ``pass``; every node is not examined by it."""


class TooFewPeers(CannotJudge):
    """Raised by a rule's check() that compares nodes (or GPUs, pairs) with their peers and found no group
    big enough to compare: the rule ends ``skipped`` with this reason (:func:`too_few_peers`), never
    ``pass``; every node is not examined by it."""


def too_few_peers(have: int, need: int, unit: str = "nodes", group: str | None = None) -> str:
    """The reason a peer comparison was not made.

    >>> too_few_peers(1, 4, "nodes", "p5.48xlarge")
    'too few peers: 1 of 4 nodes (p5.48xlarge)'
    """
    return f"{TOO_FEW_PEERS}: {have} of {need} {unit}" + (f" ({group})" if group else "")


class RuleModule(Protocol):
    RULE: RuleInfo

    def check(self, ctx: Context) -> Iterable[Finding]: ...


class Context:
    """What a rule's check() receives: the database and helpers for evidence."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        settings: Settings | None = None,
        deferred: Deferred | None = None,
    ) -> None:
        self.con = con
        self.settings = settings or load_settings()
        #: long tables not in the store yet: a query through :meth:`rows` that names one inserts it first
        self.deferred = deferred

    def saw(self, nodes: Iterable[str]) -> None:
        """The running rule judged these nodes from an input the coverage cannot tie to them (a
        cluster-level export that names them, mapped by the rule): they count as checked."""
        seen: set[str] = self.__dict__.setdefault("_saw", set())
        seen.update(n for n in nodes if n)

    def take_saw(self) -> set[str]:
        """The nodes the rule that just ran reported with :meth:`saw` (and forget them)."""
        seen: set[str] = self.__dict__.pop("_saw", set())
        return seen

    def not_judged(self, nodes: Iterable[str], reason: str) -> None:
        """The running rule read these nodes' input but could not judge them (``too_few_peers(...)``:
        too few peers to compare with): they are not examined by it, with that reason, never passing.
        Where it judged no node at all the rule ends ``skipped``."""
        unjudged: dict[str, set[str]] = self.__dict__.setdefault("_not_judged", {})
        for n in nodes:
            if n:
                unjudged.setdefault(n, set()).add(reason)

    def take_not_judged(self) -> dict[str, set[str]]:
        """The nodes the rule that just ran reported with :meth:`not_judged`, with why (and forget them)."""
        unjudged: dict[str, set[str]] = self.__dict__.pop("_not_judged", {})
        return unjudged

    def threshold(self, rule: RuleInfo, key: str) -> Any:
        """A rule's threshold from thresholds.toml (or the site override)."""
        return self.settings.value(rule.id, key)

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        """A value several rules read (a table grouped once): made on first use, then shared."""
        cache: dict[str, Any] = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        if self.deferred is not None:
            self.deferred.ensure(self.con, sql)
        cur = self.con.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=False)) for row in cur.fetchall()]

    def meta_evidence(self, node: str, key: str) -> Evidence:
        """The meta.env line of a node's KEY=VALUE, as evidence with its line number."""
        cache: dict[tuple[str, str], tuple[int, str]] | None = getattr(self, "_meta_lines", None)
        if cache is None:
            cache = {}
            for file, line, text in self.con.execute(
                "SELECT source_file, line, text FROM source_line WHERE source_file LIKE '%/meta.env'"
            ).fetchall():
                cache.setdefault(
                    (file.removesuffix("/meta.env"), text.partition("=")[0].strip()), (line, text)
                )
            self._meta_lines = cache
        hit = cache.get((node, key))
        return Evidence(f"{node}/meta.env", hit[0] if hit else None, hit[1] if hit else None)

    def evidence(self, source_file: str | None, line: int | None) -> Evidence:
        """Evidence pointing at a file and line; its text is filled in after all rules ran (one join)."""
        if source_file is None:
            return Evidence("", None, None)
        return Evidence(source_file, line, None)


def run_rules(
    con: duckdb.DuckDBPyConnection,
    modules: Iterable[RuleModule],
    settings: Settings | None = None,
    deferred: Deferred | None = None,
) -> tuple[list[Finding], list[Outcome]]:
    """Run the rules over the store; ``deferred``: long tables held back by the load, inserted when a
    rule requires one or queries it through ``Context.rows``."""
    from analyzer.judge.coverage import Coverage

    ctx = Context(con, settings, deferred)
    coverage = Coverage(con)
    findings: list[Finding] = []
    outcomes: list[Outcome] = []
    for module in modules:
        info = module.RULE
        ctx.take_saw()
        ctx.take_not_judged()
        try:
            if deferred is not None:
                deferred.ensure(con, " ".join([*info.requires, *info.requires_any]))
            # a requirement naming a table or column the store lacks fails here: the rule's error too
            seen = coverage.examined(info.requires, info.requires_any)
            if seen.absent:
                outcomes.append(
                    Outcome(
                        info.id,
                        "skipped",
                        0,
                        "no input: " + ", ".join(seen.absent),
                        nodes_without_data=seen.missing,
                    )
                )
                continue
            found = list(module.check(ctx))
        except NotExamined as exc:  # the rule's own input was not among what the tables hold, or no peers
            ctx.take_saw()
            ctx.take_not_judged()
            reason = str(exc) if isinstance(exc, CannotJudge) else f"no input: {exc}"
            outcomes.append(Outcome(info.id, "skipped", 0, reason, nodes_without_data=sorted(coverage.nodes)))
            continue
        except Exception as exc:  # a broken rule (requirement or check) is reported, the others still run
            ctx.take_saw()
            ctx.take_not_judged()
            outcomes.append(Outcome(info.id, "error", 0, error_reason(exc)))
            continue
        mapped = ctx.take_saw()
        unjudged = ctx.take_not_judged()
        findings.extend(found)
        checked = (set(seen.checked) | (mapped & set(coverage.nodes))) - set(unjudged)
        without = (set(seen.missing) - mapped) | set(unjudged)
        partial = "; ".join(sorted({r for why in unjudged.values() for r in why})) or None
        # a rule that compares nodes and could judge none of the nodes it read is not examined
        none_judged = bool(unjudged) and not checked and bool(seen.checked or mapped)
        outcomes.append(
            Outcome(
                info.id,
                "skipped" if none_judged and not found else "fail" if found else "pass",
                len(found),
                partial,
                nodes_without_data=sorted(without),
                nodes_checked=sorted(checked),
            )
        )
    findings.sort(key=finding_order)
    _fill_evidence_text(con, findings, deferred)
    _store(con, findings, outcomes)
    return findings, outcomes


#: the outcome that wins when one rule was judged several times (over parts, by workers): worst first
OUTCOME_RANK = {"error": 0, "fail": 1, "pass": 2, "skipped": 3}


def merge_outcomes(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """One outcome per rule (in the order rules first appear) from the outcomes of several runs of the
    rules (a pipeline's parts, a fleet's workers and its snapshot): the worst (error, then fail, then
    pass, then skipped), its findings the sum of all, its reason those of the outcomes as bad as it, and
    the why of any run that had too few peers to compare (kept beside the runs that were judged); the
    nodes checked and not examined are those of every run."""
    by_rule: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_rule.setdefault(o.rule, []).append(o)
    merged = []
    for outs in by_rule.values():
        best = min(outs, key=lambda o: OUTCOME_RANK.get(o.outcome, len(OUTCOME_RANK)))
        reasons = sorted(
            {
                o.reason
                for o in outs
                if o.reason and (o.outcome == best.outcome or o.reason.startswith(TOO_FEW_PEERS))
            }
        )
        merged.append(
            replace(
                best,
                findings=sum(o.findings for o in outs),
                reason="; ".join(reasons) or None,
                nodes_without_data=sorted({n for o in outs for n in o.nodes_without_data}),
                nodes_checked=sorted({n for o in outs for n in o.nodes_checked}),
            )
        )
    return merged


def error_reason(exc: BaseException) -> str:
    """A rule's error as its outcome's reason: ``<ExceptionType>: <message>`` on one line (without the
    excerpt of the query a DuckDB error appends, ``LINE 1: ...``)."""
    message = " ".join(str(exc).split("\nLINE ", 1)[0].split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _fill_evidence_text(
    con: duckdb.DuckDBPyConnection, findings: list[Finding], deferred: Deferred | None = None
) -> None:
    """Look up the text of every evidence line in one query instead of one query per finding."""
    wanted = {(e.file, e.line) for f in findings for e in f.evidence if e.line is not None and e.text is None}
    if not wanted:
        return
    text = line_texts(con, wanted, deferred)
    for f in findings:
        f.evidence = [
            Evidence(e.file, e.line, text.get((e.file, e.line)))
            if e.text is None and e.line is not None
            else e
            for e in f.evidence
        ]


def line_texts(
    con: duckdb.DuckDBPyConnection, wanted: set[tuple[str, int]], deferred: Deferred | None = None
) -> dict[tuple[str, int], str]:
    """The text of each wanted (source_file, line), as printed (its first 1,000 characters): from
    ``source_line``, else from the file kept whole in ``source_text`` (in the store, or held back by the
    load: ``deferred``).  A line the store does not hold is left out."""
    import pyarrow as pa

    if not wanted:
        return {}
    keys = pa.table({"source_file": [k[0] for k in wanted], "line": [k[1] for k in wanted]})
    con.register("_wanted", keys)
    found = con.execute(
        "SELECT s.source_file, s.line, any_value(s.text) FROM source_line s "
        "JOIN _wanted w USING (source_file, line) GROUP BY ALL"
    ).fetchall()
    con.unregister("_wanted")
    text = {(file, line): t for file, line, t in found}
    text.update(_lines_of_whole_files(con, wanted - text.keys(), deferred))
    return text


def _lines_of_whole_files(
    con: duckdb.DuckDBPyConnection, wanted: set[tuple[str, int]], deferred: Deferred | None
) -> dict[tuple[str, int], str]:
    """The text of wanted lines of the files kept whole (``source_text``), as ``source_line`` gives a
    line: its first 1,000 characters."""
    if not wanted:
        return {}
    files = sorted({file for file, _ in wanted})
    marks = ", ".join("?" for _ in files)
    kept = con.execute(
        f"SELECT source_file, first_line, text FROM source_text WHERE source_file IN ({marks})", files
    ).fetchall()
    if deferred is not None:
        kept += deferred.whole_files(set(files))
    out: dict[tuple[str, int], str] = {}
    for file, first, whole in kept:
        lines = whole.splitlines()
        for f, line in wanted:
            no = line - first  # 0-based index of the line in the kept text
            if f == file and 0 <= no < len(lines):
                out.setdefault((f, line), lines[no][:1000])
    return out


def _store(con: duckdb.DuckDBPyConnection, findings: list[Finding], outcomes: list[Outcome]) -> None:
    import pyarrow as pa

    if findings:
        rows = pa.table(
            {
                "fingerprint": [f.fingerprint for f in findings],
                "rule": [f.rule for f in findings],
                "rule_version": pa.array([f.rule_version for f in findings], pa.int32()),
                "severity": [f.severity.value for f in findings],
                "bundle_id": pa.array([f.bundle_id for f in findings], pa.string()),
                "node": pa.array([f.node for f in findings], pa.string()),
                "gpu": pa.array([f.gpu for f in findings], pa.int32()),
                "message": [f.message for f in findings],
                "params_json": [json.dumps(f.params, default=str) for f in findings],
                "route_owner": [f.route.owner for f in findings],
                "route_target": [f.route.target for f in findings],
                "route_action": [f.route.action for f in findings],
                "evidence_json": [json.dumps([e.as_dict() for e in f.evidence]) for f in findings],
            }
        )
        con.register("_findings", rows)
        con.execute("INSERT INTO findings SELECT * FROM _findings").fetchall()
        con.unregister("_findings")
    if outcomes:
        table = pa.table(
            {
                "rule": [o.rule for o in outcomes],
                "outcome": [o.outcome for o in outcomes],
                "findings": pa.array([o.findings for o in outcomes], pa.int32()),
                "reason": pa.array([o.reason for o in outcomes], pa.string()),
            }
        )
        con.register("_outcomes", table)
        con.execute("INSERT INTO rule_outcome SELECT * FROM _outcomes").fetchall()
        con.unregister("_outcomes")
