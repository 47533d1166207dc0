"""collector.sh writes only kinds of the registry, and every kind it never writes says why.

A static read of collector.sh (no run): every call of a function that writes a manifest row names its
kind as the second argument, either literally, or as the caller's own kind (``"$kind"``, ``"$2"``), or
through the ``name|kind|command`` spec strings of a loop (``"$k"``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import parsers

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = ROOT / "collector.sh"

#: the functions that write manifest rows; for each, the KIND is the second argument
WRITERS = {"add_row", "finish_probe", "probe", "probe_as", "probe_fn", "skip_probe", "copy_file"}
#: kinds that are not parser kinds: "-" (kept for people) and "" (added files, recognised by content)
NOT_PARSED = {"-", ""}

_FUNC = re.compile(r"^(\w+)\(\)\s*\{")
_SPEC = re.compile(r"\"([a-z0-9-]+)\|([a-z0-9-]+)\|")
#: a writer in command position: first on the line, or after && || ; then do else
_CALL = re.compile(
    r"(?:^\s*|(?:&&|\|\||;|\bthen|\bdo|\belse)\s+)(" + "|".join(sorted(WRITERS)) + r")\s+(?!\(\))"
)


def _logical_lines() -> list[str]:
    """collector.sh without comment lines, continuation lines joined."""
    out: list[str] = []
    pending = ""
    for raw in COLLECTOR.read_text(encoding="utf-8").splitlines():
        if raw.lstrip().startswith("#") and not pending:
            continue
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        out.append(pending + raw)
        pending = ""
    return out


def _functions(lines: list[str]) -> dict[str, list[str]]:
    """name -> body lines of every top-level function (``name() {`` ... a line ``}``)."""
    funcs: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines:
        m = _FUNC.match(line)
        if m and current is None:
            current = m.group(1)
            funcs[current] = []
            if line.rstrip().endswith("}") and line.count("{") == line.count("}"):
                current = None  # one-line function
            continue
        if current is not None:
            if line == "}":
                current = None
            else:
                funcs[current].append(line)
    return funcs


def _calls(line: str) -> list[tuple[str, str]]:
    """(writer, kind argument as the shell sees it) for each writer call in one line."""
    found = []
    for m in _CALL.finditer(line):
        lexer = shlex.shlex(line[m.end() :], posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        first = lexer.get_token()
        kind = lexer.get_token()
        assert first is not None and kind is not None, f"cannot read the arguments of: {line.strip()}"
        found.append((m.group(1), kind))
    return found


def _forwarding_writers(funcs: dict[str, list[str]]) -> set[str]:
    """add_row and every function that passes a kind it was given on to a writer.

    (Functions such as dmesg_probe that call a writer with a literal kind are callers, not writers.)
    """
    return {"add_row"} | {
        name
        for name, body in funcs.items()
        if any(kind.startswith("$") and kind != "$k" for line in body for _, kind in _calls(line))
    }


def collector_kinds() -> set[str]:
    """Every kind collector.sh can write into a manifest (NOT_PARSED included)."""
    lines = _logical_lines()
    funcs = _functions(lines)
    inside = {id(line): name for name, body in funcs.items() for line in body}
    kinds: set[str] = set()
    for line in lines:
        for writer, kind in _calls(line):
            where = inside.get(id(line))
            if kind in ("$kind", "$2"):
                assert where in WRITERS, f"{writer} gets the kind {kind} outside a writer: {line.strip()}"
            elif kind == "$k":
                specs = _SPEC.findall("\n".join(lines))
                assert specs, f"{writer} gets $k but no 'name|kind|command' spec strings were found"
                kinds |= {k for _, k in specs}
            elif kind.startswith("$"):
                raise AssertionError(f"cannot tell the kind {kind!r} of: {line.strip()} (teach this test)")
            else:
                kinds.add(kind)
    return kinds


def test_the_writers_are_known_and_take_the_kind_second() -> None:
    funcs = _functions(_logical_lines())
    assert _forwarding_writers(funcs) == WRITERS, "a new function writes manifest rows: add it to WRITERS"
    assert any('R_KIND+=("$2")' in line for line in funcs["add_row"])
    for name in WRITERS - {"add_row"}:
        body = funcs[name]
        takes_kind = any(re.search(r"\bkind=\$2\b", line) for line in body)
        for line in body:
            for _, kind in _calls(line):
                assert kind == "$2" or (kind == "$kind" and takes_kind), f"{name} forwards {kind!r}"


def test_collector_writes_only_registry_kinds() -> None:
    unknown = collector_kinds() - set(parsers.KINDS) - NOT_PARSED
    assert not unknown, f"collector.sh writes kinds the registry (parsers.KINDS) does not know: {unknown}"


def test_every_kind_is_collected_or_says_why_not() -> None:
    written = collector_kinds()
    for kind in parsers.KINDS:
        reason = parsers.module_for(kind).INFO.not_collected_because
        if kind in written:
            assert reason is None, f"collector.sh writes {kind}, but its INFO says: {reason}"
        else:
            assert reason and reason.strip(), (
                f"collector.sh never writes {kind}: say why in its INFO.not_collected_because"
            )


def test_the_scan_sees_the_known_probes() -> None:
    """A guard on the scan itself: kinds written in each of its ways are found."""
    written = collector_kinds()
    # probe, probe_fn, finish_probe (dmesg, query-gpu), copy_file (topology.conf), spec loop, --add rows
    assert {
        "uptime",
        "efa-ports",
        "dmesg",
        "nvidia-smi-csv",
        "placement",
        "nvidia-smi-topo",
        "-",
        "",
    } <= written


def test_the_doc_probe_table_names_the_collector_kinds() -> None:
    from tests.collector.test_collector import doc_probe_kinds

    documented = set(doc_probe_kinds().values())
    assert documented <= set(parsers.KINDS) | NOT_PARSED, "docs/bundle-format.md names unknown kinds"
    assert documented == collector_kinds() - {""}, "the probe table and collector.sh disagree on kinds"
