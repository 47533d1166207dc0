"""Each parser's schema is written twice: as prose in its docstring's "Schema" section and as ``SCHEMA``.
This test holds the two together, so neither can change alone.

The prose's convention (every parser follows it): the section runs from the ``Schema`` heading to the
``Examples`` heading; a paragraph that starts with a backticked name introduces that table (``gpu`` (one
row per ...)); a column is declared either as a bullet (``- ``a``, ``b`` int — what it is``: every
backticked name before the dash) or inline (``a`` int; ``b``, ``c`` str): a backticked name, or a list of
them, followed by its type.  Text in parentheses explains (values as printed, a tool's own field names)
and declares nothing.  A paragraph naming tables and another parser (``nccl_run``, ``nccl_log_event``:
... as parsers/nccl_tests.py reads them) borrows those tables: their columns must be that parser's, and
its own prose describes them.  For every parser module: every table and column of ``SCHEMA`` is named in
the prose, and every table and column the prose declares is in ``SCHEMA``.
"""

from __future__ import annotations

import inspect
import re
from types import ModuleType

import pytest

import parsers

_NAME = r"``([a-z_][a-z0-9_]*)``"
#: the type words the prose uses after a column (Column types and their spellings in prose)
_TYPES = r"(?:int|str|float|bool|ts|timestamp|string|integer|boolean|double|list)\b"
_INLINE = re.compile(rf"((?:{_NAME}\s*(?:,|,?\s*and|/|or)?\s*)+?)\s*{_TYPES}")
_TABLE = re.compile(rf"^{_NAME}\s*(?:\(|:)")
_BORROWED = re.compile(rf"^((?:{_NAME},?\s*)+):.*?\bparsers/(\w+)\.py\b", re.S)


def _modules() -> list[ModuleType]:
    seen: dict[str, ModuleType] = {}
    for kind in parsers.KINDS:
        module = parsers.module_for(kind)
        seen.setdefault(module.__name__, module)  # type: ignore[arg-type]
    return list(seen.values())


def schema_prose(doc: str) -> str:
    """The docstring's Schema section (between its heading and ``Examples``)."""
    m = re.search(r"^Schema\n-+\n(.*?)^Examples\b", doc, re.S | re.M)
    assert m, "the docstring needs a 'Schema' section before 'Examples'"
    return m.group(1)


def _unparenthesised(text: str) -> str:
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def borrowed(prose: str) -> dict[str, str]:
    """Tables the prose borrows from another parser: table -> that parser's module name."""
    out: dict[str, str] = {}
    for para in re.split(r"\n\s*\n", prose):
        if m := _BORROWED.match(para.strip()):
            out.update(dict.fromkeys(re.findall(_NAME, m.group(1)), "parsers." + m.group(3)))
    return out


def declared(prose: str) -> tuple[set[str], set[str]]:
    """(tables, columns) the prose declares (borrowed tables aside)."""
    tables: set[str] = set()
    columns: set[str] = set()
    for para in re.split(r"\n\s*\n", prose):
        if _BORROWED.match(para.strip()):
            continue
        # bullets: one item per "- " line, its continuation lines indented
        items = re.split(r"\n(?=- )", para.strip())
        head = items[0]
        if not head.startswith("- "):
            m = _TABLE.match(head)
            if m:
                tables.add(m.group(1))
                head = head[m.end() :]
            items = [head, *items[1:]]
        for item in items:
            flat = _unparenthesised(" ".join(item.split()))
            if item.startswith("- "):
                columns.update(re.findall(_NAME, flat.split(" — ")[0]))
            else:
                for m in _INLINE.finditer(flat):
                    columns.update(re.findall(_NAME, m.group(1)))
    return tables, columns


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_schema_prose_and_schema_agree(module: ModuleType) -> None:
    import importlib

    prose = schema_prose(inspect.getdoc(module) or "")
    named = set(re.findall(_NAME, prose))
    lent = borrowed(prose)
    for table, lender in lent.items():
        assert lender != module.__name__, f"{table}: borrowed from itself"
        assert module.SCHEMA[table] == importlib.import_module(lender).SCHEMA[table], (
            f"{table}: the prose says {lender}'s columns, SCHEMA differs"
        )
    schema = {t: cols for t, cols in module.SCHEMA.items() if t not in lent}
    columns = {c.name for cols in schema.values() for c in cols}
    tables, said = declared(prose)
    assert set(schema) - named == set(), "tables of SCHEMA the prose never names"
    assert columns - named == set(), "columns of SCHEMA the prose never names"
    assert tables - set(schema) == set(), "tables the prose declares that SCHEMA lacks"
    assert said - columns == set(), "columns the prose declares that SCHEMA lacks"
