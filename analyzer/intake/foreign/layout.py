"""What every foreign reader writes: node bundles (``meta.env``, ``manifest.tsv``, ``cmd/<file>``) and
cluster-wide ``extra/`` folders under the analysis work directory, so discovery, every parser and every
rule read them unchanged.

A reader describes each node as a :class:`NodeLayout`: the outputs it found (kind, text, the command as
run), the facts for ``meta.env`` (host name, instance id, collection time...), and the kinds it has no
output for, each with why (``absent``).  A kind absent because the input type never carries it is noted
``not carried by <source>`` (:data:`analyzer.judge.coverage.NOT_CARRIED`): the verdict names it as not
examined for that reason.  A kind absent because the tool failed or collection failed is noted with
that error and an exit code when one is known: it is a failed probe, as in our own bundles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.intake.safe_read import Refusal

MANIFEST_HEADER = "path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote"
#: Beside manifest.tsv in a laid-out node: where each output lies in the input (read by read_node)
ORIGINS = "origins.tsv"
ORIGINS_HEADER = "path\torigin\tfirst_line"


@dataclass
class Output:
    """One output found in a foreign input, written as ``cmd/<name>`` with a manifest row."""

    kind: str
    text: str
    command: str = "-"
    #: the file name under cmd/ ('<kind>.txt' when empty); two outputs of one kind need two names
    name: str = ""
    exit_code: str = "0"
    #: what the manifest row's note says; the source type when empty
    note: str = ""
    #: where the text lies in the input, as evidence names it (``report.log.gz``,
    #: ``sosreport-x.tar.xz!sos_commands/kernel/dmesg``); and the line of that file it starts at, so
    #: findings cite the user's own file and line, not the work directory's ``cmd/<name>``
    origin: str = ""
    first_line: int = 1


@dataclass
class Absent:
    """A kind with no output, and why: ``not carried by <source>``, or the error the collection gave."""

    kind: str
    note: str
    exit_code: str = "-"
    command: str = "-"


@dataclass
class NodeLayout:
    """One node of a foreign input, as it will be written."""

    node: str
    source: str  # the input type: 'nvidia-bug-report', 'sos-report', ...
    source_file: str  # the input's own name (the file, or the member of an archive)
    facts: dict[str, str] = field(default_factory=dict)  # meta.env keys beyond node/source
    outputs: list[Output] = field(default_factory=list)
    absent: list[Absent] = field(default_factory=list)

    def has(self, kind: str) -> bool:
        return any(o.kind == kind for o in self.outputs)

    def add(self, output: Output) -> None:
        """Add an output; a second one of its kind gets a name of its own."""
        if not output.name:
            taken = {o.name or f"{o.kind}.txt" for o in self.outputs}
            name, n = f"{output.kind}.txt", 1
            while name in taken:
                n += 1
                name = f"{output.kind}-{n}.txt"
            output.name = name
        self.outputs.append(output)

    def not_carried(self, kinds: tuple[str, ...] | list[str], note: str) -> None:
        """Kinds this input type does not hold (those already found are skipped)."""
        have = {o.kind for o in self.outputs} | {a.kind for a in self.absent}
        self.absent.extend(Absent(k, note) for k in kinds if k not in have)


@dataclass
class Converted:
    """What one foreign input became: node bundles and cluster-wide extra/ folders, or why nothing."""

    nodes: list[Path] = field(default_factory=list)
    #: cluster-wide folders laid out like extra/ (a cluster-level input such as DCGM's mndiag JSON)
    extras: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    reason: str = ""  # why nothing was written (nodes and extras empty)
    #: members of an archive that were not read (unsafe name, link, caps): each an unread input
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def node_dir(self) -> Path | None:
        """The first node bundle written (inputs of one node write one)."""
        return self.nodes[0] if self.nodes else None


def write_node(dest: Path, layout: NodeLayout) -> Path:
    """Write ``layout`` as a node bundle in the new directory ``dest``; return it."""
    dest.mkdir(parents=True)
    (dest / "cmd").mkdir()
    rows = [MANIFEST_HEADER]
    for out in layout.outputs:
        name = out.name or f"{out.kind}.txt"
        data = out.text.encode("utf-8")
        (dest / "cmd" / name).write_bytes(data)
        rows.append(
            f"cmd/{name}\t{out.kind}\t{cell(out.exit_code) or '-'}\t-\t{len(data)}\t-\t"
            f"{cell(out.command) or '-'}\t{cell(out.note or layout.source)}"
        )
    written = {o.kind for o in layout.outputs}
    for absent in layout.absent:
        if absent.kind in written:
            continue
        rows.append(
            f"cmd/{absent.kind}.txt\t{absent.kind}\t{cell(absent.exit_code) or '-'}\t-\t-\t-\t"
            f"{cell(absent.command) or '-'}\t{cell(absent.note)}"
        )
    (dest / "manifest.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    origins = [
        f"cmd/{o.name or o.kind + '.txt'}\t{cell(o.origin)}\t{max(o.first_line, 1)}"
        for o in layout.outputs
        if o.origin
    ]
    if origins:
        (dest / ORIGINS).write_text("\n".join([ORIGINS_HEADER, *origins]) + "\n", encoding="utf-8")
    meta = {
        "bundle_format": "1",
        "node": layout.node,
        "source": layout.source,
        "source_file": layout.source_file,
        **{k: v for k, v in layout.facts.items() if k not in ("bundle_format", "node", "source")},
    }
    (dest / "meta.env").write_text(
        "".join(f"{k}={cell(v)}\n" for k, v in meta.items() if cell(v)), encoding="utf-8"
    )
    return dest


def write_extra(dest: Path, files: dict[str, bytes]) -> Path:
    """Write cluster-wide files as an extra/ folder in the new directory ``dest``; return it."""
    dest.mkdir(parents=True)
    for name, data in files.items():
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "input"
        (dest / safe).write_bytes(data)
    return dest


def cell(value: str) -> str:
    """One line, no tabs: safe in meta.env and manifest.tsv.

    >>> cell("a\\tb\\r\\nc ")
    'a b c'
    """
    return re.sub(r"[\t\r\n]+", " ", value).strip()[:4000]


def converted_from(meta: dict[str, str]) -> str | None:
    """The user's own input a node bundle was converted from (``meta.env`` ``source_file``, which only a
    conversion writes), or None for a bundle the collector wrote.

    >>> converted_from({"source": "nvidia-bug-report", "source_file": "nvidia-bug-report.log.gz"})
    'nvidia-bug-report.log.gz'
    >>> converted_from({"node": "p5-node-01"}) is None
    True
    """
    return (meta.get("source_file") or None) if meta.get("source") else None


#: meta.env keys a conversion fills from the input, as a user would name what was not found
_FACTS = {"collected_at": "collection time", "node": "node name"}


def conversion_problem(name: str, error: str, line: int | None = None, command: str | None = None) -> str:
    """A parse problem of a file the conversion wrote (``meta.env``, ``manifest.tsv``, an output not
    found line for line in the input), said plainly of the user's input: no line of theirs holds it.

    >>> conversion_problem("meta.env", "required key 'collected_at' missing")
    'from the conversion: no collection time found in this input'
    >>> conversion_problem("cmd/versions-table.txt", "line not understood: x", 3, "nvidia-bug-report.sh versions table")
    "from the conversion: line not understood: x (in the 'nvidia-bug-report.sh versions table' output hptriage took from this input, its line 3)"
    """
    if name == "meta.env":
        missing = re.fullmatch(r"required key '(\w+)' missing", error)
        if missing and missing.group(1) in _FACTS:
            return f"from the conversion: no {_FACTS[missing.group(1)]} found in this input"
        return f"from the conversion: {error} (in the node facts hptriage derived from this input)"
    if name == "manifest.tsv":
        return f"from the conversion: {error} (in the list of outputs hptriage found in this input)"
    what = f"the '{command}' output" if command else f"the output {name.rsplit('/', 1)[-1]}"
    at = f", its line {line}" if line else ""
    return f"from the conversion: {error} (in {what} hptriage took from this input{at})"
