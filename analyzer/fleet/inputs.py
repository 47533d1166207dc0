"""What a fleet ingest reads: the inputs under the paths given, one item each, listed without reading
them (the workers read them).

An item is a file (a node bundle tarball, a foreign input such as an nvidia-bug-report or a sos report
archive, a cluster tarball) or a directory read as one input (an unpacked node bundle, one with a
meta.env; a cluster's ``extra/`` folder; a folder another tool wrote, recognised by its content).  A
``<tarball>.sha256`` travels with its tarball.  The folder an item lies in is the cluster folder its
snapshot is grouped by, as when the folder is analyzed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.intake.safe_read import Limits

CHECKSUM_SUFFIX = ".sha256"
#: How deep below a given folder inputs are looked for (as discovery does).
MAX_DEPTH = 4


@dataclass(frozen=True)
class Item:
    """One input: ``path`` as given below the user's argument, ``folder`` the cluster folder it belongs
    to (its parent; for an ``extra/`` folder, the folder holding it)."""

    path: str
    is_dir: bool
    folder: str
    checksum: str | None = None

    @property
    def name(self) -> str:
        return self.path


@dataclass
class Listing:
    items: list[Item] = field(default_factory=list)
    #: (path, why) of what was not read: no such path, a link inside a folder, a folder too deep
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: (path, why) of loose files beside the bundles that are no input (a README, a notes file):
    #: passed over as analyze passes them over
    ignored: list[tuple[str, str]] = field(default_factory=list)


def list_inputs(paths: list[Path]) -> Listing:
    """Every input under the paths, in a stable order."""
    listing = Listing()
    for path in paths:
        _walk(path, str(path), listing, depth=0)
    return listing


def _walk(path: Path, shown: str, listing: Listing, depth: int) -> None:
    from analyzer.intake import foreign

    if path.is_symlink() and depth > 0:
        listing.skipped.append((shown, "link inside a folder not followed"))
        return
    if not path.exists():
        listing.skipped.append((shown, "no such file or directory"))
        return
    if path.is_file():
        if path.name.endswith(CHECKSUM_SUFFIX) and depth > 0:
            return  # travels with its tarball
        checksum = path.with_name(path.name + CHECKSUM_SUFFIX)
        listing.items.append(
            Item(shown, False, _parent(shown), shown + CHECKSUM_SUFFIX if checksum.is_file() else None)
        )
        return
    if (path / "meta.env").is_file() or (path.name == "extra" and depth == 0):
        listing.items.append(Item(shown, True, _parent(shown)))
        return
    if foreign.detect(path) is not None:
        listing.items.append(Item(shown, True, _parent(shown)))
        return
    if depth >= MAX_DEPTH:
        listing.skipped.append((shown, f"directory more than {MAX_DEPTH} levels deep: not searched"))
        return
    for child in sorted(path.iterdir()):
        child_shown = f"{shown.rstrip('/')}/{child.name}"
        if child.name == "extra" and child.is_dir() and not child.is_symlink():
            listing.items.append(Item(child_shown, True, shown.rstrip("/")))
        elif child.is_dir() or child.is_symlink() or _may_be_input(child):
            _walk(child, child_shown, listing, depth + 1)
        elif not child.name.endswith(CHECKSUM_SUFFIX):
            listing.ignored.append((child_shown, "not a bundle (no directory with meta.env, no .tar.gz)"))


def _may_be_input(path: Path) -> bool:
    """A file that can be an input: a tarball or one another tool wrote (read by content)."""
    from analyzer.intake import foreign
    from analyzer.intake.bundle import is_tarball

    return is_tarball(path) or foreign.detect(path) is not None


def _parent(shown: str) -> str:
    return shown.rstrip("/").rpartition("/")[0]


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
