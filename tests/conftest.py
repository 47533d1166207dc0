"""Shared test helpers: fixtures of real outputs and bundle builders."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_bundles"


def fixture_text(kind: str, name: str) -> str:
    return (FIXTURES / kind / name).read_text(encoding="utf-8")


def fixture_files(kind: str) -> list[Path]:
    """The raw outputs of a kind's folder: not its PROVENANCE.md/README.md, nor the expected parses
    (``<name>.json`` beside each, see tests/fixture_pairs.py)."""
    return sorted(
        p
        for p in (FIXTURES / kind).iterdir()
        if p.is_file() and p.name not in ("PROVENANCE.md", "README.md") and p.suffix != ".json"
    )


@pytest.fixture
def sample_cluster(tmp_path: Path) -> Path:
    """A private copy of the 4-node sample cluster bundle (directories)."""
    dest = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", dest)
    return dest


def make_tar(src_dir: Path, dest: Path, arcname: str | None = None) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(src_dir, arcname=arcname or src_dir.name)
    return dest


# --- under CI (.ci/run sets HPTRIAGE_CI=1) a skip is a failure unless declared optional: tests/skips.py

#: modules skipped whole at collection under CI (each fails the session at its end)
_SKIPPED_MODULES: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    from tests import skips

    config.addinivalue_line("markers", skips.MARKER_HELP)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    from tests import skips

    outcome = yield
    skips.failed_under_ci(item, outcome.get_result())


def pytest_collectreport(report: pytest.CollectReport) -> None:
    from tests import skips

    if skips.under_ci() and report.skipped:
        _SKIPPED_MODULES.append(f"{report.nodeid}: {skips.skip_reason(report)}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _SKIPPED_MODULES:
        terminalreporter.write_sep("=", "skipped whole under CI (HPTRIAGE_CI=1): failed", red=True)
        for line in _SKIPPED_MODULES:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _SKIPPED_MODULES and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# --- "tested" means run and asserted: see tests/rule_record.py and tests/rules/test_every_rule_asserted.py

LAST = "test_every_rule_asserted.py"
#: set by pytest_collection_modifyitems: why this session cannot judge every rule, "" when it can
PARTIAL = pytest.StashKey[str]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    from tests import rule_record

    rule_record.current = item.nodeid
    try:
        yield
    finally:
        rule_record.current = None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        from tests import rule_record

        rule_record.settle(report.nodeid, report.passed)


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        items[0].config.stash[PARTIAL] = f"{len(items)} tests deselected"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the every-rule check after every other test, and say whether all rule tests were selected."""
    last = [i for i in items if i.path.name == LAST]
    items[:] = [i for i in items if i.path.name != LAST] + last
    if not last or config.stash.get(PARTIAL, ""):
        return
    rules_dir = ROOT / "tests" / "rules"
    wanted = {p for p in rules_dir.glob("test_*.py") if p.name != LAST}
    missing = sorted(p.name for p in wanted - {i.path for i in items})
    narrowed = [a for a in config.args if "::" in a]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        config.stash[PARTIAL] = f"rule test modules not selected: {shown}"
    elif narrowed:
        config.stash[PARTIAL] = f"single tests selected: {', '.join(narrowed)}"
