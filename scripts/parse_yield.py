"""What the parsers make of every real fixture: files, rows, values, issues, failures, per kind.

Each ``tests/fixtures/<kind>/<name>.txt|.out`` of a kind in the registry is parsed as ``hptriage parse
FILE --kind KIND`` would (tests/fixture_pairs.py); a *value* is a non-null cell other than the bookkeeping
columns (``line``, ``*_line``, ``raw``, ``source_file``).  Run it before and after a parser change and
compare: a change that generalises a parser raises values and lowers issues without losing files.

    python scripts/parse_yield.py            # a table per kind and the totals
    python scripts/parse_yield.py --json     # the same as JSON (to keep beside a change)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixture_pairs import pair_inputs, parse_as_cli  # noqa: E402

BOOKKEEPING = frozenset({"line", "raw", "source_file", "table"})


def measure() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for kind, path in pair_inputs():
        row = out.setdefault(kind, {"files": 0, "failed": 0, "rows": 0, "values": 0, "issues": 0})
        row["files"] += 1
        try:
            doc: dict[str, Any] = parse_as_cli(kind, path)
        except AssertionError:  # the CLI refused it: not parsed
            row["failed"] += 1
            continue
        row["issues"] += len(doc["issues"])
        row["rows"] += len(doc["records"])
        for record in doc["records"]:
            row["values"] += sum(
                1
                for key, value in record.items()
                if value not in (None, "") and key not in BOOKKEEPING and not key.endswith("_line")
            )
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args()
    data = measure()
    total = {k: sum(r[k] for r in data.values()) for k in ("files", "failed", "rows", "values", "issues")}
    if args.json:
        print(json.dumps({"kinds": data, "total": total}, indent=1))
        return
    print(f"{'kind':22} {'files':>6} {'failed':>6} {'rows':>7} {'values':>8} {'issues':>7}")
    for kind, r in {**data, "TOTAL": total}.items():
        print(f"{kind:22} {r['files']:6} {r['failed']:6} {r['rows']:7} {r['values']:8} {r['issues']:7}")


if __name__ == "__main__":
    main()
