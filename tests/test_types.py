"""The types the code declares hold: every parser module keeps the one parse contract."""

from __future__ import annotations

import inspect

import pytest

import parsers
from parsers._registered import MODULES


def test_the_typed_registry_is_the_registry() -> None:
    """mypy checks parsers/_registered.py's tuple against ParserModule; it must hold every kind, in order."""
    assert tuple(parsers.module_for(kind) for kind in parsers.KINDS) == MODULES


@pytest.mark.parametrize("kind", parsers.KINDS)
def test_parse_takes_command_and_filename_by_keyword(kind: str) -> None:
    params = inspect.signature(parsers.module_for(kind).parse).parameters
    assert [(p.name, p.kind, p.default) for p in params.values()] == [
        ("text", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("command", inspect.Parameter.KEYWORD_ONLY, None),
        ("filename", inspect.Parameter.KEYWORD_ONLY, None),
    ]
    helpers = [name for name in vars(parsers.module_for(kind)) if name.startswith("parse_")]
    assert not helpers, f"{kind}: public parse variants beside parse(): {helpers}"
