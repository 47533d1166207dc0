"""The types the code declares hold: mypy finds nothing in analyzer/, parsers/ and reports/ (with the
settings of pyproject.toml's [tool.mypy]), and every parser module keeps the one parse contract."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import parsers
from parsers._registered import MODULES

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    api = pytest.importorskip(
        "mypy.api", reason="mypy is not installed (scripts/bootstrap.py --test installs it)"
    )
    monkeypatch.chdir(ROOT)  # pyproject.toml's [tool.mypy] and the .mypy_cache beside it
    out, err, status = api.run(["analyzer", "parsers", "reports"])
    assert status == 0, out + err


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
