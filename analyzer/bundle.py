"""Find node bundles in the user's inputs: directories, tarballs, and directories of them.

A node bundle is a directory (or a tarball holding one) with a ``meta.env``.  A cluster bundle holds
several node bundles and optionally a top-level ``extra/``.  Cluster tarballs are unpacked safely into
the private work directory; node tarballs are read later as streams by the workers.
"""

from __future__ import annotations

import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.safe_read import Limits, Refusal, extract_tree, safe_member_name

TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")
MAX_DEPTH = 3


@dataclass(frozen=True)
class NodeSource:
    """Where one node bundle lives: a directory or a tarball (node dir inside it)."""

    location: Path
    is_tar: bool
    display: str  # the path as the user would recognise it


@dataclass(frozen=True)
class ExtraSource:
    """A cluster-wide ``extra/`` directory."""

    location: Path
    display: str


@dataclass
class Discovery:
    nodes: list[NodeSource] = field(default_factory=list)
    extras: list[ExtraSource] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, problem)


def is_tarball(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(TAR_SUFFIXES)


def discover(inputs: list[Path], workdir: Path, limits: Limits) -> Discovery:
    """Walk every input and return the node bundles and cluster extras found."""
    found = Discovery()
    for path in inputs:
        _discover(path, str(path), workdir, limits, found, depth=0)
    return found


def _discover(path: Path, display: str, workdir: Path, limits: Limits, found: Discovery, depth: int) -> None:
    if path.is_symlink() and depth > 0:
        found.problems.append((display, "link inside a bundle directory not followed"))
        return
    if path.is_dir():
        if (path / "meta.env").is_file():
            found.nodes.append(NodeSource(path, False, display))
            return
        if depth >= MAX_DEPTH:
            return
        children = sorted(path.iterdir())
        for child in children:
            child_display = f"{display.rstrip('/')}/{child.name}"
            if child.name == "extra" and child.is_dir():
                found.extras.append(ExtraSource(child, child_display))
            elif child.is_dir() or is_tarball(child):
                _discover(child, child_display, workdir, limits, found, depth + 1)
        return
    if is_tarball(path):
        shape = classify_tar(path)
        if shape == "node":
            found.nodes.append(NodeSource(path, True, display))
        elif shape == "cluster":
            dest = workdir / f"cluster-{len(list(workdir.iterdir())):04d}"
            dest.mkdir()
            refusals: list[Refusal] = []
            errors: list[str] = []
            extract_tree(path, dest, limits, refusals, errors)
            for r in refusals:
                found.problems.append((f"{display}!{r.path}", f"member refused: {r.reason}"))
            for e in errors:
                found.problems.append((display, e))
            _discover(dest, display, workdir, limits, found, depth + 1)
            _relabel(found, dest, display)
        else:
            found.problems.append((display, shape))
        return
    if not path.exists():
        found.problems.append((display, "no such file or directory"))
    else:
        found.problems.append((display, "not a bundle: expected a directory or a .tar.gz"))


def _relabel(found: Discovery, dest: Path, display: str) -> None:
    """Show paths inside an unpacked cluster tarball as 'cluster.tar.gz!inner/path'."""
    prefix = str(dest)
    for i, node in enumerate(found.nodes):
        if node.display.startswith(display + "/") and str(node.location).startswith(prefix):
            inner = node.location.relative_to(dest).as_posix()
            found.nodes[i] = NodeSource(node.location, node.is_tar, f"{display}!{inner}")


def classify_tar(path: Path) -> str:
    """'node', 'cluster', or a sentence saying why the tarball is neither.

    Reads member headers only as far as needed (a stream; nothing is extracted).
    """
    tops: set[str] = set()
    bundle_like = False
    try:
        with tarfile.open(path, mode="r|*") as archive:
            for n, info in enumerate(archive):
                name = safe_member_name(info.name)
                if name is None:
                    continue
                parts = name.split("/")
                tops.add(parts[0])
                if parts[-1] == "meta.env" and info.isreg():
                    return "node" if len(parts) <= 2 else "cluster"
                if name.lower().endswith(TAR_SUFFIXES) and info.isreg():
                    return "cluster"
                bundle_like = bundle_like or (
                    len(parts) >= 2 and parts[1] in ("cmd", "manifest.tsv", "files")
                )
                if n > 20000:
                    break
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        if bundle_like and len(tops) == 1:
            return "node"  # damaged before meta.env, but plainly one node's bundle: read what is there
        return f"unreadable archive: {exc or type(exc).__name__}"
    return "no meta.env and no node bundle inside: not a bundle"
