"""scripts/regenerate_fixtures.py shows before it writes: by default it prints the diff and writes nothing,
``--write`` writes the named steps only (a parser kind at a time), and it removes no file it did not
write.  Run here on a fixture tree of its own (one uptime capture), not on the repository's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import tests.fixture_pairs as fixture_pairs

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "regenerate_fixtures", ROOT / "scripts" / "regenerate_fixtures.py"
)
regenerate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(regenerate)  # type: ignore[union-attr]

UPTIME = (ROOT / "tests" / "fixtures" / "uptime" / "jc-centos-7.7-uptime-up-16h-no-days.txt").read_text()


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout of one kind's folder: an input without its pair, a pair whose input is gone (as the
    script writes them), and a .json nobody's script wrote."""
    folder = tmp_path / "tests" / "fixtures" / "uptime"
    folder.mkdir(parents=True)
    (folder / "capture.txt").write_text(UPTIME)
    gone = {"command": "hptriage parse tests/fixtures/uptime/gone.txt --kind uptime --format json"}
    (folder / "gone.json").write_text(fixture_pairs.dumps({**gone, "records": [], "issues": []}))
    (folder / "notes.json").write_text('{"kept": "by hand"}\n')
    monkeypatch.setattr(fixture_pairs, "ROOT", tmp_path)
    monkeypatch.setattr(fixture_pairs, "FIXTURES", tmp_path / "tests" / "fixtures")
    monkeypatch.setattr(regenerate, "ROOT", tmp_path)
    return folder


def test_the_default_prints_the_diff_and_writes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.name for p in tree.iterdir())
    assert regenerate.main(["pairs:uptime"]) == 1
    out = capsys.readouterr().out
    assert "--- /dev/null\n+++ b/tests/fixtures/uptime/capture.json\n" in out
    assert (
        '+  "command": "hptriage parse tests/fixtures/uptime/capture.txt --kind uptime --format json",' in out
    )
    assert "stale: tests/fixtures/uptime/gone.json: its input is gone (--write removes it)" in out
    assert "left: tests/fixtures/uptime/notes.json: not written by this script" in out
    assert sorted(p.name for p in tree.iterdir()) == before


def test_write_takes_named_kinds_and_removes_only_its_own_files(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit, match="named kinds only"):
        regenerate.main(["--write", "pairs"])
    with pytest.raises(SystemExit, match="needs the steps"):
        regenerate.main(["--write"])
    with pytest.raises(SystemExit, match="unknown kind"):
        regenerate.main(["--write", "pairs:no-such-kind"])
    assert regenerate.main(["--write", "pairs:uptime"]) == 0
    out = capsys.readouterr().out
    assert "removed tests/fixtures/uptime/gone.json: its input is gone" in out
    assert sorted(p.name for p in tree.iterdir()) == ["capture.json", "capture.txt", "notes.json"]
    written = json.loads((tree / "capture.json").read_text())
    assert written["records"] and written["records"][0]["table"] == "host_uptime"
    # written once, it is what the code writes: nothing left to show but the file it did not write
    assert regenerate.main(["pairs:uptime"]) == 1
    out = capsys.readouterr().out
    assert "+++" not in out and "left: tests/fixtures/uptime/notes.json" in out


def test_a_results_file_is_the_json_it_shows() -> None:
    """The per-scenario layout (one finding or rule outcome a line) reads back as the document."""
    for scenario in regenerate.SCENARIOS:
        text = regenerate.result_path(scenario).read_text(encoding="utf-8")
        doc = json.loads(text)
        assert regenerate.dumps_result(doc) == text
        lines = text.splitlines()
        assert (
            len(lines)
            == len(doc["findings"])
            + len(doc["rules"])
            + len(json.dumps(doc["verdict"], indent=1).splitlines())
            + 6
        )
        assert all(line.startswith('  {"rule": ') for line in lines[2 : 2 + len(doc["findings"])])
