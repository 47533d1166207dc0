"""The PDF carries every critical finding, paginates sanely and renders."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

needs_pdf = pytest.mark.skipif(
    shutil.which("pdftotext") is None or shutil.which("pdftoppm") is None,
    reason="poppler-utils (pdftotext, pdftoppm) not installed",
)


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
    # 11 pages before the checks moved to the appendix and the uniform grids became lines
    assert 1 <= pages <= BEFORE - 2, pages
    prefix = rendered["dir"] / "page"
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "1", str(pdf), str(prefix)], check=True)
    png = next(rendered["dir"].glob("page*.png"))
    assert png.stat().st_size > 5_000


#: Pages of the xid-ecc-3node PDF when the check tables came before the concerns.
BEFORE = 11


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
