"""README's table of exit codes is what the CLI does: the same codes as analyzer/errors.py and
``hptriage --help``, and each one got from a run of the kind its row describes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from analyzer import errors
from analyzer.cli import EXIT_CODES_HELP, cli
from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parents[1]
NODES = SAMPLES / "xid-ecc-3node" / "bundle"

#: what README's row of each code says first, and so what the run below that gives it must be
MEANING = {
    0: "analysis done",
    1: "findings at or above `--fail-on`",
    2: "usage error",
    3: "no usable bundle in the input",
    4: "internal error",
    5: "analysis done, but some input given or found was not read",
}


def readme_codes() -> dict[int, str]:
    section = (
        (ROOT / "README.md").read_text(encoding="utf-8").split("### Exit codes", 1)[1].split("\n#", 1)[0]
    )
    return {int(code): meaning for code, meaning in re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M)}


def test_readme_help_and_code_name_the_same_codes() -> None:
    readme = readme_codes()
    declared = {v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}
    in_help = {int(c) for c in re.findall(r"^  (\d+)  ", EXIT_CODES_HELP, re.M)}
    assert set(readme) == declared == in_help == set(MEANING), (
        sorted(readme),
        sorted(declared),
        sorted(in_help),
    )
    for code, words in MEANING.items():
        assert readme[code].startswith(words), (code, readme[code])


def _node(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(NODES / name, dest)
    return dest


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--color", "never"])


def test_each_code_comes_from_the_run_its_row_describes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy, faulty = _node(tmp_path, "p5-node-03"), _node(tmp_path, "p5-node-01")
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really gzip" * 10)
    got = {
        0: _run("analyze", str(faulty)),  # findings, but --fail-on defaults to never
        1: _run("analyze", str(faulty), "--fail-on", "critical"),
        2: _run("analyze", str(healthy), "--fail-on", "sometimes"),
        3: _run("analyze", str(tmp_path / "nothing-here")),
        5: _run("analyze", str(healthy), str(garbage)),
    }
    assert "Concerns found" in got[0].output and "critical" in got[0].output  # a critical finding, exit 0
    assert "'sometimes' is not one of" in got[2].output
    assert "no usable bundle in the input" in got[3].output
    assert str(garbage) in got[5].output

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("planted")

    monkeypatch.setattr("analyzer.judge.rule_catalog.rule_catalog", broken)
    got[4] = CliRunner().invoke(cli, ["rules"])
    assert "internal error: RuntimeError: planted" in got[4].output and "Traceback" not in got[4].output
    assert {code: r.exit_code for code, r in got.items()} == {code: code for code in got}
    assert set(got) == set(readme_codes())
    # README's row 5: "1 takes precedence when --fail-on is met"
    assert _run("analyze", str(faulty), str(garbage), "--fail-on", "critical").exit_code == 1
