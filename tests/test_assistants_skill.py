"""hptriage skill: the agent skill folder and zip, their SKILL.md front matter, and the collector they
carry (the package's link to the repository's collector.sh; a built wheel holds its bytes)."""

from __future__ import annotations

import fnmatch
import re
import stat
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.assistants import skill
from analyzer.cli import cli
from analyzer.judge.findings import OWNERS
from tests.conftest import ROOT

#: What a user says that must make an assistant pick the skill (the issue's trigger phrases).
TRIGGERS = ("NCCL", "straggler", "checkpoint", "data loading", "FSx", "Xid", "sick", "cross-AZ")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skill")
    result = CliRunner().invoke(cli, ["skill", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"skill: {out / 'hptriage'}; zip: {out / 'hptriage.zip'}" in result.output
    return out


def test_packaged_collector_is_the_repository_collector() -> None:
    packaged = ROOT / "analyzer" / "assistants" / "skill" / "scripts" / "collector.sh"
    assert packaged.read_bytes() == (ROOT / "collector.sh").read_bytes(), (
        "the skill's collector is a link to the repository's collector.sh (a wheel carries its bytes):"
        " ln -sf ../../../../collector.sh analyzer/assistants/skill/scripts/collector.sh"
    )
    assert skill.collector_bytes() == (ROOT / "collector.sh").read_bytes()


def test_package_data_ships_the_skill() -> None:
    """pyproject's package-data names every file under analyzer/assistants/skill/, so a wheel has them."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["analyzer.assistants"]
    base = ROOT / "analyzer" / "assistants"
    files = [p.relative_to(base).as_posix() for p in (base / "skill").rglob("*") if p.is_file()]
    assert sorted(files) == sorted(f"skill/{rel}" for rel in skill.FILES)
    for rel in files:
        assert any(fnmatch.fnmatch(rel, pattern) for pattern in patterns), f"{rel} not in package-data"


def test_folder_holds_skill_md_and_the_collector(written: Path) -> None:
    folder = written / "hptriage"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "SKILL.md",
        "scripts/collector.sh",
    ]
    collector = folder / "scripts" / "collector.sh"
    assert collector.read_bytes() == (ROOT / "collector.sh").read_bytes()
    assert collector.stat().st_mode & stat.S_IXUSR
    assert collector.read_text().startswith("#!/usr/bin/env bash")


def test_zip_unpacks_into_a_skills_folder_as_the_same_files(written: Path, tmp_path: Path) -> None:
    skills = tmp_path / ".agents" / "skills"
    with zipfile.ZipFile(written / "hptriage.zip") as zf:
        assert sorted(zf.namelist()) == ["hptriage/SKILL.md", "hptriage/scripts/collector.sh"]
        assert (zf.getinfo("hptriage/scripts/collector.sh").external_attr >> 16) & 0o777 == 0o755
        zf.extractall(skills)
    for rel in skill.FILES:
        assert (skills / "hptriage" / rel).read_bytes() == (written / "hptriage" / rel).read_bytes()


def test_front_matter_follows_the_agent_skills_rules(written: Path) -> None:
    text = (written / "hptriage" / "SKILL.md").read_text(encoding="utf-8")
    meta = skill.front_matter(text)
    assert skill.check_front_matter(meta, "hptriage") == []
    assert meta["name"] == "hptriage" == (written / "hptriage").name
    assert set(meta) <= set(skill.FIELDS)
    description = meta["description"]
    assert 0 < len(description) <= 1024 and "Use when" in description
    for phrase in TRIGGERS:
        assert phrase.lower() in description.lower(), f"trigger {phrase!r} missing from the description"
    assert meta["metadata"]["version"] == __import__("analyzer").__version__
    assert "{{" not in text, "a template placeholder was left in SKILL.md"


def test_front_matter_is_yaml() -> None:
    """A real YAML parser reads the front matter as the skill's own reader does."""
    yaml = pytest.importorskip("yaml")
    text = skill.skill_text()
    block = text.split("---\n", 2)[1]
    assert yaml.safe_load(block) == skill.front_matter(text)


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ({"name": "HPTriage", "description": "x"}, "lowercase"),
        ({"name": "hp--triage", "description": "x"}, "lowercase"),
        ({"name": "-hptriage", "description": "x"}, "lowercase"),
        ({"name": "a" * 65, "description": "x"}, "lowercase"),
        ({"name": "other", "description": "x"}, "folder"),
        ({"name": "hptriage", "description": ""}, "description is missing"),
        ({"name": "hptriage", "description": "x" * 1025}, "at most 1024"),
        ({"name": "hptriage", "description": "x", "version": "1"}, "unknown field"),
        ({"name": "hptriage", "description": "x", "compatibility": "y" * 501}, "at most 500"),
    ],
)
def test_front_matter_check_refuses_what_the_rules_forbid(meta: dict[str, str], problem: str) -> None:
    assert any(problem in p for p in skill.check_front_matter(meta, "hptriage"))


def test_front_matter_reader_refuses_a_file_without_it() -> None:
    with pytest.raises(skill.SkillError, match="no front matter"):
        skill.front_matter("# just a title\n")


def test_workflow_names_real_commands_owners_and_rules(written: Path) -> None:
    text = (written / "hptriage" / "SKILL.md").read_text(encoding="utf-8")
    body = text.split("---\n", 2)[2]
    assert len(body.splitlines()) < 500
    cited = set(re.findall(r"\bhptriage ([a-z]+)\b", body)) - {"analyzes", "reads"}
    assert cited and cited <= set(cli.commands), (
        f"SKILL.md cites unknown commands: {cited - set(cli.commands)}"
    )
    for owner in OWNERS:
        assert f"`{owner}`" in body, f"route owner {owner} missing from SKILL.md"
    for needle in ("--format summary", "srun", "kubectl debug", "aws ssm send-command", "hptriage redact",
                   "--verify", "Read-only policy", "scripts/collector.sh", "finding(fingerprint)"):  # fmt: skip
        assert needle in body, needle
    from analyzer.judge.rule_catalog import rule_catalog
    from analyzer.judge.settings import load_settings

    catalog = {r["rule"]: r for r in rule_catalog(load_settings())}
    for rules in skill.SYMPTOMS.values():
        for rule in rules:
            assert f"`{rule}`: {catalog[rule]['title']}" in body  # titles carry the thresholds in force


def test_no_zip_and_rewriting(tmp_path: Path) -> None:
    """--no-zip writes the folder alone; writing again replaces the skill's files and leaves others."""
    (tmp_path / "hptriage").mkdir()
    (tmp_path / "hptriage" / "NOTES.md").write_text("mine")
    (tmp_path / "hptriage" / "SKILL.md").write_text("old")
    result = CliRunner().invoke(cli, ["skill", "--out", str(tmp_path), "--no-zip"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "hptriage.zip").exists()
    assert (tmp_path / "hptriage" / "NOTES.md").read_text() == "mine"
    assert (
        (tmp_path / "hptriage" / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: hptriage\n")
    )


def test_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "hptriage").write_text("a file")
    result = CliRunner().invoke(cli, ["skill", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "is not a directory" in result.output
