"""Parsers for the raw outputs found in diagnostic bundles, and THE kind registry.

Each kind names one raw format.  The same name is the manifest's ``kind`` column,
the value of ``hptriage parse --kind`` and, with '-' turned into '_', the module
that parses it.  Modules are imported only when a kind is used, so parsing one
small file stays fast.

Every parser module provides what :class:`ParserModule` names, and nothing else is asked of it:

- ``INFO``: a :class:`parsers._base.ParserInfo`;
- ``SCHEMA``: ``{table: (Column, ...)}`` for the tables it produces;
- ``SAMPLE = sample_of(__doc__)``: the short input its doctests use, written once, in its docstring,
  under a ``Sample (...)::`` heading that says where it comes from: the fixture file under
  tests/fixtures/<kind>/ whose lines it copies, or "hand-written" (tests/test_conformance.py checks
  the claim);
- ``parse(text, *, command=None, filename=None) -> ParseResult``: pure, no I/O.  ``command`` is the
  command line that printed the text (the manifest's, or ``hptriage parse --fields``), ``filename`` the
  name the text was found under; a parser whose format leaves something out (a headerless CSV's fields,
  ``df -h`` or ``-H``, a CloudWatch metric's name) takes it from them, the command first; every other
  parser accepts and ignores them;
- ``detect(text) -> int``: 0 when the text is not this kind, else a confidence
  (higher wins) used to recognise files that arrive without a kind.

Callers go through :func:`parse` (or :func:`module_for` for INFO, SCHEMA and SAMPLE).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Mapping
from typing import Protocol, cast

from parsers._base import (
    CollectorError,
    Column,
    NoData,
    ParseError,
    ParseIssue,
    ParseResult,
    ParserFailure,
    ParserInfo,
    long_line,
)

#: The registry, in the order content detection tries them.
KINDS: tuple[str, ...] = (
    "nvidia-smi-q",
    "nvidia-smi-csv",
    "nvidia-smi",
    "nvidia-smi-topo",
    "nvidia-smi-nvlink",
    "dmesg",
    "fi-info",
    "efa-ports",
    "versions",
    "fabricmanager",
    "dcgmi-diag",
    "lspci",
    "cpu-governor",
    "uptime",
    "shm",
    "mounts",
    "df",
    "lfs-df",
    "iostat",
    "nccl-tests",
    "job-log",
    "flight-recorder",
    "nccl-ras",
    "cloudwatch",
    "placement",
    "dcgm-mndiag",
    "sinfo",
)

#: Kinds whose output speaks for the cluster (or names its hosts itself): in a cluster's extra/ folder
#: their rows carry no node.  Any other kind found there is one node's output and is analyzed under the
#: file's name as its node.
CLUSTER_KINDS = frozenset(
    {
        "nccl-tests",
        "job-log",
        "flight-recorder",
        "nccl-ras",
        "cloudwatch",
        "placement",
        "lfs-df",
        "dcgm-mndiag",
    }
)

#: Kinds read as one document rather than by lines (a flight-recorder dump is a pickle, or JSON on one
#: line): the line-length guard of :func:`long_line` does not apply; their parser caps the size itself.
WHOLE_FILE_KINDS = frozenset({"flight-recorder"})

__all__ = [
    "CLUSTER_KINDS",
    "WHOLE_FILE_KINDS",
    "KINDS",
    "CollectorError",
    "NoData",
    "ParseError",
    "ParseIssue",
    "ParseResult",
    "ParserFailure",
    "ParserModule",
    "available_kinds",
    "describe_kind",
    "long_line",
    "detect_kind",
    "module_for",
    "parse",
    "text_of",
]


class ParserModule(Protocol):
    """What every parser module is (mypy holds each registered module to it: parsers/_registered.py)."""

    @property
    def INFO(self) -> ParserInfo: ...

    @property
    def SCHEMA(self) -> Mapping[str, tuple[Column, ...]]: ...

    @property
    def SAMPLE(self) -> str: ...

    def parse(self, text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
        """Rows per table and the issues met; raises a ParserFailure subclass when the whole text fails."""
        ...

    def detect(self, text: str) -> int:
        """0 when the text is not this kind, else a confidence (higher wins)."""
        ...


class UnknownKind(KeyError):
    """A kind name that is not in the registry."""


def module_name(kind: str) -> str:
    return "parsers." + kind.replace("-", "_")


def module_for(kind: str) -> ParserModule:
    """Import and return the parser module of a kind."""
    if kind not in KINDS:
        raise UnknownKind(kind)
    return cast(ParserModule, importlib.import_module(module_name(kind)))


@functools.lru_cache(maxsize=1)
def available_kinds() -> tuple[str, ...]:
    """Kinds whose parser module is present in this installation."""
    found = []
    for kind in KINDS:
        if importlib.util.find_spec(module_name(kind)) is not None:
            found.append(kind)
    return tuple(found)


def detect_kind(text: str) -> str | None:
    """Name the kind of an unlabelled text, or None when no parser claims it.

    A block pasted indented, commented out or quoted (``parsers._text.common_prefix``) is judged
    without that prefix, as the tool printed it.

    >>> detect_kind("    # Filesystem Size Used Avail Use% Mounted on\\n    # /dev/root 2.0G 1.0G 1.0G 50% /\\n")
    'df'
    """
    from parsers._text import clean_head, unprefixed  # here: `import parsers` stays light

    best: tuple[int, str] | None = None
    sample = text[:65536]
    if sample[:1] != "\x80" and clean_head(text).prefix:  # a pickle's bytes (text_of) are not cleaned
        sample = unprefixed(sample)
    for kind in available_kinds():
        score = module_for(kind).detect(sample)
        if score > 0 and (best is None or score > best[0]):
            best = (score, kind)
    return best[1] if best else None


def text_of(data: bytes) -> str:
    """The text a parser is given of a file's bytes: UTF-8 with undecodable bytes replaced, except a
    pickle (a flight-recorder dump), which is handed over byte for byte as Latin-1 (its parser encodes
    it back; parsers/flight_recorder.py never loads it with pickle.load).

    >>> text_of(b"ok \\xff"), text_of(b"\\x80\\x02}q\\x00.")[:3]
    ('ok \\ufffd', '\\x80\\x02}')
    """
    from parsers._base import is_pickle

    return data.decode("latin-1") if is_pickle(data) else data.decode("utf-8", errors="replace")


def parse(kind: str, text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse text as a kind (``command`` and ``filename`` as :class:`ParserModule` says); raises a
    ParserFailure subclass when the whole text fails.

    >>> parse("df", "Filesystem Size Used Avail Use% Mounted on\\n/dev/root 2.0G 1.0G 1.0G 50% /\\n",
    ...       command="df -H").rows("filesystem_usage")[0]["size_bytes"]
    2000000000
    """
    return module_for(kind).parse(text, command=command, filename=filename)


def describe_kind(kind: str) -> str:
    """The ``hptriage parse --list`` entry of a kind: its title and tables, then the facts of its INFO.

    >>> print(describe_kind("mounts"))
    mounts               Mount table (/proc/mounts, mount)  [tables: mount]
        commands: cat /proc/mounts; mount
        versions seen: Linux /proc/mounts; util-linux mount; BSD/macOS mount
    >>> print(describe_kind("nccl-tests").splitlines()[-1])
        not collected by collector.sh: it runs no benchmark ...
    """
    info = module_for(kind).INFO
    lines = [f"{kind:20} {info.title}  [tables: {', '.join(info.tables)}]"]
    lines.append("    commands: " + "; ".join(info.commands))
    if info.versions_seen:
        lines.append("    versions seen: " + "; ".join(info.versions_seen))
    if info.not_collected_because:
        lines.append("    not collected by collector.sh: " + info.not_collected_because)
    return "\n".join(lines)
