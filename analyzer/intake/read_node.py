"""Turn one node bundle into rows: runs in a worker process, returns plain Python data.

For every file the kind comes from the manifest, else from the file name (``cmd/<kind>.txt``), else from
the content.  Each parse failure becomes a problem record; nothing raised by a parser escapes.

Every file is accounted for: one no parser recognises (in ``cmd/``, ``extra/``, anywhere in the bundle
or a cluster's ``extra/`` folder), a ``files/`` copy the manifest gives no kind, a manifest kind no parser
has whose content no parser recognises either, and a probe's stderr that belongs to no probe, are
*unread inputs* named by the path the user knows, with why.  A file kept for people (kind ``-`` in
manifest.tsv, the collector's ``redaction.txt``) is read but parsed by no parser: it is listed in
``not_parsed`` with why, so nobody takes it for judged.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import parsers
from analyzer.intake.bundle import NodeSource, digest_of, node_name, strip_top
from analyzer.intake.foreign.layout import ORIGINS, conversion_problem, converted_from
from analyzer.intake.meta import ManifestRow, Meta, parse_manifest, parse_meta
from analyzer.intake.records import UnreadInput
from analyzer.intake.safe_read import Limits, Refusal, iter_dir, iter_tar
from analyzer.store.tables import KEEP_WHOLE_AT, KEEP_WHOLE_BYTES, columns_to_arrow, rows_to_arrow
from parsers._base import CollectorError, Column, NoData, ParseError, ParseResult, long_line
from parsers.probe_answers import family_of, read_answers

if TYPE_CHECKING:
    import pyarrow as pa

#: Characters of a probe's stdout / stderr searched for failure answers (they come first).
ANSWER_HEAD = 256 * 1024

Row = dict[str, Any]


@dataclass
class NodeData:
    """Everything read from one node bundle."""

    bundle_id: str
    node: str
    display: str
    meta: dict[str, str] = field(default_factory=dict)
    tables: dict[str, list[Row]] = field(default_factory=dict)
    problems: list[Row] = field(default_factory=list)
    files: list[Row] = field(default_factory=list)
    probes: list[Row] = field(default_factory=list)
    arrow: dict[str, Any] = field(default_factory=dict)  # table -> pyarrow.Table, made in the worker
    #: table -> Arrow tables of the files parsed so far (typed as each file is parsed), without ids
    parts: dict[str, list[Any]] = field(default_factory=dict)
    #: id(part) -> the node its rows carry instead of ``node`` (a node's output found in extra/)
    part_nodes: dict[int, str] = field(default_factory=dict)
    #: what was not read: refused members (``bundle.tar.gz!member``, or ``dir/member``), the rest of
    #: a damaged or over-cap bundle, files no parser recognises
    unread: list[UnreadInput] = field(default_factory=list)
    #: (path in the bundle, why) of files read and kept for people but parsed by no parser
    not_parsed: list[tuple[str, str]] = field(default_factory=list)
    failed: str = ""  # set when reading the bundle raised: nothing of it was stored
    #: the bundle's content digest (bundle.content_digest), when its source asked for it
    content_digest: str | None = None

    def to_arrow(self) -> None:
        """Convert every row list to Arrow here, so the parent process only inserts batches."""
        import pyarrow as pa

        from analyzer.store.tables import all_schemas, rows_to_arrow, with_ids

        known = all_schemas()
        tables = dict(self.tables)
        tables.update(probe=self.probes, file=self.files, parse_problems=self.problems)
        parts = {name: list(batches) for name, batches in self.parts.items()}
        for name, rows in tables.items():
            if name in known and rows:
                parts.setdefault(name, []).append(rows_to_arrow(name, rows))
        for name, batches in parts.items():
            if self.part_nodes:  # ids batch by batch: some carry another node
                pieces = [with_ids(b, self.bundle_id, self.part_nodes.get(id(b), self.node)) for b in batches]
                self.arrow[name] = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
                continue
            body = pa.concat_tables(batches) if len(batches) > 1 else batches[0]
            self.arrow[name] = with_ids(body, self.bundle_id, self.node)
        self.tables, self.parts, self.part_nodes = {}, {}, {}


@dataclass
class ParsedFile:
    """One file of a bundle as its parser gave it (``hptriage parse`` of another tool's input prints
    these): its path in the bundle, its kind and the probe's command line, where it came from (origins.tsv:
    the input's file and first line there, else None), and the parse (rows with their lines in the
    input's file and their ``source_file``), or why there is none (``error``)."""

    path: str
    kind: str
    command: str | None
    origin: tuple[str, int] | None
    result: ParseResult | None = None
    error: str | None = None
    #: lines to add to the parse's own line numbers to give the input's (origins.tsv), 0 for none
    offset: int = 0

    def table_rows(self) -> dict[str, list[dict[str, Any]]]:
        """Every table of the parse as rows, their line numbers in the input's own file."""
        assert self.result is not None
        tables = self.result.table_rows()
        if not self.offset:
            return tables
        module = parsers.module_for(self.kind)
        for table, rows in tables.items():
            shifted = [c.name for c in module.SCHEMA[table] if _is_line(c.name)]
            for row in rows:
                for key in shifted:
                    if isinstance(row.get(key), int):
                        row[key] += self.offset
        return tables


def read_node(
    source: NodeSource,
    limits: Limits,
    cluster_id: str | None = None,
    *,
    parsed: list[ParsedFile] | None = None,
) -> NodeData:
    """Read a node bundle (directory or tarball) into rows; with ``parsed``, each file's parse is
    also appended there as its parser gave it."""
    refusals: list[Refusal] = []
    errors: list[str] = []
    members = (
        iter_tar(source.location, limits, refusals, errors)
        if source.is_tar
        else iter_dir(source.location, limits, refusals, errors)
    )
    reader = _NodeReader(source)
    reader.parsed = parsed
    digests: list[tuple[str, str]] = []
    for name, data in members:
        if source.is_tar and reader.top is None:
            reader.top = name.partition("/")[0] if "/" in name else None
        inside = strip_top(name) if source.is_tar else name
        if source.digest:
            digests.append((inside, hashlib.sha256(data).hexdigest()))
        reader.take(inside, data)
    reader.finish()
    if source.digest:
        reader.data.content_digest = digest_of(digests, errors)
    for r in refusals:
        reader.problem(strip_top(r.path) if source.is_tar else r.path, None, f"member refused: {r.reason}")
        member = f"{source.display}!{r.path}" if source.is_tar else f"{source.display.rstrip('/')}/{r.path}"
        reader.data.unread.append(UnreadInput(member, f"member refused: {r.reason}"))
    for e in errors:
        reader.problem("", None, e)
        reader.data.unread.append(UnreadInput(source.display, e))
    reader.data.to_arrow()
    return reader.data


def read_node_safely(source: NodeSource, limits: Limits) -> NodeData:
    """read_node, but an unexpected error becomes a failed NodeData instead of ending the analysis."""
    try:
        return read_node(source, limits)
    except Exception as exc:  # a reader bug or an OS error on one bundle must not lose the others
        return NodeData(bundle_id="", node="", display=source.display, failed=f"{type(exc).__name__}: {exc}")


def read_extra(
    path: Path,
    display: str,
    cluster_id: str,
    limits: Limits,
    part: int = 0,
    parts: int = 1,
    prefix: str = "extra",
    *,
    parsed: list[ParsedFile] | None = None,
) -> NodeData:
    """Read a cluster-wide extra/ directory: every file recognised by content, node unknown.

    Its files are named ``<prefix>/<file>`` (source_file): ``extra/...``, or ``<folder>/extra/...``
    when several extra/ folders are analyzed together, so two files of one name never collide.
    With ``parts`` > 1 this reads one share of the files (``part`` of ``parts``, by a hash of the name),
    so workers can share a large folder; refused members and errors are reported by part 0 alone.
    With ``parsed``, each file's parse is also appended there (:class:`ParsedFile`)."""
    source = NodeSource(path, False, display)
    reader = _NodeReader(source, cluster_id=cluster_id)
    reader.prefix = prefix
    reader.parsed = parsed
    refusals: list[Refusal] = []
    errors: list[str] = []

    def mine(name: str) -> bool:
        return parts <= 1 or zlib.crc32(name.encode("utf-8", "surrogateescape")) % parts == part

    for name, data in iter_dir(path, limits, refusals, errors, select=mine):
        reader.parse_file(f"{prefix}/{name}", data, None)
    if part != 0:
        refusals, errors = [], []
    for r in refusals:
        reader.problem(f"{prefix}/{r.path}", None, f"member refused: {r.reason}")
        reader.data.unread.append(
            UnreadInput(f"{display.rstrip('/')}/{r.path}", f"member refused: {r.reason}")
        )
    for e in errors:
        reader.problem(f"{prefix}/", None, e)
        reader.data.unread.append(UnreadInput(display, e))
    reader.data.to_arrow()
    return reader.data


def bundle_id_for(node: str, collected_at: str, display: str) -> str:
    digest = hashlib.sha256(f"{node}\0{collected_at}\0{display}".encode()).hexdigest()
    return digest[:12]


class _NodeReader:
    def __init__(self, source: NodeSource, cluster_id: str | None = None) -> None:
        self.source = source
        self.meta: Meta | None = None
        self.manifest: dict[str, ManifestRow] | None = None
        self.pending: list[tuple[str, bytes]] = []
        self.stderr: dict[str, str] = {}
        self.manifest_lines: list[str] = []
        #: output file -> (kind, head of stdout) for probes whose failure answers are catalogued
        self.answer_text: dict[str, tuple[str, str]] = {}
        self.seen: set[str] = set()
        self.top: str | None = None  # the top-level directory of a node tarball
        #: output file -> (the input file it came from, its first line there): a foreign input's layout
        self.origins: dict[str, tuple[str, int]] = {}
        #: each problem's row with what it was said of (file, line, error): cited again once the bundle
        #: is known to be converted from another tool's input (meta.env and origins.tsv come in any order)
        self.cited: list[tuple[Row, str, int | None, str]] = []
        node = None if cluster_id else source.location.name
        self.data = NodeData(bundle_id=cluster_id or "", node=node or "", display=source.display)
        self.cluster_wide = bool(cluster_id)  # an extra/ folder: no node of its own
        #: where each file's parse is also kept, as its parser gave it (read_node's ``parsed``)
        self.parsed: list[ParsedFile] | None = None
        self.prefix = "extra"  # an extra/ folder's files are read as '<prefix>/<name>'
        if cluster_id:
            self.data.node = ""
            self._identified = True
        else:
            self._identified = False

    # -- streaming ---------------------------------------------------------------------------
    def take(self, name: str, data: bytes) -> None:
        if name == "meta.env":
            self._set_meta(data)
        elif name == "manifest.tsv":
            manifest_text = _text(data)
            rows, problems = parse_manifest(manifest_text)
            self.manifest = rows
            self.manifest_lines = manifest_text.splitlines()
            for line, msg in problems:
                self.problem("manifest.tsv", "manifest", msg, line)
        elif name == ORIGINS:
            self.origins = parse_origins(_text(data))
        elif name.endswith(".err") and name.startswith("cmd/"):
            self.stderr[name[:-4] + ".txt"] = _text(data[:ANSWER_HEAD])
        elif self.meta is None or self.manifest is None:
            self.pending.append((name, data))  # held until meta.env and the manifest are known
        else:
            self._dispatch(name, data)

    def finish(self) -> None:
        if self.meta is None:
            self._set_meta(None)
        if self.manifest is None:
            self.manifest = {}
            self.problem("manifest.tsv", "manifest", "manifest.tsv missing: kinds taken from names/content")
        for name, data in self.pending:
            self._dispatch(name, data)
        self.pending.clear()
        for path, stderr in sorted(self.stderr.items()):
            if stderr.strip() and path not in self.manifest and path not in self.answer_text:
                err = path.removesuffix(".txt") + ".err"
                self.unread(err, "the stderr of a probe manifest.tsv does not list: not read")
        for path, row in sorted(self.manifest.items()):
            self.data.probes.append(
                {
                    "path": path,
                    "kind": row.kind,
                    "exit_code": row.exit_code,
                    "duration_s": row.duration_s,
                    "bytes": row.bytes,
                    "sha256": row.sha256,
                    "command": row.command,
                    "note": row.note,
                    "present": path in self.seen,
                    "stderr_head": (self.stderr.get(path) or "")[:2000] or None,
                    "line": row.line,
                }
            )
        self._answers()
        if self.meta is not None and converted_from(self.meta.values) is not None:
            for cited, name, line, error in self.cited:
                self._cite(cited, name, line, error)

    def _answers(self) -> None:
        """The failure answers of every probe (parsers.probe_answers): rows of ``probe_answer``, with
        the cited lines kept as evidence."""
        assert self.manifest is not None
        rows: list[Row] = []
        for path in sorted(set(self.manifest) | set(self.answer_text)):
            row = self.manifest.get(path)
            kind, stdout = self.answer_text.get(path, (None, ""))
            if kind is None and row is not None and row.kind not in (None, "-"):
                kind = row.kind
            code = row.exit_code if row is not None else None
            for a in read_answers(kind, stdout, self.stderr.get(path, ""), code):
                if a.stream == "manifest":
                    cited, line = "manifest.tsv", row.line if row is not None else None
                    text = (
                        self.manifest_lines[line - 1] if line and line <= len(self.manifest_lines) else a.text
                    )
                else:
                    cited = path if a.stream == "stdout" else path.removesuffix(".txt") + ".err"
                    line, text = self.line_in_source(cited, a.line), a.text
                source_file = self.source_file(cited)
                rows.append(
                    {
                        "path": path,
                        "kind": kind,
                        "family": a.family,
                        "answer": a.answer,
                        "stream": a.stream,
                        "exit_code": code,
                        "pci": a.pci,
                        "source_file": source_file,
                        "line": line,
                        "text": a.text,
                    }
                )
                if line is not None:
                    self.data.tables.setdefault("source_line", []).append(
                        {"source_file": source_file, "line": line, "text": text[:1000]}
                    )
        if rows:
            self.data.tables.setdefault("probe_answer", []).extend(rows)

    # -- one file ----------------------------------------------------------------------------
    def _dispatch(self, name: str, data: bytes) -> None:
        assert self.manifest is not None
        row = self.manifest.get(name)
        if row is not None and row.kind == "-" and not name.startswith("extra/"):
            self._file(name, None, "manifest", len(data), "kept", 0)
            self.data.not_parsed.append((name, "kind '-' in manifest.tsv: kept for people"))
            return
        if name == REDACTION and row is None:
            self._file(name, None, None, len(data), "kept", 0)
            self.data.not_parsed.append((name, "the collector's record of what it redacted: kept for people"))
            return
        kind = row.kind if row is not None and row.kind != "-" else None
        self.parse_file(name, data, kind, "manifest" if kind else None)

    def parse_file(self, name: str, data: bytes, kind: str | None, kind_source: str | None = None) -> None:
        self.seen.add(name)
        unknown = None
        if kind is not None and kind not in parsers.KINDS:
            self.problem(name, kind, f"unknown kind {kind!r} in manifest; recognising by content")
            unknown, kind = kind, None
        text = _text(data)
        if kind is None and name.startswith("cmd/") and name.endswith(".txt"):
            stem = name[4:-4]
            if stem in parsers.KINDS:
                kind, kind_source = stem, "name"
        if family_of(kind) is not None and not self.cluster_wide:
            self.answer_text[name] = (kind or "", text[:ANSWER_HEAD])
        if kind is None:
            if name.startswith("files/") and not name.startswith("files/etc/slurm"):
                # host files are parsed by the kind the manifest gives (by content, /etc/fstab could pass
                # for /proc/mounts): without one, it is not read
                self._file(name, None, None, len(data), "kept", 0)
                self.unread(
                    name,
                    (f"manifest kind {unknown!r} is unknown" if unknown else "no kind in manifest.tsv")
                    + ": a copied host file is parsed only by the kind its manifest row gives; not read",
                )
                return
            kind, kind_source = _by_name(name, text), "name"
            if kind is None:
                kind = parsers.detect_kind(text) if text.strip() else None
                kind_source = "content"
        if kind is None:
            status = "empty" if not text.strip() else "unrecognised"
            self._file(name, None, None, len(data), status, 0)
            if status == "unrecognised":
                self.unread(
                    name,
                    (f"manifest kind {unknown!r} is unknown and " if unknown else "")
                    + "no parser recognises its content (hptriage parse --list names the kinds read)",
                )
            return
        self._parse(name, kind, kind_source or "content", text, len(data))

    def _cited_lines(
        self,
        source_file: str,
        text: str,
        lines: list[str] | None,
        offset: int,
        typed: dict[str, pa.Table],
        schemas: Mapping[str, tuple[Column, ...]],
    ) -> None:
        """The text of every line a row cites (its line columns), once per line, as ``source_line``
        rows, or the whole file as one ``source_text`` row when its rows cite many of its lines: the
        evidence of a finding is looked up there.  The line numbers are read a column at a time; a file
        is split into lines only when a row cites one."""
        import pyarrow.compute as pc

        cited: set[int] = set()
        for table, batch in typed.items():
            for column in schemas[table]:
                if _is_line(column.name) and column.type == "int":
                    cited.update(pc.unique(batch.column(column.name)).to_pylist())
        cited.discard(None)
        if not cited:
            return
        if len(cited) >= KEEP_WHOLE_AT and len(text) <= KEEP_WHOLE_BYTES:
            whole = {"source_file": source_file, "first_line": offset + 1, "text": text}
            self.data.tables.setdefault("source_text", []).append(whole)
            return
        if lines is None:
            lines = text.splitlines()
        count = len(lines)
        out = self.data.tables.setdefault("source_line", [])
        for at in sorted(cited):
            no = at - offset  # the line in this output (``at`` is the line in the input's own file)
            if 0 < no <= count:
                out.append({"source_file": source_file, "line": at, "text": lines[no - 1][:1000]})

    def _parse(self, name: str, kind: str, kind_source: str, text: str, size: int) -> None:
        source_file = self.source_file(name)
        probe = (self.manifest or {}).get(name)
        command = probe.command if probe is not None and probe.command not in (None, "", "-") else None
        kept: ParsedFile | None = None
        if self.parsed is not None:
            kept = ParsedFile(name, kind, command, self.origins.get(name))
            self.parsed.append(kept)
        if kind not in parsers.WHOLE_FILE_KINDS and (too_long := long_line(text)):
            why = f"line {too_long[0]} is {too_long[1]} characters long (no tool prints that)"
            self._not_parsed(name, kind, kind_source, size, kept, "failed", f"not parsed: {why}", why)
            return
        try:
            module = parsers.module_for(kind)
            # the command line tells the layout (csv,noheader fields), else the file's name (df-H.txt)
            result = parsers.parse(kind, text, command=command, filename=name)
            offset = self.origins[name][1] - 1 if name in self.origins else 0
            typed = {
                t: _typed(t, result, source_file, offset, module.SCHEMA[t])
                for t in result.tables
                if result.count(t)
            }
        except NoData:
            self._file(name, kind, kind_source, size, "empty", 0)
            return
        except CollectorError as exc:
            said = f"the tool reported an error instead of output: {exc}"
            self._not_parsed(name, kind, kind_source, size, kept, "tool-error", said, str(exc))
            return
        except ParseError as exc:
            self._not_parsed(name, kind, kind_source, size, kept, "failed", f"not parsed: {exc}", str(exc))
            return
        except Exception as exc:  # a parser bug must not lose the rest of the bundle
            why = f"parser error ({type(exc).__name__}): {exc}"
            self._not_parsed(name, kind, kind_source, size, kept, "failed", why, why)
            return
        if kept is not None:
            kept.result, kept.offset = result, offset
        self._cited_lines(source_file, text, result.lines, offset, typed, module.SCHEMA)
        n_rows = 0
        for table, batch in typed.items():
            self.data.parts.setdefault(table, []).append(batch)
            if self.cluster_wide and kind not in parsers.CLUSTER_KINDS:
                self.data.part_nodes[id(batch)] = name
            n_rows += batch.num_rows
        if self.cluster_wide and kind not in parsers.CLUSTER_KINDS and n_rows:
            self.problem(
                name,
                kind,
                f"{kind} output in extra/ names no node: analyzed as node {name!r}; put it in its node's "
                "bundle (cmd/) to tie it to that node",
            )
        self._issues(name, kind, result)
        self._file(name, kind, kind_source, size, "parsed", n_rows)

    def _issues(self, name: str, kind: str, result: ParseResult) -> None:
        """The lines a parse did not understand, each a problem at its line of the source."""
        for issue in result.issues:
            self.problem(
                name,
                kind,
                f"line not understood: {issue.reason}",
                self.line_in_source(name, issue.line_no) if issue.line_no else None,  # 0: no line (a dump)
                issue.line,
            )
        if result.issues_dropped:
            self.problem(name, kind, f"{result.issues_dropped} more lines not understood (not listed)")

    def _not_parsed(
        self, name: str, kind: str, kind_source: str, size: int, kept: ParsedFile | None, status: str, said: str,
        why: str,
    ) -> None:  # fmt: skip
        """A file its parser could not read: its file row, the problem said, why for ``hptriage parse``."""
        self._file(name, kind, kind_source, size, status, 0)
        self.problem(name, kind, said)
        if kept is not None:
            kept.error = why

    # -- bookkeeping -------------------------------------------------------------------------
    def _set_meta(self, data: bytes | None) -> None:
        meta_text = ""
        if data is None:
            self.meta = Meta()
            self.problem("meta.env", "meta", "meta.env missing")
        else:
            meta_text = _text(data)
            self.meta = parse_meta(meta_text)
            for line, msg in self.meta.problems:
                self.problem("meta.env", "meta", msg, line or None)
        if self._identified:
            return
        node = self.source.node_name or node_name(self.meta, self.top, self.source.location)
        self.data.node = node
        self.data.meta = dict(self.meta.values)
        self.data.bundle_id = bundle_id_for(node, self.meta.get("collected_at") or "", self.source.display)
        self._identified = True
        # meta.env lines are evidence too (instance type, placement, kernel): keep them for citations
        self.data.tables.setdefault("source_line", []).extend(
            {"source_file": self.source_file("meta.env"), "line": no, "text": line[:1000]}
            for no, line in enumerate(meta_text.splitlines()[:200], start=1)
            if "=" in line
        )

    def unread(self, name: str, reason: str) -> None:
        """A file of the bundle that was not read, named as the user knows it, with why."""
        self.data.unread.append(UnreadInput(self.shown(name), reason))

    def shown(self, name: str) -> str:
        """A file of the bundle by the path the user gave: ``<dir>/cmd/x.txt``, ``<tarball>!<top>/cmd/x.txt``,
        ``<cluster>/extra/x.log``; for an output of another tool's input, the file evidence names."""
        display = self.source.display
        if self.cluster_wide:
            rest = name.removeprefix(self.prefix + "/")
            if display.endswith("!extra"):  # another tool's cluster-wide file, given as a file
                return display.removesuffix("!extra")
            return f"{display.rstrip('/')}/{rest}"
        if name in self.origins:
            return self.source_file(name)
        if self.source.is_tar:
            return f"{display}!{self.top}/{name}" if self.top else f"{display}!{name}"
        return f"{display.rstrip('/')}/{name}"

    def source_file(self, name: str) -> str:
        """How evidence names a file of the bundle: ``<node>/<path>``; for an output of another tool's
        input, the input's own file (``<node>/<report>.log.gz``, ``<node>/<tarball>!<member>``)."""
        if name in self.origins:
            name = self.origins[name][0]
        return f"{self.data.node}/{name}" if self.data.node else name

    def line_in_source(self, name: str, line: int | None) -> int | None:
        """A line of a bundle file as a line of the file evidence names (source_file)."""
        if line is None or name not in self.origins:
            return line
        return line + self.origins[name][1] - 1

    def problem(
        self, name: str, kind: str | None, error: str, line: int | None = None, text: str = ""
    ) -> None:
        row: Row = {"file": "", "kind": kind, "error": error, "line": line, "text": text[:500] or None}
        self.data.problems.append(row)
        self.cited.append((row, name, line, error))
        self._cite(row, name, line, error)

    def _cite(self, row: Row, name: str, line: int | None, error: str) -> None:
        """Where a problem is said to lie: the bundle's file (``<node>/<path>``, the input's own file and
        line for an output of another tool's input, origins.tsv); for what a conversion wrote that no line
        of the user's input holds (meta.env, manifest.tsv, an output not found verbatim in it), the
        input as the user gave it, with the problem said to come from the conversion."""
        row["file"] = self.source_file(name) if name else self.source.display
        row["line"], row["error"] = line, error
        if not name or name in self.origins or self.meta is None or converted_from(self.meta.values) is None:
            return
        probe = (self.manifest or {}).get(name)
        command = probe.command if probe is not None and probe.command not in (None, "", "-") else None
        row["file"], row["line"] = self.source.display, None
        row["error"] = conversion_problem(name, error, line, command)

    def _file(
        self, name: str, kind: str | None, kind_source: str | None, size: int, status: str, rows: int
    ) -> None:
        self.seen.add(name)
        self.data.files.append(
            {
                "path": name,
                "source_file": self.source_file(name),
                "kind": kind,
                "kind_source": kind_source,
                "bytes": size,
                "status": status,
                "rows": rows,
            }
        )


#: The collector's record of what --redact masked (categories and counts): for people, not parsed.
REDACTION = "redaction.txt"


def _typed(
    table: str, result: ParseResult, source_file: str, offset: int, columns: tuple[Column, ...]
) -> pa.Table:
    """One table of a parse as Arrow with its declared types, ``source_file`` set and, for a file taken
    from another tool's input (origins.tsv), its line numbers moved to that input's own lines."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table in result.columns:
        batch = columns_to_arrow(table, result.columns[table].data)
    else:
        batch = rows_to_arrow(table, result.tables[table])
    names = batch.schema.names
    at = names.index("source_file")
    batch = batch.set_column(at, "source_file", pa.array([source_file] * batch.num_rows, pa.string()))
    if offset:
        for column in columns:
            if _is_line(column.name) and column.type == "int":
                i = names.index(column.name)
                batch = batch.set_column(i, column.name, pc.add(batch.column(i), offset))
    return batch


def _is_line(column: str) -> bool:
    """Whether a table's column holds a line number of the file its row came from."""
    return column == "line" or column.endswith("_line")


def parse_origins(text: str) -> dict[str, tuple[str, int]]:
    """``origins.tsv`` (analyzer.intake.foreign.layout): output path -> (input file, first line there).

    >>> parse_origins("path\\torigin\\tfirst_line\\ncmd/dmesg.txt\\treport.log.gz\\t1502\\nbad line\\n")
    {'cmd/dmesg.txt': ('report.log.gz', 1502)}
    """
    out: dict[str, tuple[str, int]] = {}
    for line in text.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) == 3 and cells[0] and cells[1] and cells[2].isdigit():
            out[cells[0]] = (cells[1], max(int(cells[2]), 1))
    return out


def _text(data: bytes) -> str:
    """Decode bundle bytes: UTF-8, with undecodable bytes replaced (never an exception); a pickle (a
    flight-recorder dump) byte for byte (``parsers.text_of``)."""
    text = parsers.text_of(data)
    if text[:1] == "\x80" or "\r" not in text:  # a search for one character: a copy only where needed
        return text
    return text.replace("\r\n", "\n")


#: A file name's word and the kind it names, tried before every detector runs (an extra/ folder holds
#: thousands of pairwise nccl-tests logs; running all detectors on each was half their cost).
_NAME_HINTS = (("nccl", "nccl-tests"), ("all_reduce", "nccl-tests"), ("allreduce", "nccl-tests"))
#: The hinted kind's own detector must be this sure (a header of its own, not a stray line).
_NAME_SURE = 85


def _by_name(name: str, text: str) -> str | None:
    """The kind a file's name says, when that kind's detector is sure of the content too; else None
    (the content decides, as for any file).

    >>> _by_name("extra/nccl-pair-0001-0002.txt", "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592")
    'nccl-tests'
    >>> _by_name("extra/nccl-notes.txt", "NCCL INFO Bootstrap : Using eth0"), _by_name("extra/x.txt", "")
    (None, None)
    """
    base = name.rpartition("/")[2].lower()
    for word, kind in _NAME_HINTS:
        if (
            word in base
            and kind in parsers.KINDS
            and parsers.module_for(kind).detect(text[:65536]) >= _NAME_SURE
        ):
            return kind
    return None
