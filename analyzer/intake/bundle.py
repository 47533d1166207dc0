"""Find node bundles in the user's inputs: directories, tarballs, and directories of them.

A node bundle is a directory (or a tarball holding one) with a ``meta.env``.  A cluster bundle holds
several node bundles and optionally a top-level ``extra/`` (cluster-wide files: not a bundle, no node).
Cluster tarballs are unpacked safely into the private work directory; node tarballs are read later as
streams by the workers.

Every input is accounted for.  Discovery records, besides the bundles it found:

* ``unread``: inputs (or members of them) that were not read, each with the path as the user gave it
  (``cluster.tar.gz!inner/path`` inside a cluster tarball) and why: a path that does not exist, a file
  or tarball that is no bundle, a directory with no bundle in it, a refused tar member, a link, a loose
  file beside the bundles (a README, a job's log: read only from ``extra/`` or a bundle), a folder too
  deep to search, and a node bundle whose ``meta.env`` is missing (read all the same, see below);
* ``duplicates``: the same file or directory reached twice (the same path, a path inside another
  input, or a byte-identical copy of a tarball); the first one seen is kept;
* ``checksums``: every ``<tarball>.sha256`` beside a tarball (``sha256sum`` format), and the ``.md5``
  sos writes, verified.

A folder (or a node tarball's one top folder) without ``meta.env`` that plainly is one node's bundle (it
holds ``manifest.tsv`` or ``cmd/``, and no bundle below it) is read as a node bundle under its folder's
name, and is also an unread input saying that its ``meta.env`` is missing (what only meta.env says, its
cluster, instance type and collection time, is unknown): the node is never dropped, and the run still
says that something given could not be read.

Every node bundle and ``extra/`` keeps the *folder* it was found in: the cluster folder.  That is the
nearest directory (or cluster tarball) that holds an ``extra/``, else the directory that holds the node
bundle itself (for a node bundle given on its own, its parent).  So ``/fsx/hptriage`` holding the
dated folders ``2026-01-05/`` and ``2026-01-06/`` gives two folders, and a cluster tarball is a folder
of its own (or several, when it holds several such folders).  ``folders`` maps each folder to the name
its cluster goes by when no meta.env names one (:func:`folder_name`).
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.intake import foreign
from analyzer.intake.meta import Meta
from analyzer.intake.records import UnreadInput
from analyzer.intake.safe_read import (
    Limits,
    Refusal,
    extract_tree,
    iter_dir,
    iter_tar,
    open_tar,
    safe_member_name,
)

TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")
CHECKSUM_SUFFIX = ".sha256"
#: the digest files producers write beside a tarball: ours and sha256sum's ``.sha256``, sos's ``.md5``
#: (sos 4.0's default hash, Debian's policy) or ``.sha256`` (Red Hat's); suffix -> (hashlib name, shown as)
DIGEST_SUFFIXES = {CHECKSUM_SUFFIX: ("sha256", "SHA-256"), ".md5": ("md5", "MD5")}
MAX_DEPTH = 3
MAX_META_BYTES = 1024 * 1024
MAX_CHECKSUM_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class NodeSource:
    """Where one node bundle lives: a directory or a tarball (node dir inside it)."""

    location: Path
    is_tar: bool
    display: str  # the path as the user would recognise it
    #: the node name the reader gives this bundle; set by the loader (disambiguated when two different
    #: bundles claim one node); '' lets the reader take it from meta.env
    node_name: str = ""
    #: the cluster folder (or cluster tarball) it was found in, as given; '' when built by hand
    folder: str = ""
    #: also give the bundle's content digest (:func:`content_digest`) from the one read of its files
    digest: bool = False


@dataclass(frozen=True)
class ExtraSource:
    """A cluster-wide ``extra/`` directory."""

    location: Path
    display: str
    #: the cluster folder (or cluster tarball) it belongs to, as given; '' when built by hand
    folder: str = ""
    #: what its files are called in source_file: 'extra', or '<folder>/extra' when several extra/
    #: folders are analyzed together (set by the loader, so two files of one name never collide)
    label: str = "extra"


@dataclass(frozen=True)
class Head:
    """What discovery saw of a node bundle before it is read: meta.env's bytes, the tarball's top dir."""

    meta: bytes | None
    top: str | None = None


@dataclass(frozen=True)
class TarPeek:
    """A tarball's shape ('node', 'cluster', or a sentence saying why neither) and, for a node
    tarball, meta.env and the top-level directory when they were seen."""

    shape: str
    meta: bytes | None = None
    top: str | None = None
    #: for a node tarball without meta.env: the parts of a bundle it holds ('cmd/, manifest.tsv')
    parts: str = ""


@dataclass
class Discovery:
    nodes: list[NodeSource] = field(default_factory=list)
    extras: list[ExtraSource] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, problem)
    unread: list[UnreadInput] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)  # {"path", "same_as"}
    #: (tarball location, {"path", "sha256_file", "status", "expected", "actual", "reason"})
    checksums: list[tuple[Path, dict[str, str | None]]] = field(default_factory=list)
    heads: dict[Path, Head] = field(default_factory=dict)  # node bundle location -> what was seen
    #: cluster folder, as given -> the name its cluster goes by when no meta.env names one
    folders: dict[str, str] = field(default_factory=dict)
    _seen: dict[Path, str] = field(default_factory=dict)  # resolved path -> display of first visit
    _tars_by_size: dict[int, list[tuple[Path, str]]] = field(default_factory=dict)
    _digests: dict[Path, str] = field(default_factory=dict)
    _peeks: dict[Path, TarPeek] = field(default_factory=dict)  # made ahead by _read_ahead
    _checked: set[Path] = field(default_factory=set)  # tarballs whose .sha256 was looked for
    #: loose files and folders not searched, of the input being walked: unread inputs of their own,
    #: or, when the input holds no bundle at all, counted in the one entry that names the input
    _loose: list[UnreadInput] = field(default_factory=list)

    def refuse(self, path: str, reason: str) -> None:
        """An input (or a member of one) that was not read: a parse problem and an unread input."""
        self.problems.append((path, reason))
        self.unread.append(UnreadInput(path, reason))

    def file_digest(self, path: Path, algorithm: str = "sha256") -> str:
        key = path if algorithm == "sha256" else path / f"#{algorithm}"
        if key not in self._digests:
            self._digests[key] = sha256_file(path) if algorithm == "sha256" else digest_file(path, algorithm)
        return self._digests[key]

    def _size(self) -> tuple[int, ...]:
        return (len(self.nodes), len(self.extras), len(self.unread), len(self.duplicates))


def is_tarball(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(TAR_SUFFIXES)


def discover(inputs: list[Path], workdir: Path, limits: Limits) -> Discovery:
    """Walk every input and return the node bundles and cluster extras found, and what was not read.
    A cluster tarball is unpacked under ``workdir`` (created when missing)."""
    workdir.mkdir(parents=True, exist_ok=True)
    found = Discovery()
    given_checksums: list[tuple[Path, str]] = []
    for path in inputs:
        display = str(path)
        if _checksum_of_tarball(path):
            given_checksums.append((path, display))  # e.g. from a shell glob; checked with its tarball
            continue
        before = found._size()
        _discover(path, display, workdir, limits, found, depth=0)
        loose, found._loose = found._loose, []
        if found._size() == before:  # a directory (or cluster tarball) with no bundle in it
            found.refuse(
                display,
                "no bundle in it (no directory with meta.env, no node .tar.gz"
                + (f"; {len(loose)} other file(s) not read)" if loose else "; it is empty)"),
            )
        else:
            found.unread += loose
    for path, display in given_checksums:
        if path.with_name(_digest_suffix(path.name)[0]) not in found._checked:
            found.unread.append(UnreadInput(display, "checksum file whose tarball was not given: not read"))
    return found


def _discover(
    path: Path,
    display: str,
    workdir: Path,
    limits: Limits,
    found: Discovery,
    depth: int,
    folder: str | None = None,
    parent: tuple[str, Path] | None = None,
) -> None:
    """``folder``: the cluster folder everything below belongs to, once one is known; ``parent``: the
    directory being walked (display, path), the folder of a node bundle found directly in it."""
    if path.is_symlink() and depth > 0:
        found.refuse(display, "link inside a bundle directory not followed")
    elif not path.exists():
        found.refuse(display, "no such file or directory")
    elif _seen_before(path, display, found):
        return
    else:
        at = _At(path, display, workdir, limits, found, depth, folder, parent)
        if path.is_dir():
            _discover_dir(at)
        elif is_tarball(path):
            _discover_tarball(at)
        else:
            _discover_file(at)


@dataclass(frozen=True)
class _At:
    """Where discovery stands: the path and how it is shown, the work directory, the limits, what was
    found so far, the depth, the cluster folder known (``folder``) and the directory walked (``parent``)."""

    path: Path
    display: str
    workdir: Path
    limits: Limits
    found: Discovery
    depth: int
    folder: str | None
    parent: tuple[str, Path] | None

    def unpack(
        self,
    ) -> tuple[Path, str, Path, Limits, Discovery, int, str | None, tuple[str, Path] | None]:
        return (self.path, self.display, self.workdir, self.limits, self.found, self.depth, self.folder,
                self.parent)  # fmt: skip


def _discover_dir(at: _At) -> None:
    """A directory: a node bundle (with or without its meta.env), another tool's folder, an extra/
    folder, else a folder whose entries are discovered in turn."""
    path, display, workdir, limits, found, depth, folder, parent = at.unpack()
    if (path / "meta.env").is_file():
        holder = folder or _holder(found, path, parent)
        found.nodes.append(NodeSource(path, False, display, folder=holder))
        found.heads[path] = Head(_read_meta(path, limits))
        return
    kind = foreign.detect(path)
    if kind is not None:  # a folder another tool wrote (the HyperPod issue report's)
        _convert_foreign(kind, path, display, workdir, limits, found, folder, parent, depth)
        return
    if depth == 0 and path.name == "extra":
        found.extras.append(ExtraSource(path, display, folder=_holder(found, path, None)))
        return
    parts = node_parts(path)
    if parts:  # one node's bundle whose meta.env is missing: read, and named
        holder = folder or _holder(found, path, parent)
        found.nodes.append(NodeSource(path, False, display, folder=holder))
        found.heads[path] = Head(None)
        found.unread.append(UnreadInput(display, _meta_missing(parts, path.name)))
        return
    if depth >= MAX_DEPTH:
        found._loose.append(
            UnreadInput(display, f"directory more than {MAX_DEPTH} levels deep: not searched")
        )
        return
    try:
        children = sorted(path.iterdir())
    except OSError as exc:
        found.refuse(display, f"directory not readable: {exc.strerror or exc}")
        return
    if folder is None and any(_is_extra(child) for child in children):
        folder = _folder(found, display)  # it holds extra/: a cluster folder, with all below it
    _read_ahead([c for c in children if is_tarball(c) and not c.is_symlink()], found)
    for child in children:
        child_display = _join(display, child.name)
        if _is_extra(child):
            if not _seen_before(child, child_display, found):
                found.extras.append(ExtraSource(child, child_display, folder=folder or ""))
        elif child.is_dir() or child.is_symlink() or is_tarball(child) or foreign.detect(child) is not None:
            _discover(child, child_display, workdir, limits, found, depth + 1, folder, (display, path))
        elif not _checksum_of_tarball(child):  # a .sha256 / .md5 is checked with its tarball
            found._loose.append(UnreadInput(child_display, loose_file_reason(child)))


def _discover_tarball(at: _At) -> None:
    """A tarball: a node bundle, another tool's archive, a cluster tarball (unpacked and discovered)."""
    path, display, workdir, limits, found, depth, folder, parent = at.unpack()
    _check_checksum(path, display, found, depth)
    if _duplicate_tarball(path, display, found):
        return
    peek = found._peeks.pop(path, None) or peek_tar(path)
    kind = foreign.detect(path) if peek.shape != "node" else None
    if kind is not None:  # a tarball another tool wrote (the EKS log collector's)
        _convert_foreign(kind, path, display, workdir, limits, found, folder, parent, depth)
    elif peek.shape == "node":
        holder = folder or _holder(found, path, parent)
        found.nodes.append(NodeSource(path, True, display, folder=holder))
        found.heads[path] = Head(peek.meta, peek.top)
        if peek.parts:  # one node's bundle whose meta.env is missing: read, and named
            found.unread.append(UnreadInput(display, _meta_missing(peek.parts, peek.top or path.name)))
    elif peek.shape == "cluster":
        dest = workdir / f"cluster-{len(list(workdir.iterdir())):04d}"
        dest.mkdir()
        refusals: list[Refusal] = []
        errors: list[str] = []
        extract_tree(path, dest, limits, refusals, errors)
        for r in refusals:
            found.refuse(f"{display}!{r.path}", f"member refused: {r.reason}")
        for e in errors:
            found.refuse(display, e)
        # a cluster tarball is a folder of its own (or several, each holding an extra/)
        _discover(dest, f"{display}!", workdir, limits, found, depth + 1, None, None)
    else:
        found.refuse(display, peek.shape)


#: tarballs of one folder whose shape and digest are read ahead, by threads (zlib and hashlib work
#: outside the GIL: a folder of 1,024 node tarballs is discovered in about half the time on 2 cores)
READ_AHEAD_FROM = 8


def _read_ahead(tarballs: list[Path], found: Discovery) -> None:
    """The shape (peek_tar) of each tarball and the SHA-256 of each that has a ``.sha256`` beside it,
    made ahead in threads for the walk that follows; its results are the same, taken from here."""
    if len(tarballs) < READ_AHEAD_FROM:
        return
    from concurrent.futures import ThreadPoolExecutor

    summed = [t for t in tarballs if t.with_name(t.name + ".sha256").is_file()]
    workers = min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(workers) as pool:
        peeks = pool.map(peek_tar, tarballs)
        digests = pool.map(_digest_or_none, summed)
        found._peeks.update(zip(tarballs, peeks, strict=True))
        found._digests.update((t, d) for t, d in zip(summed, digests, strict=True) if d is not None)


def _digest_or_none(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None  # said where the walk reads it


def _discover_file(at: _At) -> None:
    """A file that is no tarball: another tool's input, else named with what it looks like."""
    path, display, workdir, limits, found, depth, folder, parent = at.unpack()
    kind = foreign.detect(path)
    if kind is not None:
        _convert_foreign(kind, path, display, workdir, limits, found, folder, parent, depth)
        return
    claimed = foreign.named_like(path)
    if claimed is not None:
        found.refuse(display, f"named like an {claimed} input, but its content is not one")
        return
    kind = content_kind(path)
    found.refuse(
        display,
        "not a bundle (expected a directory or a .tar.gz with meta.env) and no reader of another tool's"
        " input claims it"
        + (
            f"; it looks like {kind} output: put it in a node bundle's cmd/ or a cluster's extra/ folder"
            f" (hptriage parse --kind {kind} reads it alone)"
            if kind
            else ""
        ),
    )


#: What one node's bundle holds besides meta.env (docs/bundle-format.md): a folder holding one of them
#: and no bundle below is a node bundle whose meta.env is missing.
NODE_PARTS = ("manifest.tsv", "cmd/")


def node_parts(path: Path) -> str:
    """The parts of a node bundle a folder without meta.env holds ('cmd/, manifest.tsv'), when it is
    plainly one node's bundle: not an ``extra/`` folder, no bundle below it (then it is a cluster
    folder).  '' otherwise.  (Callers try the readers of other tools' inputs first.)

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "cmd").mkdir(); node_parts(d)
    'cmd/'
    >>> (d / "sub").mkdir(); (d / "sub" / "meta.env").write_text("node=a\\n") and node_parts(d)
    ''
    """
    if path.name == "extra" or (path / "meta.env").exists():
        return ""
    try:
        found = [
            part
            for part in NODE_PARTS
            if not (path / part.rstrip("/")).is_symlink()
            and ((path / part).is_dir() if part.endswith("/") else (path / part).is_file())
        ]
        if not found:
            return ""
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink() and (child / "meta.env").exists():
                return ""
    except OSError:
        return ""
    return ", ".join(found)


def _meta_missing(parts: str, name: str) -> str:
    """Why a node bundle without meta.env is an unread input, though the rest of it is read."""
    return (
        f"no meta.env: read as a node bundle (it holds {parts}) under its folder's name {name!r}; what only"
        " meta.env says (the node's name, cluster, instance type, collection time) is unknown"
    )


#: Bytes of a loose file looked at to say what it holds.
LOOSE_SNIFF_BYTES = 64 * 1024


def loose_file_reason(path: Path) -> str:
    """Why a loose file beside the bundles is not read: it is no bundle, and files are read only inside
    a node bundle or an ``extra/`` folder.  Where a parser recognises its first bytes, the reason says
    which kind it holds and where to put it.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "notes.txt"; _ = f.write_text("rebooted node 3 at noon\\n")
    >>> loose_file_reason(f)
    'loose file beside the bundles, not read: no bundle, and no parser recognises its content (files are read inside a node bundle or a cluster extra/ folder)'
    """
    kind = content_kind(path)
    if kind is None:
        return (
            "loose file beside the bundles, not read: no bundle, and no parser recognises its content"
            " (files are read inside a node bundle or a cluster extra/ folder)"
        )
    return (
        f"loose file beside the bundles, not read: it looks like {kind} output, but lies outside any"
        " bundle and extra/ folder; move it into the cluster's extra/ folder or its node bundle's cmd/"
    )


def content_kind(path: Path) -> str | None:
    """The kind a parser recognises in a file's first bytes (``parsers.detect_kind``), else None."""
    import parsers

    try:
        with open(path, "rb") as fh:
            head = fh.read(LOOSE_SNIFF_BYTES)
    except OSError:
        return None
    text = parsers.text_of(head)
    return parsers.detect_kind(text) if text.strip() else None


def _convert_foreign(
    kind: str,
    path: Path,
    display: str,
    workdir: Path,
    limits: Limits,
    found: Discovery,
    folder: str | None,
    parent: tuple[str, Path] | None,
    depth: int,
) -> None:
    """An input another tool wrote (analyzer.intake.foreign), laid out under workdir as node bundles
    (and extra/ folders for its cluster-wide files).  An input of several nodes (a HyperPod issue
    report) is a cluster folder of its own.  One of one node belongs where it lies; lying alone in a
    folder found below an input (``case/node-a/nvidia-bug-report.log.gz``), that folder is the node's,
    as a node bundle's directory is, and the cluster folder is the one above it."""
    dest = workdir / f"foreign-{len(list(workdir.iterdir())):04d}"
    converted = foreign.convert(kind, path, dest, limits)
    for r in converted.refusals:
        found.refuse(f"{display}!{r.path}", f"member refused: {r.reason}")
    for problem in converted.problems:
        found.problems.append((display, problem))
    if not converted.nodes and not converted.extras:
        found.refuse(display, converted.reason or f"{kind}: nothing hptriage reads in it")
        return
    if folder:
        holder = folder
    elif len(converted.nodes) > 1 or converted.extras:
        holder = _folder(found, display)
    elif parent is not None and depth >= 2 and _alone(path, parent[1]):
        holder = _folder(found, _parent_display(parent[0], parent[1].name))
    else:
        holder = _holder(found, path, parent)
    if len(converted.nodes) == 1:  # its tarball's digest file speaks of that node
        found.checksums = [(converted.nodes[0] if at == path else at, e) for at, e in found.checksums]
    for node_dir in converted.nodes:
        found.nodes.append(
            NodeSource(node_dir, False, _node_display(display, node_dir, converted), folder=holder)
        )
        found.heads[node_dir] = Head(_read_meta(node_dir, limits))
    for extra in converted.extras:
        found.extras.append(ExtraSource(extra, f"{display}!extra", folder=holder))


def _node_display(display: str, node_dir: Path, converted: foreign.Converted) -> str:
    """How one node of a foreign input is named to the user: the input, and for an input of several
    nodes the member it came from (meta.env ``source_file``)."""
    if len(converted.nodes) == 1:
        return display
    try:
        for line in (node_dir / "meta.env").read_text(encoding="utf-8").splitlines():
            if line.startswith("source_file="):
                return f"{display}!{line.partition('=')[2]}"
    except OSError:
        pass
    return f"{display}!{node_dir.name}"


def _alone(path: Path, directory: Path) -> bool:
    """Whether ``path`` is the only node input in ``directory`` (no other bundle, tarball or input
    another tool wrote beside it; loose files may be)."""
    try:
        siblings = [c for c in directory.iterdir() if c != path]
    except OSError:
        return False
    return not any(
        c.is_dir() or c.is_symlink() or is_tarball(c) or foreign.detect(c) is not None for c in siblings
    )


def _parent_display(display: str, name: str) -> str:
    """The display path of the folder holding ``display`` (whose last part is ``name``).

    >>> _parent_display("case/node-a", "node-a"), _parent_display("c.tar.gz!node-a", "node-a")
    ('case', 'c.tar.gz!')
    """
    if display.endswith("!" + name):
        return display[: -len(name)]
    return display.rstrip("/").removesuffix(name).rstrip("/") or "."


def _is_extra(child: Path) -> bool:
    return child.name == "extra" and child.is_dir() and not child.is_symlink()


def _holder(found: Discovery, path: Path, parent: tuple[str, Path] | None) -> str:
    """The folder of a node bundle (or extra/) found outside any folder: the directory it lies in (for
    an input given on its own, its parent)."""
    return _folder(found, parent[0] if parent is not None else str(path.parent))


def _folder(found: Discovery, display: str) -> str:
    """Register a cluster folder (the top of a cluster tarball is shown as the tarball) and return it."""
    shown = display.removesuffix("!") or display
    found.folders.setdefault(shown, folder_name(shown))
    return shown


#: A folder named after its collection day or time (2026-01-05, 20260105T0800Z, 2026-01-05_08-00).
_DATED = re.compile(r"^\d{4}-?\d{2}-?\d{2}(?:[T_ .-]?\d{2}[:.-]?\d{2}(?:[:.-]?\d{2})?Z?)?$")


def folder_name(folder: str) -> str:
    """The name a cluster folder gives its cluster when no meta.env names one: the folder's own name,
    or, for a folder named after its collection day (``/fsx/hptriage/2026-01-05``, the collector's
    layout), the name of the folder above it.  A tarball's name counts without its suffix.

    >>> folder_name("/fsx/hptriage/2026-01-05"), folder_name("/tmp/p5-train"), folder_name("c.tar.gz!c1")
    ('hptriage', 'p5-train', 'c1')
    """
    outer, _, inner = folder.partition("!")
    names = [*Path(os.path.abspath(outer or ".")).parts[1:], *re.split(r"[/!]", inner)]
    for name in reversed(names):
        for suffix in TAR_SUFFIXES:
            name = name.removesuffix(suffix)
        if name and name not in (".", "..") and not _DATED.match(name):
            return name
    return "cluster"


def _join(display: str, name: str) -> str:
    """A child's display path; inside an unpacked cluster tarball: 'cluster.tar.gz!inner/path'."""
    return display + name if display.endswith("!") else f"{display.rstrip('/')}/{name}"


def _seen_before(path: Path, display: str, found: Discovery) -> bool:
    """The same file or directory reached a second time (given twice, or inside another input)."""
    try:
        key = path.resolve()
    except OSError:
        return False
    first = found._seen.get(key)
    if first is not None:
        found.duplicates.append({"path": display, "same_as": first})
        return True
    found._seen[key] = display
    return False


def _duplicate_tarball(path: Path, display: str, found: Discovery) -> bool:
    """A byte-identical copy of a tarball seen before (sizes compared first; hashes only on a tie)."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    same_size = found._tars_by_size.setdefault(size, [])
    for other, other_display in same_size:
        try:
            if found.file_digest(other) == found.file_digest(path):
                found.duplicates.append({"path": display, "same_as": other_display})
                return True
        except OSError:
            continue
    same_size.append((path, display))
    return False


def _read_meta(node_dir: Path, limits: Limits) -> bytes | None:
    """meta.env of a directory bundle, read under the same rules as the reader (no link outside)."""
    meta = node_dir / "meta.env"
    try:
        if meta.is_symlink() and not meta.resolve().is_relative_to(node_dir.resolve()):
            return None
        if meta.stat().st_size > min(MAX_META_BYTES, limits.max_file_bytes):
            return None
        return meta.read_bytes()
    except OSError:
        return None


def node_name(meta: Meta | None, top: str | None, location: Path) -> str:
    """The name a node bundle goes by: meta.env node, else hostname, else the directory's name."""
    from_meta = (meta.get("node") or meta.get("hostname")) if meta is not None else None
    name = from_meta or top or location.name
    for suffix in TAR_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def strip_top(name: str) -> str:
    """Drop the single top-level directory of a node tarball."""
    head, sep, rest = name.partition("/")
    return rest if sep else name


def peek_tar(path: Path) -> TarPeek:
    """The tarball's shape, reading member headers only as far as needed (a stream; nothing is
    extracted).  For a node tarball, meta.env's bytes come along (the collector writes it first)."""
    tops: set[str] = set()
    top: str | None = None
    bundle_like = False
    held: set[str] = set()  # what of a node bundle lies in the top folder (when meta.env is missing)
    try:
        with open_tar(path) as archive:
            for n, info in enumerate(archive):
                name = safe_member_name(info.name)
                if name is None:
                    continue
                parts = name.split("/")
                tops.add(parts[0])
                if top is None and info.isreg() and len(parts) > 1:
                    top = parts[0]
                if parts[-1] == "meta.env" and info.isreg():
                    if len(parts) > 2:
                        return TarPeek("cluster")
                    meta = None
                    if info.size <= MAX_META_BYTES:
                        member = archive.extractfile(info)
                        meta = member.read() if member is not None else None
                    return TarPeek("node", meta, top)
                if name.lower().endswith(TAR_SUFFIXES) and info.isreg():
                    return TarPeek("cluster")
                bundle_like = bundle_like or (
                    len(parts) >= 2 and parts[1] in ("cmd", "manifest.tsv", "files")
                )
                if len(parts) >= 3 and parts[1] == "cmd":
                    held.add("cmd/")
                elif len(parts) == 2 and parts[1] == "manifest.tsv" and info.isreg():
                    held.add("manifest.tsv")
                if n > 20000:
                    break
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        if bundle_like and len(tops) == 1:
            # damaged before meta.env, but plainly one node's bundle: read what is there
            return TarPeek("node", None, top)
        return TarPeek(f"unreadable archive: {exc or type(exc).__name__}")
    if held and len(tops) == 1:  # one node's bundle whose meta.env is missing: read, and named
        return TarPeek("node", None, top, ", ".join(p for p in NODE_PARTS if p in held))
    return TarPeek("no meta.env and no node bundle inside: not a bundle")


# -- checksums -----------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def digest_file(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _digest_suffix(name: str) -> tuple[str, str]:
    """(the tarball's name, the digest file's suffix) of ``x.tar.gz.sha256`` / ``.md5``; (name, '')
    for any other name.

    >>> _digest_suffix("sosreport-h-2026-01-05-abc.tar.xz.md5"), _digest_suffix("a.tar.gz")
    (('sosreport-h-2026-01-05-abc.tar.xz', '.md5'), ('a.tar.gz', ''))
    """
    for suffix in DIGEST_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)], suffix
    return name, ""


def _checksum_of_tarball(path: Path) -> bool:
    """``x.tar.gz.sha256`` (or the ``.md5`` sos writes) beside an existing ``x.tar.gz``."""
    tarball, suffix = _digest_suffix(path.name)
    if not suffix or path.is_dir():
        return False
    return is_tarball(path.with_name(tarball))


_SUM_LINE = {
    n: re.compile(rf"^\\?([0-9A-Fa-f]{{{n}}})(?:[ \t]+\*?(.*))?$") for n in (64, 32)
}  # fmt: skip
_BSD_LINE = {
    n: re.compile(rf"^{tag} ?\((.*)\) ?= ?([0-9A-Fa-f]{{{n}}})$") for tag, n in (("SHA256", 64), ("MD5", 32))
}  # fmt: skip


def parse_checksum(text: str, name: str, algorithm: str = "sha256") -> tuple[str | None, str | None]:
    """The expected hex digest for file ``name`` from a ``sha256sum`` (or ``md5sum``) file, and a note.

    ``<hex>  <name>`` and ``<hex> *<name>`` (binary marker), a bare ``<hex>`` (as sos writes its
    ``.md5`` and ``.sha256``), and BSD ``SHA256 (name) = <hex>`` (``MD5 (name) = <hex>``) are
    understood.  With several lines, the one naming the file (by base name) counts.

    >>> h = "ab" * 32
    >>> parse_checksum(f"{h}  hptriage-n1.tar.gz\\n", "hptriage-n1.tar.gz") == (h, None)
    True
    >>> parse_checksum(f"{h} *out/n1.tar.gz", "n1.tar.gz")[0] == h, parse_checksum(h, "x")[0] == h
    (True, True)
    >>> parse_checksum("not a digest", "x")
    (None, 'no SHA-256 digest in the file')
    >>> parse_checksum("9b9804eefb4bb814b40047daaf78227e\\n", "sosreport-x.tar.xz", "md5")
    ('9b9804eefb4bb814b40047daaf78227e', None)
    """
    width = 32 if algorithm == "md5" else 64
    shown = "MD5" if algorithm == "md5" else "SHA-256"
    entries: list[tuple[str, str | None]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SUM_LINE[width].match(line)
        if m:
            entries.append((m.group(1).lower(), (m.group(2) or "").strip() or None))
            continue
        m = _BSD_LINE[width].match(line)
        if m:
            entries.append((m.group(2).lower(), m.group(1)))
    if not entries:
        return None, f"no {shown} digest in the file"
    named = [hexdigest for hexdigest, listed in entries if listed and Path(listed).name == name]
    if named:
        return named[0], None
    if len(entries) == 1:
        hexdigest, listed = entries[0]
        return hexdigest, (f"the file names {listed!r}, not {name!r}" if listed else None)
    return None, f"{len(entries)} digests, none for {name!r}"


def _check_checksum(path: Path, display: str, found: Discovery, depth: int) -> None:
    """Verify ``<tarball>.sha256`` (and sos's ``.md5``) where it exists; the bundle is read whatever
    the outcome."""
    found._checked.add(path)
    for suffix, (algorithm, _shown) in DIGEST_SUFFIXES.items():
        sidecar = path.with_name(path.name + suffix)
        if sidecar.is_file() or sidecar.is_symlink():
            _check_digest(path, display, found, depth, suffix, algorithm)


def _check_digest(
    path: Path, display: str, found: Discovery, depth: int, suffix: str, algorithm: str
) -> None:
    sidecar = path.with_name(path.name + suffix)
    entry: dict[str, str | None] = {
        "path": display,
        "sha256_file": display + suffix,
        "status": "unreadable",
        "expected": None,
        "actual": None,
        "reason": None,
    }
    found.checksums.append((path, entry))
    try:
        if sidecar.is_symlink() and depth > 0:
            entry["reason"] = "link inside a bundle directory not followed"
            return
        if sidecar.stat().st_size > MAX_CHECKSUM_FILE_BYTES:
            entry["reason"] = f"larger than {MAX_CHECKSUM_FILE_BYTES} bytes: not a checksum file"
            return
        text = sidecar.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        entry["reason"] = f"not readable: {exc.strerror or exc}"
        return
    expected, note = parse_checksum(text, path.name, algorithm)
    entry["reason"] = note
    if expected is None:
        return
    try:
        actual = found.file_digest(path, algorithm)
    except OSError as exc:
        entry["reason"] = f"tarball not readable: {exc.strerror or exc}"
        return
    entry.update(expected=expected, actual=actual, status="ok" if actual == expected else "mismatch")


# -- identical content in two forms --------------------------------------------------------------


def content_digest(location: Path, is_tar: bool, limits: Limits) -> str:
    """SHA-256 over the bundle's readable files: (path inside the bundle, SHA-256 of the bytes), sorted.

    The same for a node directory and a tarball of it (the tarball's top directory is dropped, as the
    reader drops it), whatever the compression or the member order.  Only called for bundles that share
    a meta.env byte for byte, so the cost is paid on likely duplicates alone.
    """
    refusals: list[Refusal] = []
    errors: list[str] = []
    members = (
        iter_tar(location, limits, refusals, errors)
        if is_tar
        else iter_dir(location, limits, refusals, errors)
    )
    items = [
        (strip_top(name) if is_tar else name, hashlib.sha256(data).hexdigest()) for name, data in members
    ]
    return digest_of(items, errors)


def digest_of(items: list[tuple[str, str]], errors: list[str]) -> str:
    """:func:`content_digest` of the files read ((path inside the bundle, SHA-256 of its bytes), any
    order) and the reading errors, in the order met."""
    digest = hashlib.sha256()
    for name, file_digest in sorted(items):
        digest.update(f"{name}\0{file_digest}\n".encode("utf-8", errors="replace"))
    for e in errors:
        digest.update(f"\0error\0{e}\n".encode())
    return digest.hexdigest()


def listing(root: Path) -> tuple[tuple[str, int], ...]:
    """(relative path, size) of every regular file under root, links not followed: a cheap signature."""
    out: list[tuple[str, int]] = []
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
        for filename in filenames:
            full = Path(dirpath, filename)
            try:
                st = full.lstat()
            except OSError:
                continue
            out.append((full.relative_to(root).as_posix(), st.st_size))
    return tuple(sorted(out))
