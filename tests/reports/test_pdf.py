"""The PDF carries every critical finding, paginates sanely and renders."""

from __future__ import annotations

import functools
import importlib
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

_needs_poppler = pytest.mark.skipif(
    shutil.which("pdftotext") is None or shutil.which("pdftoppm") is None,
    reason="poppler-utils (pdftotext, pdftoppm) not installed",
)

PANGO = "apt-get install libpango-1.0-0 libpangoft2-1.0-0"


def weasyprint_problem(importer: Callable[[str], ModuleType] = importlib.import_module) -> str | None:
    """Why WeasyPrint cannot write a PDF here, or None when it renders a one-line page.

    ``import weasyprint`` raises OSError when its native libraries (Pango, via cffi) are missing; a
    library that loads but cannot lay out text fails on the first page instead.
    """
    try:
        weasyprint = importer("weasyprint")
    except ImportError as exc:
        return f"WeasyPrint is not installed ({exc})"
    except OSError as exc:
        return f"WeasyPrint's native libraries are missing ({exc}); install Pango: {PANGO}"
    try:
        pdf = weasyprint.HTML(string="<p>hptriage</p>").write_pdf()
    except Exception as exc:  # noqa: BLE001 - any failure of the native stack means no PDF
        return (
            f"WeasyPrint cannot render a one-line page ({type(exc).__name__}: {exc}); install Pango: {PANGO}"
        )
    if not pdf or not pdf.startswith(b"%PDF"):
        return "WeasyPrint rendered a one-line page but wrote no PDF"
    return None


@functools.lru_cache(maxsize=1)
def _problem_here() -> str | None:
    return weasyprint_problem()


@pytest.fixture
def weasyprint_works() -> None:
    if problem := _problem_here():
        pytest.skip(problem)


def needs_pdf(test: Callable[..., None]) -> Callable[..., None]:
    """A test that reads a PDF: skipped, with the reason, without poppler-utils or a working WeasyPrint."""
    return _needs_poppler(pytest.mark.usefixtures("weasyprint_works")(test))


def _pdf(rendered: dict[str, Path]) -> Path:
    if not rendered["pdf"].exists():
        pytest.skip("WeasyPrint/Pango not available: no PDF was written")
    return rendered["pdf"]


@needs_pdf
def test_every_critical_finding_is_in_the_text(rendered: dict[str, Path], findings: list[dict]) -> None:
    text = subprocess.run(
        ["pdftotext", "-layout", str(_pdf(rendered)), "-"], capture_output=True, text=True
    ).stdout
    flat = re.sub(r"\s+", " ", text)
    critical = [f for f in findings if f["severity"] == "critical"]
    assert critical
    for f in critical:
        assert re.sub(r"\s+", " ", f["message"]) in flat, f["message"]
    assert "page 1 of" in flat


@needs_pdf
def test_page_count_and_first_page_renders(rendered: dict[str, Path]) -> None:
    pdf = _pdf(rendered)
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    # 11 pages before the checks moved to the appendix and the uniform grids became lines; the cluster
    # timeline added a page of its own (the findings-by-rule table is for the screen only: on paper each
    # rule's group heads its findings with the same counts)
    assert 1 <= pages <= BEFORE - 2 + TIMELINE_PAGES, pages
    prefix = rendered["dir"] / "page"
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "1", str(pdf), str(prefix)], check=True)
    png = next(rendered["dir"].glob("page*.png"))
    assert png.stat().st_size > 5_000


#: Pages of the xid-ecc-3node PDF when the check tables came before the concerns.
BEFORE = 11
#: The cluster timeline's page.
TIMELINE_PAGES = 1


@needs_pdf
def test_first_page_shows_the_verdict_and_the_first_concern(
    rendered: dict[str, Path], findings: list[dict]
) -> None:
    pdf = _pdf(rendered)
    page1 = subprocess.run(
        ["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"], capture_output=True, text=True
    ).stdout
    flat = re.sub(r"\s+", " ", page1)
    assert "Verdict" in flat and "Concerns found." in flat
    assert "C. GPU and host health" in flat and "p5-node-01 (2 critical, 1 warning)" in flat
    # the first concern of the first section, as a card: its message and its route
    first = next(f for f in findings if f["severity"] == "critical" and f["rule"] == "gpu.xid")
    assert re.sub(r"\s+", " ", first["message"]) in flat
    assert f"→ {first['route']['owner']}: {first['route']['action'][:40]}" in flat
    assert "Checks:" not in flat.split("C. GPU and host health")[0], "no check detail before the concerns"


@needs_pdf
def test_letter_paper(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli
    from tests.conftest import SAMPLES

    pdf = tmp_path / "r.pdf"
    bundle = SAMPLES / "xid-ecc-3node" / "bundle" / "p5-node-01"
    result = CliRunner().invoke(cli, ["analyze", str(bundle), "--pdf", str(pdf), "--paper", "letter", "-q"])
    if result.exit_code == 2 and "Pango" in result.output:
        pytest.skip("WeasyPrint/Pango not available")
    assert result.exit_code == 0, result.output
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    assert "612 x 792 pts (letter)" in info


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file"),
            "Pango",
        ),
        (ImportError("No module named 'weasyprint'"), "not installed"),
    ],
)
def test_missing_weasyprint_libraries_give_a_reason(error: Exception, says: str) -> None:
    def importer(name: str) -> ModuleType:
        raise error

    reason = weasyprint_problem(importer)
    assert reason and says in reason and str(error) in reason


def test_a_library_that_cannot_render_gives_a_reason() -> None:
    class Broken:
        class HTML:
            def __init__(self, string: str) -> None:
                raise OSError("no font configuration")

    reason = weasyprint_problem(lambda name: Broken)  # type: ignore[arg-type,return-value]
    assert reason and "cannot render a one-line page" in reason and "no font configuration" in reason
