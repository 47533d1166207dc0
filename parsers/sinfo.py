"""Slurm node states and their reasons from ``sinfo`` and ``sinfo -R``.

Commands whose output it reads (the HyperPod issue report runs both on every Slurm node, into
``sinfo.txt`` and ``sinfo_R.txt``; its older head-node script ``sinfo -R`` into ``sinfo-R.log``)::

    sinfo
    sinfo -R

Sample (lines of tests/fixtures/sinfo/unige-hpc-3909-sinfo-R-gres-gpu.txt)::

    REASON               USER      TIMESTAMP           NODELIST
    issue-5894           root      2025-04-02T16:01:38 cpu242
    gres/gpu GRES core s slurm     2025-04-03T15:48:07 gpu[004-009]

Layouts read: ``sinfo``'s partition view (``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``, one row
per node of each line, the partition's default ``*`` taken off) and ``sinfo -R`` (``REASON USER
TIMESTAMP NODELIST``: Slurm's ``%20E %9u %19H %N``, so a reason longer than 20 characters is cut at 20,
as printed; the columns are read by the header's positions, a reason may hold spaces).  Node lists are
Slurm hostlists, expanded (``gpu[004-009]`` is six nodes).  A state keeps its flags as printed
(``down*``: not responding, ``idle~``: powered off, ``drain$``, ``mix-``...); ``base_state`` is the state
without them.  Prompt and command lines are skipped; a header with no row (no node is unavailable:
``sinfo -R`` prints only its header) parses to no row; a line that is no row is a ParseIssue.

Schema
------
``slurm_node_state`` (one row per node of each line):

- ``line`` int — line of the row
- ``slurm_node`` str — the Slurm node name, one of the line's expanded node list (``node`` is the
  loader's column: the node whose bundle holds the file)
- ``state`` str — as printed (``drain``, ``down*``, ``drng``, ``idle~``), null for ``sinfo -R`` rows
- ``base_state`` str — the state without its flags, lower case (``down``, ``drain``, ``drng``, ``idle``)
- ``unavailable`` bool — a state in which Slurm starts no job on the node: down, drain, drained,
  draining (drng), fail, failing (failg), inval (its registration does not match slurm.conf); true for
  every ``sinfo -R`` row (it lists only such nodes)
- ``reason`` str — ``sinfo -R``'s REASON as printed (cut at 20 characters by Slurm's default format)
- ``user`` str — who set the reason (``root``, ``slurm``, ``(null)``); ``set_at`` str — when, as printed
- ``partition`` str — ``sinfo``'s partition, its default ``*`` taken off
- ``source`` str — ``sinfo`` or ``sinfo -R``
- ``host`` str — launcher tag of the line, else null

Examples
--------
>>> rows = parse(SAMPLE).rows("slurm_node_state")
>>> len(rows), rows[0]["slurm_node"], rows[0]["reason"], rows[-1]["slurm_node"], rows[-1]["reason"]
(7, 'cpu242', 'issue-5894', 'gpu009', 'gres/gpu GRES core s')
>>> r = parse("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\\ngeneral*  up infinite 2  down* c2-gpu-[010,012]\\n")
>>> [(x["slurm_node"], x["state"], x["base_state"], x["unavailable"], x["partition"]) for x in r.rows("slurm_node_state")]
[('c2-gpu-010', 'down*', 'down', True, 'general'), ('c2-gpu-012', 'down*', 'down', True, 'general')]
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="sinfo",
    title="Slurm node states and the reasons nodes are down or drained (sinfo, sinfo -R)",
    commands=("sinfo", "sinfo -R"),
    tables=("slurm_node_state",),
    versions_seen=("Slurm sinfo partition view", "sinfo -R (%20E %9u %19H %N)"),
    not_collected_because=(
        "collector.sh does not run sinfo: it is read from the HyperPod issue report (sinfo.txt, "
        "sinfo_R.txt, sinfo-R.log) and from sinfo output a user puts in a node bundle"
    ),
    empty_means_none=("slurm_node_state",),
)

SCHEMA = {
    "slurm_node_state": (
        Column("line", "int", "line of the row"),
        Column("slurm_node", "str", "Slurm node name (one of the line's expanded node list)"),
        Column("state", "str", "state as printed, with its flags"),
        Column("base_state", "str", "state without flags, lower case"),
        Column("unavailable", "bool", "Slurm starts no job on the node (down, drain, drng, fail, inval)"),
        Column("reason", "str", "sinfo -R REASON as printed (cut at 20 characters by default)"),
        Column("user", "str", "who set the reason"),
        Column("set_at", "str", "when the reason was set, as printed"),
        Column("partition", "str", "partition, its default '*' taken off"),
        Column("source", "str", "sinfo or sinfo -R"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_PARTITION_HEAD = re.compile(r"^\s*PARTITION\s+AVAIL\s+TIMELIMIT\s+NODES\s+STATE\s+NODELIST\s*$")
_REASON_HEAD = re.compile(r"^\s*REASON\s+USER\s+TIMESTAMP\s+NODELIST\s*$")
_PARTITION_ROW = re.compile(
    r"^\s*(?P<partition>\S+)\s+(?P<avail>\S+)\s+(?P<limit>\S+)\s+(?P<nodes>\d+)\s+(?P<state>\S+)"
    r"(?:\s+(?P<nodelist>\S+))?\s*$"
)
#: ``sinfo -R`` alone, or after a shell prompt (``[user@login1 ~]$ sinfo``)
_COMMAND = re.compile(r"(?:^\s*|[#$>]\s+)(?:sudo\s+)?(?:\S*/)?sinfo(?:\s+-{1,2}\S+)*\s*$")
#: sinfo's answer when slurmctld does not answer (``slurm_load_partitions: Unable to contact slurm
#: controller (connect failure)``)
_NO_CONTROLLER = re.compile(r"slurm_load_\w+: |Unable to contact slurm controller")
#: states in which Slurm starts no job on the node (sinfo(1), NODE STATE CODES)
UNAVAILABLE = frozenset({"down", "drain", "drained", "drng", "draining", "fail", "failg", "failing", "inval"})


def detect(text: str) -> int:
    """Confidence that text is sinfo output: its header line."""
    head = clean_lines(text[:4000]).lines
    return 90 if any(_PARTITION_HEAD.match(ln) or _REASON_HEAD.match(ln) for ln in head) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"slurm_node_state": []})
    raw = text.splitlines()
    layout: str | None = None
    columns: tuple[int, int, int] = (0, 0, 0)  # where USER, TIMESTAMP and NODELIST start (sinfo -R)
    for no, line, host in clean_lines(text).numbered():
        if not line.strip() or _COMMAND.search(line):
            continue
        if _PARTITION_HEAD.match(line):
            layout = "sinfo"
            continue
        if _REASON_HEAD.match(line):
            layout = "sinfo -R"
            columns = (line.index("USER"), line.index("TIMESTAMP"), line.index("NODELIST"))
            continue
        rows = _partition_row(line) if layout == "sinfo" else _reason_row(line, columns) if layout else None
        if rows is None:
            result.issue(no, raw[no - 1], f"not a row of {layout or 'sinfo (no header line seen)'}")
            continue
        names, fields = rows
        if layout == "sinfo" and not _limit_read(line):
            result.issue(no, raw[no - 1], "time limit not understood (the row is kept)")
        try:
            nodes = _expand(names)
        except ValueError as exc:
            result.issue(no, raw[no - 1], str(exc))
            nodes = [names]
        for node in nodes:
            row: dict[str, Any] = {c.name: None for c in SCHEMA["slurm_node_state"]}
            row.update(fields, line=no, slurm_node=node, source=layout, host=host)
            result.add("slurm_node_state", row)
    if layout is None:
        if _NO_CONTROLLER.search(text):  # sinfo printed its error alone: the controller did not answer
            raise CollectorError(next(ln.strip() for ln in raw if _NO_CONTROLLER.search(ln))[:300])
        raise ParseError(
            "no sinfo header line ('PARTITION AVAIL TIMELIMIT ...' or 'REASON USER TIMESTAMP NODELIST')"
        )
    return result


def _partition_row(line: str) -> tuple[str, dict[str, Any]] | None:
    m = _PARTITION_ROW.match(line)
    if m is None:
        return None
    if not m["nodelist"]:  # 'consumption  up  infinite  0  n/a': a partition of no node
        return "", {}
    state = m["state"]
    base = re.sub(r"[^a-z]", "", state.lower())
    return m["nodelist"], {
        "state": state,
        "base_state": base,
        "unavailable": base in UNAVAILABLE,
        "partition": m["partition"].rstrip("*"),
    }


#: sinfo's TIMELIMIT: infinite, n/a, or [days-]hours:minutes:seconds and its shorter forms (sinfo(1))
_LIMIT = re.compile(r"(?i:infinite|unlimited|n/a)|(?:\d+-)?\d+(?::\d+){0,2}")


def _limit_read(line: str) -> bool:
    m = _PARTITION_ROW.match(line)
    return m is not None and _LIMIT.fullmatch(m["limit"]) is not None


def _reason_row(line: str, columns: tuple[int, int, int]) -> tuple[str, dict[str, Any]] | None:
    user_at, time_at, nodes_at = columns
    if len(line) <= nodes_at or not line[nodes_at - 1 : nodes_at].isspace() and nodes_at > 0:
        return None
    reason, user, when = line[:user_at].strip(), line[user_at:time_at].strip(), line[time_at:nodes_at].strip()
    names = line[nodes_at:].split()
    if not reason or len(names) != 1:
        return None
    return names[0], {"reason": reason, "user": user or None, "set_at": when or None, "unavailable": True}


def _expand(names: str) -> list[str]:
    """A Slurm hostlist, expanded (python-hostlist); '' for a partition of no node.

    >>> _expand("gpu[013-015,021]"), _expand("c2-gpu-011,c2-node-003"), _expand("")
    (['gpu013', 'gpu014', 'gpu015', 'gpu021'], ['c2-gpu-011', 'c2-node-003'], [])
    """
    if not names:
        return []
    import hostlist

    try:
        return list(hostlist.expand_hostlist(names))
    except hostlist.BadHostlist as exc:
        raise ValueError(f"hostlist {names!r}: {exc}") from exc
