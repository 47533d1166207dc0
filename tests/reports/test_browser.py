"""A real browser opens the report from a file URL with the network off: it renders, without console errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (Debian package 'chromium')")
def test_headless_chromium_screenshot_without_console_errors(
    rendered: dict[str, Path], tmp_path: Path
) -> None:
    shot = tmp_path / "shot.png"
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--proxy-server=127.0.0.1:9",  # any network request would fail
        "--proxy-bypass-list=<-loopback>",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,2000",
        f"--screenshot={shot}",
        rendered["html"].resolve().as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    failed_loads = [line for line in done.stderr.splitlines() if "net::ERR" in line]
    assert not failed_loads, failed_loads
