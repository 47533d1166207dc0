"""What a fleet ingest reads: the inputs under the paths given, one item each, listed without reading
them (the workers read them).

An item is a file (a node bundle tarball, a foreign input such as an nvidia-bug-report or a sos report
archive, a cluster tarball) or a directory read as one input (an unpacked node bundle, one with a
meta.env; a cluster's ``extra/`` folder; a folder another tool wrote, recognised by its content).  A
``<tarball>.sha256`` travels with its tarball.  The folder an item lies in is the cluster folder its
snapshot is grouped by, as when the folder is analyzed.  A digest file (``<tarball>.sha256``, or the
``.md5`` a sos report writes) travels with its tarball and is checked as analyze checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.fleet.read_input import Place
    from analyzer.intake.safe_read import Limits

CHECKSUM_SUFFIX = ".sha256"
#: the digest files producers write beside a tarball, as analyze reads them (analyzer.intake.bundle)
DIGEST_SUFFIXES = (CHECKSUM_SUFFIX, ".md5")
#: How deep below a given folder inputs are looked for (as discovery does).
MAX_DEPTH = 4


@dataclass(frozen=True)
class Item:
    """One input: ``path`` as given below the user's argument, ``folder`` the cluster folder it belongs
    to (the folder it lies in, or the one above holding ``extra/``), ``outer`` the folder above its own
    when it lies alone in a folder below the path given (see :class:`analyzer.fleet.read_input.Place`)."""

    path: str
    is_dir: bool
    folder: str
    checksum: str | None = None
    outer: str | None = None

    def place(self) -> Place:
        from analyzer.fleet.read_input import Place
        from analyzer.intake.bundle import folder_name

        outer = self.outer
        return Place(self.folder, folder_name(self.folder), outer, folder_name(outer) if outer else None)

    @property
    def name(self) -> str:
        return self.path


@dataclass
class Listing:
    items: list[Item] = field(default_factory=list)
    #: (path, why) of what was not read: no such path, a link inside a folder, a folder too deep, a
    #: loose file beside the bundles (a README, a job's log), as analyze names them
    skipped: list[tuple[str, str]] = field(default_factory=list)


def list_inputs(paths: list[Path]) -> Listing:
    """Every input under the paths, in a stable order."""
    listing = Listing()
    for path in paths:
        _walk(path, str(path), listing, depth=0, folder=None, parent=None)
    return listing


def _walk(
    path: Path, shown: str, listing: Listing, depth: int, folder: str | None, parent: tuple[str, Path] | None
) -> None:
    """As discovery walks (analyzer.intake.bundle): a folder holding ``extra/`` is the cluster folder of
    everything below it; otherwise an input belongs to the folder it lies in (given on its own: its
    parent)."""
    from analyzer.intake import foreign
    from analyzer.intake.bundle import loose_file_reason, node_parts

    if path.is_symlink() and depth > 0:
        listing.skipped.append((shown, "link inside a folder not followed"))
        return
    if not path.exists():
        listing.skipped.append((shown, "no such file or directory"))
        return
    holder = folder or (parent[0] if parent is not None else _parent(shown))
    outer = None
    if folder is None and parent is not None and depth >= 2 and _alone(path, parent[1]):
        outer = _parent(parent[0]) or "."
    if path.is_file():
        if _travels(path) and depth > 0:
            return  # travels with its tarball
        digest = next((s for s in DIGEST_SUFFIXES if path.with_name(path.name + s).is_file()), None)
        listing.items.append(Item(shown, False, holder, shown + digest if digest else None, outer))
        return
    if (path / "meta.env").is_file() or foreign.detect(path) is not None or node_parts(path):
        listing.items.append(Item(shown, True, holder, None, outer))  # node_parts: meta.env missing
        return
    if path.name == "extra" and depth == 0:
        listing.items.append(Item(shown, True, _parent(shown)))
        return
    if depth >= MAX_DEPTH:
        listing.skipped.append((shown, f"directory more than {MAX_DEPTH} levels deep: not searched"))
        return
    try:
        children = sorted(path.iterdir())
    except OSError as exc:
        listing.skipped.append((shown, f"directory not readable: {exc.strerror or exc}"))
        return
    here = shown.rstrip("/") or shown
    if folder is None and any(_is_extra(c) for c in children):
        folder = here
    for child in children:
        child_shown = f"{here}/{child.name}"
        if _is_extra(child):
            listing.items.append(Item(child_shown, True, folder or here))
        elif child.is_dir() or child.is_symlink() or _may_be_input(child):
            _walk(child, child_shown, listing, depth + 1, folder, (here, path))
        elif not _travels(child):
            listing.skipped.append((child_shown, loose_file_reason(child)))


def _travels(path: Path) -> bool:
    """A digest file that goes with its tarball: any ``.sha256`` (as before), and a ``.md5`` (sos's)
    beside its tarball, as analyze's discovery tells them (analyzer.intake.bundle)."""
    from analyzer.intake.bundle import _checksum_of_tarball

    return path.name.endswith(CHECKSUM_SUFFIX) or _checksum_of_tarball(path)


def _is_extra(child: Path) -> bool:
    return child.name == "extra" and child.is_dir() and not child.is_symlink()


def _alone(path: Path, directory: Path) -> bool:
    """Whether path is the only input in its directory (loose files may lie beside it)."""
    from analyzer.intake.bundle import is_tarball

    try:
        others = [c for c in directory.iterdir() if c != path]
    except OSError:
        return False
    return not any(c.is_dir() or c.is_symlink() or is_tarball(c) or _may_be_input(c) for c in others)


def _may_be_input(path: Path) -> bool:
    """A file that can be an input: a tarball or one another tool wrote (read by content)."""
    from analyzer.intake import foreign
    from analyzer.intake.bundle import is_tarball

    return is_tarball(path) or foreign.detect(path) is not None


def _parent(shown: str) -> str:
    """The folder a path lies in, as discovery names it."""
    return str(Path(shown).parent)


def read_item(item: Item) -> tuple[bytes | dict[str, bytes], bytes | None]:
    """The item's bytes (a directory: its files by relative name) and its checksum file's text."""
    return read_path(item.path, item.is_dir, item.checksum)


def read_path(
    path: str, is_dir: bool, checksum_path: str | None, limits: Limits | None = None
) -> tuple[bytes | dict[str, bytes], bytes | None]:
    """A file's bytes, or a directory's files by relative name (links not followed), within the caps
    of a bundle (OSError past them), and the checksum file's text."""
    import os

    from analyzer.intake.safe_read import Limits

    limits = limits or Limits()
    checksum = Path(checksum_path).read_bytes()[:4096] if checksum_path else None
    root = Path(path)
    if not is_dir:
        if root.stat().st_size > limits.max_bundle_bytes:
            raise OSError(f"larger than {limits.max_bundle_bytes} bytes")
        return root.read_bytes(), checksum
    files: dict[str, bytes] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not Path(dirpath, d).is_symlink())
        for filename in sorted(filenames):
            full = Path(dirpath, filename)
            if full.is_symlink() or not full.is_file():
                continue
            size = full.stat().st_size
            total += size
            if (
                size > limits.max_file_bytes
                or total > limits.max_bundle_bytes
                or len(files) >= limits.max_members
            ):
                raise OSError(f"{full.relative_to(root)}: past the caps of one bundle")
            files[str(full.relative_to(root))] = full.read_bytes()
    return files, checksum
