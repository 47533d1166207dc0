"""Build the air-gapped install archive: one .tar.gz that installs hptriage where there is no network.

    python3 scripts/offline_bundle.py --out dist/
    python3 scripts/offline_bundle.py --out dist/ --platform manylinux2014_aarch64 --python 3.10 --extras mcp

writes ``DIR/hptriage-offline-<version>-<platform>-py<XY>.tar.gz`` (``...-py<XY>-<extra>-<extra>.tar.gz``
with extras), one folder of the same name holding:

- ``wheels/``: hptriage's own wheel, a binary wheel of every dependency for that platform and CPython
  (``pip download --only-binary=:all: --platform ... --python-version ... --implementation cp``: nothing
  is built from source on the target) and pip's wheel (install.sh needs no ensurepip);
- ``install.sh`` (scripts/offline_install.sh), ``collector.sh``, ``bundle.env`` (what the archive is
  for), ``README.md`` and ``SHA256SUMS`` (of every other file).

On the site: ``tar xzf hptriage-offline-*.tar.gz`` then ``hptriage-offline-*/install.sh PREFIX``.

The platform is a manylinux tag: ``manylinux2014_<arch>`` (glibc 2.17 or newer: Amazon Linux 2 and
2023, Ubuntu 18.04 on, RHEL 7 on; the default, for this machine's architecture) or
``manylinux_2_<N>_<arch>`` (glibc 2.N or newer: newer releases of some packages), arch x86_64 or
aarch64.  The Python is 3.10 or newer (default: the one running this script).

Two things pip does not do for another platform, done here:

- A dependency published as source only cannot be downloaded with ``--only-binary``.  Those in
  ``SOURCE_ONLY`` (pure Python) are built into wheels here with ``pip wheel``, and every wheel of the
  archive is then checked to carry a tag the target accepts (a pure ``py3-none-any`` one for these).
- ``pip download`` evaluates dependency markers (``tomli; python_version < "3.11"``) for the Python
  running it, not for ``--python-version`` (pypa/pip#11010).  The dependency closure is therefore
  walked again from the wheels' own metadata with the target's markers, what is missing is downloaded,
  and names nothing in the closure asks for are left out.

Packages come from whatever index pip is configured to use here; the build needs that index (network),
the install does not.  Needs pip and packaging in the running Python; without them the script runs
itself again with the checkout's ``.venv`` (``python3 scripts/bootstrap.py`` makes it).
"""

from __future__ import annotations

import argparse
import email
import email.message
import hashlib
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SH = ROOT / "scripts" / "offline_install.sh"
COLLECTOR = ROOT / "collector.sh"
#: What the wheel is built from (a copy, so the checkout gets no build/ or egg-info of this build).
SOURCES = ("pyproject.toml", "README.md", "analyzer", "parsers", "reports")
#: Dependencies published on PyPI as a source distribution only; pure Python, built into wheels here.
SOURCE_ONLY = {"python-hostlist": "pure Python; PyPI has its sdist only"}
ARCHES = ("x86_64", "aarch64")
#: Legacy manylinux names and the glibc they stand for (PEP 600).
LEGACY = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
PLATFORM_RE = re.compile(r"^(?:manylinux2014|manylinux_2_(?P<glibc>\d+))_(?P<arch>x86_64|aarch64)$")
MAX_TOP_UPS = 5


class BuildError(Exception):
    """A one-line reason the archive cannot be built."""


def _ensure_tools() -> None:
    """pip and packaging in this interpreter, or run again with the checkout's .venv that has them."""
    if all(importlib.util.find_spec(m) for m in ("pip", "packaging")):
        return
    venv_python = ROOT / ".venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        os.execv(str(venv_python), [str(venv_python), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(
        "offline_bundle: needs pip and packaging in this Python: run python3 scripts/bootstrap.py "
        "(it makes .venv with both) and run this again"
    )


# --- the target ----------------------------------------------------------------------------------


class Target:
    """The platform and CPython an archive is built for."""

    def __init__(self, platform_tag: str, python: str) -> None:
        m = PLATFORM_RE.match(platform_tag)
        if not m:
            raise BuildError(
                f"--platform {platform_tag!r}: give manylinux2014_x86_64, manylinux2014_aarch64 or "
                "manylinux_2_<N>_<arch> (N >= 17, arch x86_64 or aarch64)"
            )
        self.platform = platform_tag
        self.arch = m["arch"]
        self.glibc = int(m["glibc"] or LEGACY["manylinux2014"])
        if self.glibc < 17:
            raise BuildError(
                f"--platform {platform_tag!r}: glibc 2.{self.glibc} is older than hptriage supports (2.17)"
            )
        pm = re.fullmatch(r"3\.(\d+)", python)
        if not pm or int(pm[1]) < 10:
            raise BuildError(f"--python {python!r}: give a CPython version 3.10 or newer, as 3.11")
        self.python = python
        self.minor = int(pm[1])
        self.xy = f"3{self.minor}"

    def platform_tags(self) -> list[str]:
        """Every manylinux tag a machine of this glibc accepts, newest first (as pip lists its own)."""
        tags = []
        for minor in range(self.glibc, 4, -1):
            if self.arch == "aarch64" and minor < 17:
                break  # aarch64 manylinux starts at glibc 2.17
            tags.append(f"manylinux_2_{minor}_{self.arch}")
            tags += [f"{name}_{self.arch}" for name, g in LEGACY.items() if g == minor]
        return tags

    def pip_flags(self) -> list[str]:
        flags = ["--only-binary=:all:", "--implementation", "cp", "--python-version", self.python]
        for tag in self.platform_tags():
            flags += ["--platform", tag]
        return flags

    def markers(self) -> dict[str, str]:
        """The environment markers of the target (PEP 508), for the dependency closure."""
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{self.python}.0",
            "os_name": "posix",
            "platform_machine": self.arch,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Linux",
            "platform_version": "",
            "python_full_version": f"{self.python}.0",
            "python_version": self.python,
            "sys_platform": "linux",
        }

    def accepts(self, wheel: Path) -> bool:
        from packaging.tags import compatible_tags, cpython_tags
        from packaging.utils import parse_wheel_filename

        version = (3, self.minor)
        platforms = self.platform_tags()
        ok = {*cpython_tags(version, platforms=platforms), *compatible_tags(version, platforms=platforms)}
        return bool(parse_wheel_filename(wheel.name)[3] & ok)


def default_platform() -> str:
    machine = platform.machine()
    return f"manylinux2014_{'aarch64' if machine == 'arm64' else machine}"


# --- steps ---------------------------------------------------------------------------------------


def _pip(args: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR")] or lines[-3:]
        raise BuildError(f"{what} failed (pip exit {done.returncode}): {' '.join(errors[:3])}")


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(zf.read(name))


def build_own_wheel(wheels: Path, scratch: Path) -> Path:
    src = scratch / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    _pip(["wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(src)], "building hptriage's wheel")
    return next(wheels.glob("hptriage-*.whl"))


def build_source_only(wheels: Path, requires: list[str]) -> list[str]:
    """Wheels of the SOURCE_ONLY dependencies hptriage requires, built here; their names."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    built = []
    for spec in requires:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        if name in SOURCE_ONLY:
            plain = f"{req.name}{req.specifier}"
            _pip(["wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), plain], f"building {plain}")
            built.append(name)
    return built


def download(wheels: Path, target: Target, requirements: list[str], what: str) -> None:
    _pip(
        [
            "download",
            "--quiet",
            "--progress-bar",
            "off",
            *target.pip_flags(),
            "--dest",
            str(wheels),
            "--find-links",
            str(wheels),
            *requirements,
        ],
        what,
    )


def closure(wheels: Path, root: str, target: Target) -> tuple[dict[str, list[Path]], list[str]]:
    """The wheels the target installs for ``root`` (by name, every version present) and the
    requirements no wheel here satisfies, walking Requires-Dist with the target's markers."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name, parse_wheel_filename

    present: dict[str, list[tuple[Any, Path]]] = {}
    for wheel in wheels.glob("*.whl"):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        present.setdefault(name, []).append((version, wheel))
    env = target.markers()
    needed: dict[str, list[Path]] = {}
    missing: list[str] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(root)]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        fits = [(v, p) for v, p in present.get(name, []) if req.specifier.contains(v, prereleases=True)]
        if not fits:
            missing.append(
                f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}{req.specifier}"
            )
            continue
        needed[name] = [p for _, p in present[name]]
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        for spec in _metadata(max(fits)[1]).get_all("Requires-Dist") or []:
            dep = Requirement(spec)
            extras = ["", *sorted(req.extras)]
            if dep.marker is None or any(dep.marker.evaluate({**env, "extra": e}) for e in extras):
                todo.append(dep)
    return needed, sorted(set(missing))


def collect_wheels(wheels: Path, target: Target, extras: list[str], scratch: Path) -> tuple[str, list[str]]:
    """Fill ``wheels`` for the target; hptriage's version and the dependencies built here."""
    own = build_own_wheel(wheels, scratch)
    meta = _metadata(own)
    version = str(meta["Version"])
    offered = [e for e in meta.get_all("Provides-Extra") or [] if e != "test"]
    unknown = [e for e in extras if e not in offered]
    if unknown:
        raise BuildError(f"--extras {','.join(unknown)}: hptriage offers {', '.join(offered)}")
    built = build_source_only(wheels, meta.get_all("Requires-Dist") or [])
    root = f"hptriage[{','.join(extras)}]=={version}" if extras else f"hptriage=={version}"
    spec = f"{own}[{','.join(extras)}]" if extras else str(own)
    download(
        wheels,
        target,
        [spec, "pip"],
        f"downloading the wheels for {target.platform}, CPython {target.python}",
    )
    for _ in range(MAX_TOP_UPS):
        needed, missing = closure(wheels, root, target)
        if not missing:
            break
        download(
            wheels, target, missing, f"downloading {', '.join(missing)} (needed on CPython {target.python})"
        )
    else:
        raise BuildError(f"still missing after {MAX_TOP_UPS} downloads: {', '.join(missing)}")
    keep = {p for paths in needed.values() for p in paths} | set(wheels.glob("pip-*.whl"))
    for wheel in wheels.iterdir():
        if wheel not in keep:
            wheel.unlink()  # asked for by a marker of this machine's Python only
    wrong = sorted(p.name for p in wheels.iterdir() if not target.accepts(p))
    if wrong:
        raise BuildError(
            f"wheels {target.platform} CPython {target.python} cannot install: {', '.join(wrong)}"
        )
    return version, built


def check_resolves(wheels: Path, target: Target, root: str, scratch: Path) -> None:
    """pip itself resolves the install from the wheels alone, no index, no configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "--disable-pip-version-check",
        "install",
        "--dry-run",
        "--quiet",
        "--ignore-installed",
        "--target",
        str(scratch / "dry-run"),
        "--no-index",
        "--find-links",
        str(wheels),
        *target.pip_flags(),
        root,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        errors = [
            ln for ln in done.stderr.splitlines() if ln.startswith("ERROR")
        ] or done.stderr.splitlines()[-2:]
        raise BuildError(f"the wheels do not resolve without an index: {' '.join(errors)}")


def readme(name: str, target: Target, version: str, extras: list[str], built: list[str], wheels: Path) -> str:
    rows = "\n".join(
        f"| `{p.name}` | {p.stat().st_size / 1e6:.1f} MB |"
        for p in sorted(wheels.iterdir(), key=lambda p: p.name.lower())
    )
    built_note = "".join(
        f"\n`{n}` ({SOURCE_ONLY[n]}) was built into its `py3-none-any` wheel with `pip wheel` when the "
        "archive was made."
        for n in built
    )
    with_extras = f" with the extras {', '.join(extras)}" if extras else ""
    return f"""# {name}

hptriage {version}{with_extras}, for Linux {target.arch} (glibc 2.{target.glibc} or newer, `{target.platform}`)
and CPython {target.python}: its wheel and a binary wheel of every dependency, so nothing is fetched and
nothing is compiled where it is installed.

## Install (no network, no package index)

```sh
tar xzf {name}.tar.gz
{name}/install.sh /opt/hptriage        # any new folder; makes /opt/hptriage/bin/hptriage
/opt/hptriage/bin/hptriage analyze /fsx/hptriage/<date>
```

`install.sh` checks every file against `SHA256SUMS` (and that `wheels/` holds nothing else), then needs
only CPython {target.python} with its `venv` module (`python{target.python}` or `python3` from `PATH`, or
`PYTHON=/path/to/python{target.python}`): pip comes from the archive's own pip wheel, so `ensurepip`
(Debian's `python3-venv`) is not needed. It installs with `pip --no-index`, pip's configuration files
and `PIP_*` variables set aside, and says in one line what is missing when it stops. The folder is a
virtual environment: install where it will stay. Running `install.sh` again on the same folder
replaces that install.

The PDF report (`--pdf`) needs Pango from the operating system (Debian/Ubuntu: `apt-get install
libpango-1.0-0 libpangoft2-1.0-0`; RHEL/Amazon Linux: `dnf install pango`); without it `--pdf` says so
in one line and every other report works.

## Collect

`collector.sh` is the node collector (bash, coreutils, tar and gzip; no network): `sudo bash
collector.sh --out DIR` on every node. `hptriage skill --out DIR` writes the agent skill.

## Contents
{built_note}

| wheel | size |
|---|---|
{rows}
"""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _tarinfo(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if info.isdir() or info.name.endswith(".sh") else 0o644
    return info


def build(out: Path, target: Target, extras: list[str], log: Any = sys.stderr) -> Path:
    """Build the archive into ``out``; its path."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hptriage-offline-") as tmp:
        scratch = Path(tmp)
        stage = scratch / "stage"
        wheels = stage / "wheels"
        wheels.mkdir(parents=True)
        print(f"offline_bundle: wheels for {target.platform}, CPython {target.python}", file=log)
        version, built = collect_wheels(wheels, target, extras, scratch)
        root = f"hptriage[{','.join(extras)}]=={version}" if extras else f"hptriage=={version}"
        check_resolves(wheels, target, root, scratch)
        name = f"hptriage-offline-{version}-{target.platform}-py{target.xy}" + "".join(
            f"-{e}" for e in extras
        )
        shutil.copyfile(INSTALL_SH, stage / "install.sh")
        shutil.copyfile(COLLECTOR, stage / "collector.sh")
        (stage / "bundle.env").write_text(
            f"version={version}\nplatform={target.platform}\narch={target.arch}\nglibc=2.{target.glibc}\n"
            f"python={target.python}\nextras={','.join(extras)}\n"
        )
        (stage / "README.md").write_text(readme(name, target, version, extras, built, wheels))
        wheel_count = len(list(wheels.iterdir()))
        files = sorted(p for p in stage.rglob("*") if p.is_file())
        sums = "".join(f"{_sha256(p)}  {p.relative_to(stage).as_posix()}\n" for p in files)
        (stage / "SHA256SUMS").write_text(sums)
        archive = out / f"{name}.tar.gz"
        partial = out / f".{name}.tar.gz.part"
        with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
            tar.add(stage, arcname=name, filter=_tarinfo)
        partial.replace(archive)
    size = archive.stat().st_size
    print(
        f"offline_bundle: {archive} ({size / 1e6:.1f} MB, {wheel_count} wheels, "
        f"{time.monotonic() - started:.0f} s); sha256 {_sha256(archive)}",
        file=log,
    )
    return archive


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--out", type=Path, required=True, help="folder to write the archive into")
    ap.add_argument(
        "--platform",
        default=default_platform(),
        help="manylinux2014_x86_64, manylinux2014_aarch64 or manylinux_2_<N>_<arch> (default: %(default)s)",
    )
    ap.add_argument(
        "--python",
        default=f"{sys.version_info[0]}.{sys.version_info[1]}",
        help="the CPython version of the site, 3.10 or newer (default: %(default)s)",
    )
    ap.add_argument("--extras", default="", help="optional extras to include, comma-separated (mcp, ray)")
    args = ap.parse_args(argv)
    _ensure_tools()
    extras = sorted({e.strip() for e in args.extras.split(",") if e.strip()})
    try:
        if args.out.exists() and not args.out.is_dir():
            raise BuildError(f"--out {args.out} is not a folder")
        build(args.out, Target(args.platform, args.python), extras)
    except BuildError as exc:
        print(f"offline_bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
