"""Make parser rows match their declared columns before they leave the worker."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from parsers._base import Column


class RowTypeError(ValueError):
    """A parser produced a value that does not fit its declared column type."""


def coerce_rows(rows: Iterable[dict[str, Any]], columns: tuple[Column, ...]) -> list[dict[str, Any]]:
    """Return rows with exactly the declared columns, values converted to the declared types.

    >>> from parsers._base import Column
    >>> coerce_rows([{"a": "3", "b": 1}], (Column("a", "int"), Column("c", "str")))
    [{'a': 3, 'c': None}]
    """
    out = []
    for row in rows:
        clean: dict[str, Any] = {}
        for col in columns:
            value = row.get(col.name)
            clean[col.name] = None if value is None else _convert(value, col)
        out.append(clean)
    return out


#: The range of a stored int column (BIGINT): a printed number past it is kept as printed by the parser
#: (its raw or extra column), not as a number.
_INT64 = (-(2**63), 2**63 - 1)


def _convert(value: Any, col: Column) -> Any:
    try:
        if col.type == "str" or col.type == "ts":
            return str(value)
        if col.type == "int":
            if isinstance(value, bool):
                return int(value)
            number = int(value) if not isinstance(value, float) or value.is_integer() else int(round(value))
            return number if _INT64[0] <= number <= _INT64[1] else None
        if col.type == "float":
            return float(value)
        if col.type == "bool":
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "y", "on", "enabled", "active")
            return bool(value)
    except OverflowError:  # 10**400 as a float, inf as an int: no number a column can hold
        return None
    except (TypeError, ValueError) as exc:
        raise RowTypeError(f"column {col.name}: {value!r} is not {col.type}") from exc
    return value
