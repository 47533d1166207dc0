"""``hptriage redact``: redacted copies of node bundles, cluster bundles and directories of them.

Inputs are read with the same safe reader as ``analyze`` (no link followed, no name outside, caps).
Every input is mirrored under OUT in its own form (a tarball stays a tarball, a directory a directory,
nested node tarballs inside a cluster tarball too), with file contents *and* names redacted by one
``Redactor`` for all inputs, so the cluster still lines up.  In every node bundle (a folder holding
meta.env) ``manifest.tsv`` gets the sizes and digests of the redacted files and ``redaction.txt`` says
what was masked (categories and counts only); every ``<tarball>.sha256`` beside a tarball is written
anew for the redacted tarball.  Compressed members (``.gz``, a bug report's many gzip members) are
opened, redacted and compressed again; ``.tar.xz`` / ``.tar.bz2`` tarballs stay in their compression and
zips stay zips (the HyperPod issue report's), so the inputs other tools write keep their layout and
``analyze`` still recognises them.  The map file (original -> token) is written outside OUT, never
inside it.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import re
import secrets
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from analyzer.intake.safe_read import Limits, Refusal, gunzip_members, iter_dir, iter_tar, iter_zip
from analyzer.redact.redactor import Redactor, expand_slurm_lists, summary, trie_pattern

TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
#: compressed tarballs are written again in their own compression (a sos report stays a .tar.xz)
_COMPRESSION = ((b"\x1f\x8b", "gz"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bz2"))


class RedactError(Exception):
    """A redaction that cannot start (OUT not empty, the map inside OUT, an unreadable map)."""


@dataclass
class RedactReport:
    written: list[Path] = field(default_factory=list)
    bundles: int = 0
    refused: list[str] = field(default_factory=list)  # "input!member: reason"
    errors: list[str] = field(default_factory=list)
    map_path: Path | None = None


def redact(
    inputs: list[Path],
    out: Path,
    map_path: Path,
    mask_serials: bool = False,
    limits: Limits | None = None,
) -> RedactReport:
    """Redact every input into OUT; the map (reused when it exists) is saved to map_path."""
    limits = limits or Limits()
    out_abs, map_abs = out.resolve(), map_path.resolve()
    if map_abs == out_abs or out_abs in map_abs.parents:
        raise RedactError(f"the map {map_path} would be inside OUT {out}: keep it outside what you send")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RedactError(f"{out} exists and is not an empty directory")
    for path in inputs:
        if not path.exists():
            raise RedactError(f"{path}: no such file or directory")
    try:
        redactor = Redactor.load(map_path, mask_serials) if map_path.exists() else Redactor(mask_serials)
    except (OSError, ValueError) as exc:
        raise RedactError(f"cannot reuse the map {map_path}: {exc}") from exc
    inside = next((p for p in inputs if p.is_dir() and p.resolve() in out_abs.parents), None)
    if inside is not None:  # the copies would be read as they are written
        raise RedactError(f"OUT {out} lies inside the input {inside}: give a path outside it")
    report = RedactReport(map_path=map_path)
    with tempfile.TemporaryDirectory(prefix="hptriage-redact-") as work:
        job = _Job(redactor, limits, Path(work), report)
        for path in inputs:  # pass 1: learn every identifier known by where it stands
            for name, data in job.files(path):
                redactor.learn(_text(data), name)
        with _staged(out) as staging:
            taken: set[str] = set()
            try:
                for path in inputs:  # pass 2: write the redacted copies
                    name = _unique(redactor.apply_name(path.name), taken)
                    target = staging / name
                    if path.is_dir():
                        job.write_dir(path, target)
                    else:
                        target.write_bytes(job.redact_file(path.name, path.read_bytes(), path))
                    report.written.append(out / name)
            except OSError as exc:  # a copy that cannot be written (disk full): the user's to fix
                if not _about(exc, staging):
                    raise
                raise RedactError(f"cannot write {out}: {exc.strerror or exc}") from exc
            _save_map(redactor, map_path)  # before the copies appear as OUT: never a copy without its map
    return report


def _about(exc: OSError, folder: Path) -> bool:
    """Whether an OSError names a file in ``folder``."""
    top = os.path.abspath(folder)
    names = [os.path.abspath(os.fsdecode(n)) for n in (exc.filename, exc.filename2) if n]
    return any(n == top or n.startswith(top + os.sep) for n in names)


@contextmanager
def _staged(out: Path) -> Iterator[Path]:
    """Where the copies are written before they appear as OUT: a new folder beside OUT, renamed to OUT
    once the map is saved, so OUT never holds a copy whose map is missing; on any failure it is removed.
    When no folder can be made beside OUT (an empty OUT in a folder the user may not write), OUT itself,
    emptied again on failure."""
    staging = out.parent / f".{out.name}.redacting-{secrets.token_hex(4)}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        if not out.is_dir():
            raise RedactError(f"cannot write {out}: {exc.strerror or exc}") from exc
        try:
            yield out
        except BaseException:
            for child in list(out.iterdir()):  # OUT was empty: everything in it was written here
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
            raise
        return
    try:
        yield staging
        try:
            staging.rename(out)  # replaces an empty OUT folder too
        except OSError as exc:
            raise RedactError(f"cannot write {out}: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _save_map(redactor: Redactor, map_path: Path) -> None:
    """Write the map all at once: to a new file beside it, then renamed over it, so a map is never half
    written (a reused map is replaced only by a whole, larger one)."""
    partial = map_path.parent / f".{map_path.name}.{secrets.token_hex(4)}.partial"
    try:
        map_path.parent.mkdir(parents=True, exist_ok=True)
        redactor.save(partial)
        os.replace(partial, map_path)
    except BaseException as exc:
        with suppress(OSError):
            partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise RedactError(f"cannot write the map {map_path}: {exc.strerror or exc}") from exc
        raise


@dataclass
class _Job:
    redactor: Redactor
    limits: Limits
    work: Path
    report: RedactReport

    # -- reading ---------------------------------------------------------------------------------------
    def files(self, path: Path, label: str = "") -> Iterator[tuple[str, bytes]]:
        """Every file of an input, tarballs and .gz opened, with its path inside (for learning)."""
        label = label or str(path)
        if path.is_dir():
            refusals: list[Refusal] = []
            errors: list[str] = []
            for name, data in iter_dir(path, self._walk_limits(), refusals, errors):
                yield from self._unpacked(name, data, f"{label}/{name}")
        else:
            yield from self._unpacked(path.name, path.read_bytes(), label)

    def _unpacked(self, name: str, data: bytes, label: str) -> Iterator[tuple[str, bytes]]:
        if data[:4] == ZIP_MAGIC:
            zipped = self._zip_members(data, label)
            if zipped is not None:
                for inner, content in zipped:
                    yield from self._unpacked(inner, content, f"{label}!{inner}")
                return
        if _is_tar_name(name) or _compression(data):
            members = self._members(data, label)
            if members is not None:
                for inner, content in members:
                    yield from self._unpacked(inner, content, f"{label}!{inner}")
                return
            if data[:2] == GZIP_MAGIC:
                plain = self._gunzip(data, label)
                if plain is not None:
                    yield name, plain
                    return
        yield name, data

    def _members(self, data: bytes, label: str) -> list[tuple[str, bytes]] | None:
        """The safe members of a tarball given as bytes, or None when it is no tarball."""
        return self._archive_members(data, label, tarfile.is_tarfile, iter_tar)

    def _zip_members(self, data: bytes, label: str) -> list[tuple[str, bytes]] | None:
        """The safe members of a zip given as bytes (the HyperPod issue report's), or None when it is
        no zip."""
        return self._archive_members(data, label, zipfile.is_zipfile, iter_zip)

    def _archive_members(
        self,
        data: bytes,
        label: str,
        is_archive: Callable[[Path], bool],
        members_of: Callable[[Path, Limits, list[Refusal], list[str]], Iterator[tuple[str, bytes]]],
    ) -> list[tuple[str, bytes]] | None:
        """Members read by ``members_of`` (the safe reader of the archive type) from a private copy of
        ``data``, or None when ``is_archive`` says it is none; what was refused is noted."""
        path = self.work / f"a{hashlib.sha256(data).hexdigest()[:16]}"
        path.write_bytes(data)
        refusals: list[Refusal] = []
        errors: list[str] = []
        try:
            if not is_archive(path):
                return None
            members = list(members_of(path, self.limits, refusals, errors))
        finally:
            path.unlink(missing_ok=True)
        for r in refusals:
            self._note(f"{label}!{r.path}: {r.reason}", self.report.refused)
        for e in errors:
            self._note(f"{label}: {e}", self.report.errors)
        return members

    def _gunzip(self, data: bytes, label: str) -> bytes | None:
        """A .gz file's text: every whole gzip member (``gzip -c >>`` writes many; a killed run leaves
        the last one cut, which is left out and said), within the per-file cap and ratio."""
        try:
            plain, problems = gunzip_members(io.BytesIO(data), len(data), self.limits)
        except ValueError as exc:
            self._note(f"{label}: compressed member not readable ({exc}); not copied", self.report.errors)
            return None
        for problem in problems:
            self._note(f"{label}: {problem}", self.report.errors)
        return plain

    @staticmethod
    def _note(message: str, into: list[str]) -> None:
        if message not in into:
            into.append(message)

    # -- writing ---------------------------------------------------------------------------------------
    def redact_file(self, name: str, data: bytes, label: Path | str) -> bytes:
        """One file of an input as redacted bytes (a tarball as a redacted tarball, a zip as a zip)."""
        if data[:4] == ZIP_MAGIC:
            zipped = self._zip_members(data, str(label))
            if zipped is not None:
                return self._zip(zipped, str(label))
        if _is_tar_name(name) or _compression(data):
            members = self._members(data, str(label))
            if members is not None:
                return self._tarball(members, str(label), _compression(data))
            if data[:2] == GZIP_MAGIC:
                plain = self._gunzip(data, str(label))
                return gzip.compress(self._text(plain), mtime=0) if plain is not None else b""
        return self._text(data)

    def write_dir(self, root: Path, target: Path) -> None:
        """A folder redacted as it is walked, one node bundle (a folder with meta.env) or one loose file
        at a time, so memory holds one bundle, not the cluster; a ``.sha256`` is renewed last, from the
        redacted file it names."""
        refusals: list[Refusal] = []
        errors: list[str] = []
        bundle_roots = _bundle_roots(root)
        groups: dict[str, list[tuple[str, bytes]]] = {}  # bundles being read; the walk leaves each once
        sums: list[tuple[str, bytes]] = []

        def flush(files: list[tuple[str, bytes]]) -> None:
            for name, data in self._tree(files, str(root)):
                dest = target / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)

        for name, data in iter_dir(root, self._walk_limits(), refusals, errors):
            for left in [r for r in groups if r != "." and not name.startswith(r + "/")]:
                flush(groups.pop(left))
            owner = _root_of(name, bundle_roots)
            if owner is not None:
                groups.setdefault(owner, []).append((name, data))
            elif name.endswith(".sha256"):
                sums.append((name, data))
            else:
                flush([(name, data)])  # a loose file or a node tarball: on its own
        for files in groups.values():
            flush(files)
        for name, data in sums:
            new_name = "/".join(self.redactor.apply_name(part) for part in name.split("/"))
            checked = target / new_name[: -len(".sha256")]
            dest = target / new_name
            dest.parent.mkdir(parents=True, exist_ok=True)
            if checked.is_file():
                digest = _file_sha256(checked)
                dest.write_bytes(f"{digest}  {checked.name}\n".encode())
            else:
                dest.write_bytes(self._text(data))
        for r in refusals:
            self._note(f"{root}/{r.path}: {r.reason}", self.report.refused)
        for e in errors:
            self._note(f"{root}: {e}", self.report.errors)

    def _walk_limits(self) -> Limits:
        """A folder of many bundles is no bundle: each file keeps its cap, each tarball is checked as a
        bundle when it is opened; the folder's total is not capped (it is read one file at a time)."""
        return dataclasses.replace(self.limits, max_bundle_bytes=1 << 62)

    def _tarball(self, members: list[tuple[str, bytes]], label: str, compression: str) -> bytes:
        buf = io.BytesIO()
        with _open_for_writing(buf, compression) as archive:
            for name, data in self._tree(members, label):
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                archive.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def _zip(self, members: list[tuple[str, bytes]], label: str) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in self._tree(members, label):
                archive.writestr(
                    zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED
                )
        return buf.getvalue()

    def _tree(self, files: list[tuple[str, bytes]], label: str) -> list[tuple[str, bytes]]:
        """A set of files (a tarball's members, a folder) redacted: names and contents; node bundles
        (folders with meta.env) get their manifest, redaction.txt, and .sha256 files are renewed."""
        roots = {str(PurePosixPath(n).parent) for n, _ in files if PurePosixPath(n).name == "meta.env"}

        out: dict[str, bytes] = {}
        names: dict[str, str] = {}  # original -> redacted path
        sha_files: list[tuple[str, bytes]] = []
        by_root: dict[str | None, list[tuple[str, bytes]]] = {}
        for name, data in files:
            by_root.setdefault(_root_of(name, roots), []).append((name, data))
        for root, group in by_root.items():
            self.redactor.counts = {}
            for name, data in group:
                new_name = "/".join(self.redactor.apply_name(part) for part in name.split("/"))
                names[name] = new_name
                if name.endswith(".sha256"):
                    sha_files.append((name, data))
                    continue
                if PurePosixPath(name).name in ("manifest.tsv", "redaction.txt") and root is not None:
                    continue  # written below, from the redacted files
                out[new_name] = self.redact_file(name, data, f"{label}!{name}")
            if root is not None:
                self.report.bundles += 1
                new_root = names.get(_join(root, "meta.env"), "meta.env").rpartition("/")[0] or "."
                manifest = next((d for n, d in group if n == _join(root, "manifest.tsv")), None)
                if manifest is not None:
                    out[_join(new_root, "manifest.tsv")] = self._manifest(manifest, new_root, out)
                out[_join(new_root, "redaction.txt")] = summary(
                    self.redactor.counts, self.redactor.maps
                ).encode()
        for name, data in sha_files:  # after the files they check
            new_name = names[name]
            target = new_name[: -len(".sha256")]
            if target in out:
                digest = hashlib.sha256(out[target]).hexdigest()
                out[new_name] = f"{digest}  {PurePosixPath(target).name}\n".encode()
            else:
                out[new_name] = self._text(data)
        return sorted(out.items())

    def _manifest(self, data: bytes, root: str, files: dict[str, bytes]) -> bytes:
        """manifest.tsv redacted, with each listed file's size and SHA-256 taken from its redacted copy."""
        lines = self._text(data).decode("latin-1").split("\n")
        header = lines[0].split("\t") if lines else []
        at = {c: i for i, c in enumerate(header)}
        fixed = [lines[0]] if lines else []
        for line in lines[1:]:
            cells = line.split("\t")
            if line and "path" in at and len(cells) == len(header):
                content = files.get(_join(root, cells[at["path"]]))
                if content is not None:
                    if "bytes" in at:
                        cells[at["bytes"]] = str(len(content))
                    if "sha256" in at:
                        cells[at["sha256"]] = hashlib.sha256(content).hexdigest()
            fixed.append("\t".join(cells))
        return "\n".join(fixed).encode("latin-1")

    def _text(self, data: bytes) -> bytes:
        """Bytes redacted as text; latin-1 maps every byte to one character and back, so bytes that are
        not ASCII pass unchanged (every identifier covered is ASCII)."""
        text = data.decode("latin-1")
        text = (
            expand_slurm_lists(text)
            if "Nodes=" in text or "NodeName=" in text or "NodeList=" in text
            else text
        )
        return self.redactor.apply(text).encode("latin-1")


def verify(out: Path, map_path: Path, limits: Limits | None = None) -> list[tuple[str, str]]:
    """(category, where) for every original value of the map still found in OUT: file contents and
    names, tarballs and .gz opened, without regard to case, as a word of its own (``node64`` inside
    ``inode64`` is another word; glued by ``-``, ``_`` or ``.`` it counts), the same way redaction finds
    them.  Empty: nothing in the map leaks.  The values themselves are never returned (the caller may
    print the result)."""
    redactor = Redactor.load(map_path)
    category_of = {v.lower(): c for c, table in redactor.maps.items() for v in table if len(v) >= 2}
    if not category_of:
        return []
    words = re.compile(rb"(?<![a-z0-9])(?:" + trie_pattern(category_of).encode() + rb")(?![a-z0-9]|\.[0-9])")
    report = RedactReport()
    found: set[tuple[str, str]] = set()
    with tempfile.TemporaryDirectory(prefix="hptriage-verify-") as work:
        job = _Job(redactor, limits or Limits(), Path(work), report)
        for path in sorted(out.iterdir()) if out.is_dir() else [out]:
            for name, data in job.files(path, str(path)):
                where = f"{path}!{name}" if path.is_file() else f"{path}/{name}"
                for text in (data.lower(), name.lower().encode()):
                    for m in words.finditer(text):
                        found.add((category_of[m.group(0).decode()], where))
    return sorted(found)


def _bundle_roots(root: Path) -> set[str]:
    """The folders under root (relative, "." for root itself) that hold a meta.env; folder links are
    not followed."""
    return {
        Path(dirpath).relative_to(root).as_posix()
        for dirpath, _, filenames in os.walk(root, followlinks=False)
        if "meta.env" in filenames
    }


def _root_of(name: str, roots: set[str]) -> str | None:
    """The deepest bundle folder holding the file ``name``."""
    return next((str(p) for p in PurePosixPath(name).parents if str(p) in roots), None)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _open_for_writing(buf: io.BytesIO, compression: str) -> tarfile.TarFile:
    """A tarball written into ``buf`` in the compression named ('' for none)."""
    if compression == "gz":
        return tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT)
    if compression == "xz":
        return tarfile.open(fileobj=buf, mode="w:xz", format=tarfile.PAX_FORMAT)
    if compression == "bz2":
        return tarfile.open(fileobj=buf, mode="w:bz2", format=tarfile.PAX_FORMAT)
    return tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT)


def _compression(data: bytes) -> str:
    """'gz', 'xz' or 'bz2' by the data's magic bytes; '' for none of them.

    >>> _compression(b"\\x1f\\x8b\\x08"), _compression(b"\\xfd7zXZ\\x00\\x00"), _compression(b"plain")
    ('gz', 'xz', '')
    """
    return next((kind for magic, kind in _COMPRESSION if data.startswith(magic)), "")


def _is_tar_name(name: str) -> bool:
    return name.lower().endswith(TAR_SUFFIXES)


def _join(root: str, name: str) -> str:
    return name if root in (".", "") else f"{root}/{name}"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        stem, dot, ext = name.partition(".")
        candidate, n = f"{stem}-{n}{dot}{ext}", n + 1
    taken.add(candidate)
    return candidate


def default_map_path(out: Path) -> Path:
    """The map beside OUT, never in it: ``OUT.map.json``."""
    return out.parent / f"{out.name.rstrip(os.sep) or 'redacted'}.map.json"
