"""Full or uneven: one cause, one finding (fs.lustre.full, fs.lustre.ost_imbalance, fs.data.full).

The FSx for Lustre capture is the real workshop ``lfs df -h`` (tests/fixtures/lfs-df/PROVENANCE.md); its
full state is DERIVED from it (derived-fsx-workshop-3ost-full.txt: every OST at 96-97 %).  The uneven
state is the real IML ``lfs df -h`` with one OST edited to 95 %, as in tests/rules/test_fs.py.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.judge.findings import Severity
from tests.rules.helpers import Result, analyze, fixture, write_node

FULL = "fs.lustre.full"
UNEVEN = "fs.lustre.ost_imbalance"
DATA = "fs.data.full"
FSX = "fsx-workshop-mnt-fsx-3ost.txt"
FSX_FULL = "derived-fsx-workshop-3ost-full.txt"
WORKSHOP_DF = "hyperpod-workshop-controller-opt-sagemaker-fsx.txt"


def _run(tmp_path: Path, lfs: str | None, df: str | None = None, nodes: int = 2) -> Result:
    root = tmp_path / "c"
    files = {}
    if lfs is not None:
        files["cmd/lfs-df.txt"] = ("lfs-df", lfs)
    if df is not None:
        files["cmd/df.txt"] = ("df", df)
    for i in range(nodes):
        write_node(root, f"n{i}", files)
    return analyze(root)


def test_a_full_fsx_is_full_not_imbalance(tmp_path: Path) -> None:
    res = _run(tmp_path, fixture("lfs-df", FSX_FULL))
    (f,) = res.of(FULL)
    assert res.of(UNEVEN) == [] and res.outcome(UNEVEN) == "pass"
    assert (f.node, f.severity, f.route.owner) == (None, Severity.WARNING, "filesystem-capacity")
    assert "grow the file system" in f.route.action
    p = f.params
    assert (p["fsname"], p["osts"], p["every_ost_full"], p["full_osts"]) == ("fsx", 3, True, [0, 1, 2])
    assert (p["min_pct"], p["max_pct"], p["total_pct"], p["total_from"]) == (96.0, 97.0, 97.0, "summary")
    assert p["nodes"] == ["n0", "n1"] and p["mountpoints"] == ["/mnt/fsx"]
    assert f.message.startswith("Lustre fsx (/mnt/fsx) is full: all 3 OSTs above 90 %")
    assert "125.8 GiB free" in f.message and "imbalance" not in f.message
    assert [e.line for e in f.evidence] == [7, 3, 4]  # the summary, the fullest OST, the emptiest


def test_uneven_osts_are_imbalance_not_full(tmp_path: Path) -> None:
    edit = {"9.5G      970.8M        8.6G  10%": "9.5G        9.0G        0.5G  95%"}
    res = _run(tmp_path, fixture("lfs-df", "iml-zfsmo-dashed-separator.txt", edit))
    assert res.of(FULL) == [] and res.outcome(FULL) == "pass"
    (f,) = res.of(UNEVEN)
    assert (f.params["spread_pct"], f.params["full_osts"], f.params["total_pct"]) == (86.0, [0], 9.0)
    assert "while the others have room" in f.message


def test_a_volume_above_the_line_with_one_ost_below_is_full(tmp_path: Path) -> None:
    """OSTs at 97, 85 and 97 % and the file system at 93 %: no room to restripe into, so full."""
    edit = {
        "1.0T       52.6G  96% /mnt/fsx[OST:1]": "957.5G     168.9G  85% /mnt/fsx[OST:1]",
        "3.2T      125.8G  97% /mnt/fsx": "3.1T      242.1G  93% /mnt/fsx",
    }
    res = _run(tmp_path, fixture("lfs-df", FSX_FULL, edit))
    (f,) = res.of(FULL)
    assert res.of(UNEVEN) == []
    assert (f.params["every_ost_full"], f.params["full_osts"], f.params["total_pct"]) == (False, [0, 2], 93.0)
    assert "2 of 3 OSTs above 90 %, the file system as a whole too" in f.message


def test_without_a_summary_the_osts_give_the_total(tmp_path: Path) -> None:
    """``lfs df | grep OST`` prints no summary: used / (used + available) of the OSTs stands for it."""
    text = "".join(line for line in fixture("lfs-df", FSX_FULL).splitlines(True) if "OST" in line)
    (f,) = _run(tmp_path, text, nodes=1).of(FULL)
    assert f.params["total_from"] == "osts" and f.params["total_pct"] == 96.3
    assert [e.line for e in f.evidence] == [1, 2]


def test_a_healthy_fsx_is_neither(tmp_path: Path) -> None:
    res = _run(tmp_path, fixture("lfs-df", FSX))
    assert res.outcome(FULL) == "pass" and res.outcome(UNEVEN) == "pass"


def test_df_and_lfs_df_of_one_full_fsx_give_one_finding(tmp_path: Path) -> None:
    """df shows the same Lustre mount at 97 %: fs.lustre.full names it; fs.data.full leaves it out, and
    says it where lfs df is missing."""
    line = "10.1.71.197@tcp:/oyuutbev  1.2T  5.5G  1.2T   1% /fsx"
    full_df = fixture("df", WORKSHOP_DF, {line: "10.1.71.197@tcp:/fsx       3.3T  3.2T  126G  97% /mnt/fsx"})
    both = _run(tmp_path / "both", fixture("lfs-df", FSX_FULL), full_df)
    assert [f.rule for f in both.findings if f.rule in (FULL, UNEVEN, DATA)] == [FULL]
    assert both.of(DATA) == [] and len(both.of(FULL)) == 1
    alone = _run(tmp_path / "alone", None, full_df)
    assert [f.params["mountpoint"] for f in alone.of(DATA)] == ["/mnt/fsx"]
