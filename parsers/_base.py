"""The parser contract shared by every module in this package.

A parser is a pure function ``parse(text, *, command=None, filename=None) -> ParseResult``
(``parsers.ParserModule`` says what the keywords are for): no I/O, no global
state, no heavy imports.  A table comes back in one of two shapes, by how many
rows a file gives it: a list of flat, JSON-serialisable dicts (``ParseResult.add``;
the tens of rows of a GPU, a mount, a device, which a parser fills in as it
reads) or, for the long tables of thousands of rows per file, ``Columns``: one
list per column, appended to in place and handed to Arrow as they are, without
a dict per row (``ParseResult.columns``).  ``ParseResult.rows`` gives either as
dicts.  Column types are declared in ``SCHEMA`` with the light ``Column``
records below so that the loader, not the parser, decides how to store them
(DuckDB / Arrow are imported only by the loader).

Error contract:

- empty or whitespace-only input: raise ``NoData`` (the kind is treated as absent);
- text that is a tool's own error message (command not found, driver not loaded):
  raise ``CollectorError`` with that text;
- text in a format the parser does not recognise at all: raise ``ParseError``;
- one bad line among good ones: add a ``ParseIssue`` and carry on.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

Record = dict[str, Any]

#: Column types a parser may declare; the loader maps them to DuckDB types.
COLUMN_TYPES = ("str", "int", "float", "bool", "ts")


class ParserFailure(Exception):
    """Base class of the three ways a whole file can fail to parse."""


class NoData(ParserFailure):
    """The input holds nothing to parse (empty or whitespace only)."""


class CollectorError(ParserFailure):
    """The input is an error message from the tool, not its normal output."""


class ParseError(ParserFailure):
    """The input is not in any format this parser knows."""


@dataclass(frozen=True)
class Column:
    """One column of a table a parser produces."""

    name: str
    type: str
    doc: str = ""

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise ValueError(f"column {self.name}: unknown type {self.type!r}")


@dataclass(frozen=True)
class ParseIssue:
    """A line the parser could not make sense of; the rest still parsed."""

    line_no: int
    line: str
    reason: str

    def as_dict(self) -> Record:
        return {"line_no": self.line_no, "line": self.line, "reason": self.reason}


#: ParseIssues kept per file, and characters of the line kept with each: a file of garbage (or 100,000
#: columns of it) yields a bounded list and a count of the rest.
MAX_ISSUES = 1000
MAX_ISSUE_TEXT = 1000


class Columns:
    """A table held a column at a time: one list per column, all of one length, in the declared order.

    A parser appends to ``data[name]`` (every list, one value each) or calls ``append``; the loader hands
    the lists to Arrow as they are.

    >>> t = Columns(("key", "line"))
    >>> t.append("b", 2); t.append("a", 1)
    >>> len(t), t.rows()
    (2, [{'key': 'b', 'line': 2}, {'key': 'a', 'line': 1}])
    >>> t.sort_by("line"); t.data
    {'key': ['a', 'b'], 'line': [1, 2]}
    """

    __slots__ = ("data",)

    def __init__(self, names: Iterable[str]) -> None:
        self.data: dict[str, list[Any]] = {name: [] for name in names}

    def __len__(self) -> int:
        return len(next(iter(self.data.values()), ()))

    def append(self, *values: Any) -> None:
        """One row, its values in column order."""
        for column, value in zip(self.data.values(), values, strict=True):
            column.append(value)

    def rows(self) -> list[Record]:
        """The table as one dict per row (what ``hptriage parse`` prints; tests read it)."""
        names = tuple(self.data)
        return [dict(zip(names, values, strict=True)) for values in zip(*self.data.values(), strict=True)]

    def sort_by(self, name: str) -> None:
        """Reorder every column by one column's values (stable, as ``list.sort``)."""
        key = self.data[name]
        order = sorted(range(len(key)), key=key.__getitem__)
        if order != list(range(len(key))):
            for values in self.data.values():
                values[:] = [values[i] for i in order]  # in place: a builder may hold the lists


C = TypeVar("C", bound=Columns)


@dataclass
class ParseResult:
    """What a parser returns: rows per table and the issues it met.

    ``tables`` holds the tables built row by row; ``columns`` the long tables built a column at a time,
    each with an empty list of its name in ``tables`` so that the tables keep one order (what ``parse``
    prints) and every table a file gave, empty or not, is named there."""

    tables: dict[str, list[Record]] = field(default_factory=dict)
    columns: dict[str, Columns] = field(default_factory=dict)
    issues: list[ParseIssue] = field(default_factory=list)
    #: ``text.splitlines()`` when the parser made it anyway (a big kernel log): the reader takes the
    #: evidence lines from it instead of splitting the text again; not part of the result's value
    lines: list[str] | None = field(default=None, repr=False, compare=False)
    #: issues past MAX_ISSUES, counted but not kept
    issues_dropped: int = 0

    def add(self, table: str, row: Record) -> None:
        self.tables.setdefault(table, []).append(row)

    def issue(self, line_no: int, line: str, reason: str) -> None:
        """Record a line not understood; past MAX_ISSUES only counted (a file of garbage stays small)."""
        if len(self.issues) >= MAX_ISSUES:
            self.issues_dropped += 1
            return
        self.issues.append(ParseIssue(line_no, line.rstrip("\n")[:MAX_ISSUE_TEXT], reason))

    def column_table(self, table: str, columns: C) -> C:
        """Hold ``table`` as ``columns`` (an empty ``Columns`` the parser then appends to)."""
        self.columns[table] = columns
        self.tables[table] = []
        return columns

    def rows(self, table: str) -> list[Record]:
        if table in self.columns:
            return self.columns[table].rows()
        return self.tables.get(table, [])

    def count(self, table: str) -> int:
        """The rows of ``table`` (without making dicts of a column table)."""
        return len(self.columns[table]) if table in self.columns else len(self.tables.get(table, ()))

    def table_rows(self) -> dict[str, list[Record]]:
        """Every table as rows, in the order the parser named them (column tables made into dicts)."""
        return {name: self.rows(name) for name in self.tables}

    def as_dict(self) -> Record:
        return {
            "tables": {name: self.rows(name) for name in sorted(self.tables)},
            "issues": [i.as_dict() for i in self.issues],
        }


@dataclass(frozen=True)
class ParserInfo:
    """Static facts about a parser module, shown by ``hptriage parse --list`` and docs/bundle-format.md.

    - ``kind``: the registry name (``parsers.KINDS``);
    - ``title``: one line saying what the format is;
    - ``commands``: command lines whose output this parser reads (what a user may feed it; the exact
      command lines collector.sh runs are in the probe table of docs/bundle-format.md);
    - ``tables``: the tables it fills (the keys of the module's ``SCHEMA``);
    - ``versions_seen``: tool versions or layouts its fixtures and tests cover;
    - ``not_collected_because``: ``None`` when collector.sh writes this kind into the manifest, else
      why it never does (where such files come from instead).  A test holds the collector to this;
    - ``empty_means_none``: the tables of which a parsed file with no row is itself an observation
      ("the kernel log holds no event", "no NCCL WARN", "no segment in /dev/shm").  For every other
      table a file that gave it no row is no evidence: a rule judging that table has not examined the
      node (analyzer.judge.coverage).
    """

    kind: str
    title: str
    commands: tuple[str, ...]
    tables: tuple[str, ...]
    versions_seen: tuple[str, ...] = ()
    not_collected_because: str | None = None
    empty_means_none: tuple[str, ...] = ()


_SAMPLE_BLOCK = re.compile(r"^Sample \(.*\)::\n\n((?:    .*\n|[ \t]*\n)+)", re.M)


def sample_of(doc: str | None) -> str:
    """A parser module's ``SAMPLE``: the literal block under the ``Sample (...)::`` heading of its docstring.

    The heading says where the sample comes from (tests/test_conformance.py checks the claim); the
    docstring is the one place the sample is written.  Empty when docstrings are stripped (``-OO``).

    >>> sample_of("Head.\\n\\nSample (hand-written)::\\n\\n    a  b\\n\\n     c\\n\\nMore text.\\n")
    'a  b\\n\\n c\\n'
    """
    m = _SAMPLE_BLOCK.search(doc or "")
    return textwrap.dedent(m.group(1)).strip("\n") + "\n" if m else ""


#: Strings tools print instead of output when they cannot run.
_TOOL_ERRORS = (
    "command not found",
    "No such file or directory",
    "Permission denied",
    "Operation not permitted",
    "NVIDIA-SMI has failed",
    "couldn't communicate with the NVIDIA driver",
    "Unable to determine the device handle",
    "No devices were found",
    "No such device",
    "Failed to initialize NVML",
    "not supported on this system",
    "executable file not found",
    # what nvidia-bug-report.sh says in place of nvidia-smi's output when no NVIDIA driver is loaded
    "GPU Driver not installed?",
    "/proc/driver/nvidia/version does not exist",
    "/proc/driver/nvidia/./version does not exist",
)


#: No tool this project reads prints a line this long; a file that has one is not handed to a parser
#: (a 200 MB single-line file would cost minutes in regexes written for lines).
MAX_LINE_CHARS = 16 * 1024 * 1024


def long_line(text: str, limit: int = MAX_LINE_CHARS) -> tuple[int, int] | None:
    """(line number, length) of the first line longer than ``limit``, else None (scans only big texts).

    >>> long_line("a\\n" + "x" * 10 + "\\nb", limit=5), long_line("short")
    ((2, 10), None)
    """
    if len(text) <= limit:
        return None
    start, no = 0, 1
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > limit:
            return no, stop - start
        if end < 0:
            return None
        start, no = end + 1, no + 1


def is_pickle(data: bytes) -> bool:
    """Bytes that begin as a pickle of protocol 2 to 5 do (PROTO, then the protocol): how a PyTorch
    flight-recorder dump begins (``torch::jit::Pickler`` writes protocol 2).

    >>> is_pickle(b"\\x80\\x02}q\\x00"), is_pickle(b"\\x80abc"), is_pickle(b"{}")
    (True, False, False)
    """
    return len(data) >= 3 and data[0] == 0x80 and 2 <= data[1] <= 5


def require_text(text: str) -> None:
    """Raise NoData for empty input and CollectorError for a tool error message.

    >>> require_text("  \\n")
    Traceback (most recent call last):
    ...
    parsers._base.NoData: empty input
    >>> require_text("nvidia-smi: command not found")
    Traceback (most recent call last):
    ...
    parsers._base.CollectorError: nvidia-smi: command not found
    """
    stripped = text.strip()
    if not stripped:
        raise NoData("empty input")
    if stripped.count("\n", 0, 4096) > 3:  # more than 3 lines: no tool's error message (and no split)
        return
    lines = stripped.splitlines()
    if len(lines) <= 3 and any(err.lower() in stripped.lower() for err in _TOOL_ERRORS):
        raise CollectorError(lines[0][:300])


def long_columns(entity_doc: str) -> list[Column]:
    """The columns of a long table (one row per printed key, ``parsers._text.long_row``), with what
    its entity is.

    >>> [c.name for c in long_columns("the GPU's bus id")]
    ['entity', 'section', 'key', 'value', 'number', 'unit', 'line']
    """
    return [
        Column("entity", "str", entity_doc),
        Column("section", "str", "the section path as printed, levels joined by ' / ' ('' at the top)"),
        Column("key", "str", "the key as printed"),
        Column("value", "str", "the value as printed"),
        Column("number", "float", "the value's number, when it is one number with an optional unit"),
        Column("unit", "str", "the unit printed after that number"),
        Column("line", "int", "the line of the file the key is on"),
    ]
