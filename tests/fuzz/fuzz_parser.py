"""Coverage-guided fuzzing of the parsers with atheris (libFuzzer), outside CI.

    .venv/bin/pip install atheris
    .venv/bin/python tests/fuzz/fuzz_parser.py KIND -max_total_time=600     # one parser, 10 minutes
    scripts/fuzz.sh 600                                                       # every parser in turn

The corpus starts from the kind's real fixtures (tests/fixtures/<kind>/, copied to a temp dir).  An input
passes when the parser returns rows that fit their declared column types, or raises one of the three
ParserFailure exceptions of the error contract; anything else (another exception, a hang past libFuzzer's
-timeout, memory past -rss_limit_mb) is a crash and libFuzzer writes the input to crash-<sha1>.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def target(kind: str):  # type: ignore[no-untyped-def]
    import parsers
    from analyzer.store.tables import rows_to_arrow
    from parsers._base import ParserFailure

    parsers.module_for(kind)  # an unknown kind fails here, before libFuzzer starts

    def one_input(data: bytes) -> None:
        text = data.decode("utf-8", errors="replace")
        try:
            result = parsers.parse(kind, text)
        except ParserFailure:
            return
        for table, rows in result.table_rows().items():
            if rows:
                rows_to_arrow(table, rows)  # every value fits its column (RowTypeError otherwise)

    return one_input


def main() -> None:
    import atheris

    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: fuzz_parser.py KIND [libFuzzer options, e.g. -max_total_time=600]")
    kind, options = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, str(ROOT))
    with atheris.instrument_imports(include=["parsers"]):
        import parsers
        import parsers._base
        import parsers._text

        parsers.module_for(kind)  # the parser module itself, instrumented for coverage feedback
    corpus = Path(tempfile.mkdtemp(prefix=f"fuzz-{kind}-"))
    for path in sorted((ROOT / "tests" / "fixtures" / kind).glob("*")):
        if path.is_file() and path.suffix not in (".md", ".json"):  # not the expected parses
            shutil.copy(path, corpus / path.name)
    try:
        atheris.Setup([sys.argv[0], "-rss_limit_mb=2048", "-timeout=20", *options, str(corpus)], target(kind))
        atheris.Fuzz()
    finally:
        shutil.rmtree(corpus, ignore_errors=True)


if __name__ == "__main__":
    main()
