"""A rule's title and pass phrase say the thresholds the analysis judged by: a number a site's --config
can change is read from the thresholds, never written into the text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.judge.rules import load_rules
from analyzer.judge.settings import load_settings
from tests.conftest import SAMPLES


def _threshold_numbers(rule: str) -> set[str]:
    """The rule's numeric thresholds as a title would write them (a fraction also as a percentage)."""
    out: set[str] = set()
    for value in load_settings().section(rule).values():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.add(format(value, "g"))
            if 0 < value < 1:
                out.add(format(value * 100, "g"))
    return out


def test_titles_and_pass_phrases_fill_every_placeholder_and_write_no_threshold() -> None:
    settings = load_settings()
    for module in load_rules(include_plugins=False):
        info = module.RULE
        for raw, filled in ((info.title, info.title_for(settings)), (info.passed, info.passed_for(settings))):
            assert "{" not in filled and "}" not in filled, (info.id, filled)
            written = set(re.findall(r"\d+(?:\.\d+)?", re.sub(r"\{[^}]*\}", "", raw)))
            # "Xid 79" names an event, not a threshold; a number equal to a threshold is one
            assert not written & _threshold_numbers(info.id), (info.id, raw)


def test_a_site_threshold_shows_in_the_titles_of_the_terminal_and_json(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[fs.iowait.high]\niowait_pct = 25\n\n[nccl.pair.outlier]\nbelow_mean_fraction = 0.08\n")
    out = tmp_path / "f.json"
    bundle = SAMPLES / "fsx-saturated" / "bundle"
    result = CliRunner().invoke(
        cli,
        ["analyze", str(bundle), "--config", str(site), "--json", str(out), "--color", "never"],
        env={"COLUMNS": "400"},
        catch_exceptions=False,
    )
    text = click.unstyle(result.stdout)
    # fired on every node: one folded line under the rule's title; not run: listed by title
    assert "CPU iowait above 25 %: 4 findings on 4 node(s)" in text
    assert "Pairwise busbw more than 8 % below the run mean" in text
    assert "CPU iowait above 20 %" not in text and "more than 5 % below" not in text
    titles = {r["rule"]: r["title"] for r in json.loads(out.read_text())["rules"]}
    assert titles["fs.iowait.high"] == "CPU iowait above 25 %"
    assert titles["nccl.pair.outlier"] == "Pairwise busbw more than 8 % below the run mean"
    assert titles["fs.rootvol.full"] == "Root volume above 80 % used"  # not overridden: the default
