"""Which nodes each rule examined: checked (its input was collected and read), or not examined.

A rule names its inputs in ``requires`` (all of them) and ``requires_any`` (at least one), each either a
table (``kernel_event``), a column of one (``node.instance_type``), or the rows of a table with one value
in a column (``probe_answer.family=nvidia-smi``: the nvidia-smi probes' failure answers).  A node has a
table when the table has a row of the node, or when a file of a kind that fills the table was parsed on
the node and that kind declares an empty table an observation (``ParserInfo.empty_means_none``: a clean
kernel log is a checked kernel log); a file that gave no row of the table is otherwise no evidence.  A
node has a column when a row of the node carries a value in it (and the value, where one is named).
Tables filled from cluster-wide exports (nccl-tests logs, CloudWatch: the kinds the collector does not
write) are judged for the cluster, not per node: they are present when they have a row (a row with the
column's value, where one is named), or a parsed file of a kind that declares them empty-means-none.

A rule is skipped when its input exists nowhere; otherwise it runs, and its outcome lists the nodes
it checked and the nodes it could not examine.  A node that was not examined never counts as passing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


#: How a manifest row says its kind is one the input type cannot carry (a foreign input such as an
#: nvidia-bug-report: analyzer.intake.foreign): the kind is not examined on that node, for that reason.
NOT_CARRIED = "not carried by"
#: How a manifest row says a node's collection failed as a whole (an instance a HyperPod issue report
#: names with an error): every kind is a failed probe of that node, with that reason.
COLLECTION_FAILED = "collection failed"
#: How a foreign reader notes a kind its input's own collector skipped or failed, with that collector's
#: reason as printed ("nvidia-bug-report: nvidia-smi not found"): a failed probe of that node, which the
#: verdict names as not examined with that reason.
SKIPPED_BY_COLLECTOR = ("nvidia-bug-report: ",)


@cache
def producers() -> dict[str, frozenset[str]]:
    """table -> the kinds whose parser fills it (from the one kinds registry)."""
    import parsers

    out: dict[str, set[str]] = {}
    for kind in parsers.KINDS:
        for table in parsers.module_for(kind).INFO.tables:
            out.setdefault(table, set()).add(kind)
    return {t: frozenset(k) for t, k in out.items()}


@cache
def empty_is_evidence() -> dict[str, frozenset[str]]:
    """table -> the kinds whose parsed file with no row of it is an observation (``empty_means_none``)."""
    import parsers

    out: dict[str, set[str]] = {}
    for kind in parsers.KINDS:
        for table in parsers.module_for(kind).INFO.empty_means_none:
            out.setdefault(table, set()).add(kind)
    return {t: frozenset(k) for t, k in out.items()}


@cache
def cluster_tables() -> frozenset[str]:
    """Tables judged for the cluster: 'node', and those filled only by kinds the collector never writes."""
    import parsers

    user_kinds = {k for k in parsers.KINDS if parsers.module_for(k).INFO.not_collected_because}
    return frozenset({"node"} | {t for t, kinds in producers().items() if kinds <= user_kinds})


@dataclass(frozen=True)
class Examined:
    checked: list[str]  # nodes whose input was collected and read
    missing: list[str]  # nodes that were not examined
    absent: list[str]  # requirements met nowhere (the rule is skipped when any is listed)


class Coverage:
    """Answers, per rule, which nodes were examined; computed from the store once per requirement."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.nodes = [r[0] for r in con.execute("SELECT DISTINCT node FROM node ORDER BY node").fetchall()]
        self._parsed: dict[str, set[str]] = {}
        for node, kind in con.execute(
            "SELECT DISTINCT node, kind FROM file WHERE status = 'parsed' AND kind IS NOT NULL"
        ).fetchall():
            self._parsed.setdefault(kind, set()).add(node)
        self._memo: dict[str, set[str] | None] = {}

    def nodes_with(self, requirement: str) -> set[str] | None:
        """Nodes that have a requirement; None for a cluster table (judged for the cluster)."""
        if requirement not in self._memo:
            self._memo[requirement] = self._compute(requirement)
        return self._memo[requirement]

    def _compute(self, requirement: str) -> set[str] | None:
        table, where, params = _split(requirement)
        if requirement == "node" or (table in cluster_tables() and table != "node"):
            return None
        found = {
            r[0]
            for r in self.con.execute(
                f'SELECT DISTINCT node FROM "{table}" WHERE node IS NOT NULL AND {where}', params
            ).fetchall()
        }
        if where == "true":  # a whole table: a parsed file of a kind that declares empty a finding
            for kind in empty_is_evidence().get(table, ()):
                found |= self._parsed.get(kind, set())
        return found

    def unowned(self, requirement: str) -> bool:
        """Rows that meet a per-node requirement but name no node: a cluster-level export in extra/ (a
        node list, an instance topology) that a rule maps to nodes itself (it reports them: Context.saw).
        """
        table, where, params = _split(requirement)
        if requirement == "node" or table == "node":
            return False
        sql = f"SELECT 1 FROM \"{table}\" WHERE (node IS NULL OR node = '') AND {where} LIMIT 1"
        return bool(self.con.execute(sql, params).fetchall())

    def cluster_has(self, requirement: str) -> bool:
        """A cluster requirement was read: a row that meets it, or (a whole table) a parsed file of a
        kind that declares it empty-means-none."""
        table, where, params = _split(requirement)
        if where == "true" and any(self._parsed.get(k) for k in empty_is_evidence().get(table, ())):
            return True
        return bool(self.con.execute(f'SELECT 1 FROM "{table}" WHERE {where} LIMIT 1', params).fetchall())

    def examined(self, requires: tuple[str, ...], requires_any: tuple[str, ...]) -> Examined:
        everyone = set(self.nodes)
        absent: list[str] = []
        per_node: set[str] | None = None  # None: no per-node requirement
        for req in requires:
            have = self.nodes_with(req)
            if have is None:
                if req != "node" and not self.cluster_has(req):
                    absent.append(req)
                continue
            if not have and not self.unowned(req):
                absent.append(req)
            per_node = have if per_node is None else per_node & have
        if requires_any:
            union: set[str] = set()
            cluster_any = False
            node_level = False
            for req in requires_any:
                have = self.nodes_with(req)
                if have is None:
                    cluster_any = cluster_any or self.cluster_has(req)
                else:
                    node_level = True
                    union |= have
            if not union and not cluster_any and not any(self.unowned(r) for r in requires_any):
                absent.append(" or ".join(requires_any))
            if node_level and not cluster_any:
                per_node = union if per_node is None else per_node & union
        if per_node is None:
            return Examined([], [], absent)
        checked = sorted(per_node & everyone)
        return Examined(checked, sorted(everyone - per_node), absent)


def _split(requirement: str) -> tuple[str, str, list[str]]:
    """A requirement as (table, SQL condition, parameters).

    >>> _split("kernel_event"), _split("node.nproc"), _split("probe_answer.family=nvidia-smi")
    (('kernel_event', 'true', []), ('node', '"nproc" IS NOT NULL', []), ('probe_answer', '"family" = ?', ['nvidia-smi']))
    """
    table, _, column = requirement.partition(".")
    column, _, value = column.partition("=")
    if value:
        return table, f'"{column}" = ?', [value]
    if column:
        return table, f'"{column}" IS NOT NULL', []
    return table, "true", []
