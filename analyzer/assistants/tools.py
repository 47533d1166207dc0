"""What each assistant tool does, on plain data: the MCP server registers these methods as its tools.

Every method takes the paths an assistant gives, refuses those outside the roots (symbolic links
resolved first), calls the functions the command line calls, and returns a JSON-serialisable dict cut
to a model's context (what was cut is counted, with the command that gives the rest).  A failure is a
:class:`ToolProblem` with one line saying what to do.  Only :meth:`Toolbox.redact` writes, and only
under a root; nothing opens a socket.  :meth:`Toolbox.plan` returns the remediation plan as text to
review: it runs none of it.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from analyzer.assistants.budget import fit
from analyzer.assistants.roots import OutsideRoots, Roots
from analyzer.assistants.summary import TOP_FINDINGS, summarize
from analyzer.errors import HptriageError

if TYPE_CHECKING:
    import duckdb

    from analyzer.judge.settings import Settings

T = TypeVar("T")

#: Analyses kept for finding(fingerprint): the most recent ones.
KEPT_ANALYSES = 8
#: Records parse returns unless asked for another number, and the most it returns.
PARSE_RECORDS = 100
MAX_PARSE_RECORDS = 1_000
#: Evidence lines finding returns (a rule's evidence is a few lines; a fold of thousands is cut here).
MAX_EVIDENCE = 500
#: The largest file parse reads (the bundle reader's cap on one file).
MAX_PARSE_BYTES = 256 * 1024**2


class ToolProblem(Exception):
    """A tool call that cannot be answered: one line, saying what to do instead."""


class Toolbox:
    """The tools over the given roots; ``settings`` are the thresholds (a site's ``--config`` read in)."""

    def __init__(self, roots: Roots, settings: Settings | None = None, jobs: int | None = None) -> None:
        self.roots = roots
        self.settings = settings
        self.jobs = jobs
        self._analyses: OrderedDict[tuple[str, ...], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    # --- analyze and finding -------------------------------------------------------------------------

    def analyze(self, paths: Sequence[str], top: int = TOP_FINDINGS) -> dict[str, Any]:
        """The summary document (docs/summary.schema.json) of an analysis of the paths."""
        with _problems():
            return summarize(self._analysis(self._inputs(paths)), top)

    def finding(self, fingerprint: str, paths: Sequence[str] | None = None) -> dict[str, Any]:
        """One finding of an analysis made in this session (or of ``paths``, analyzed when not yet),
        with every evidence line; a fingerprint may be given by its first 8 or more characters."""
        with _problems():
            wanted = fingerprint.strip().lower()
            if len(wanted) < 8:
                raise ToolProblem(f"give at least 8 characters of the fingerprint (got {fingerprint!r})")
            with self._lock:  # oldest first: a fingerprint found again is taken from the latest analysis
                documents = list(self._analyses.values())
            if paths:
                key = tuple(str(p) for p in self._inputs(paths))
                with self._lock:
                    known = self._analyses.get(key)
                documents = [known or self._analysis([Path(k) for k in key])]
            matches = {
                f["fingerprint"]: f
                for doc in documents
                for f in doc["findings"]
                if f["fingerprint"].startswith(wanted)
            }
            if not matches:
                where = "the analysis of those paths" if paths else "the analyses of this session"
                raise ToolProblem(
                    f"no finding {fingerprint} in {where}: call analyze first (its findings.top[] carry"
                    " the fingerprints), or give the paths it was analyzed from"
                )
            if len(matches) > 1:
                raise ToolProblem(
                    f"{fingerprint} is the start of {len(matches)} fingerprints; give more of it"
                    f" ({', '.join(sorted(m[:12] for m in matches))})"
                )
            found = dict(next(iter(matches.values())))
            evidence = found.get("evidence") or []
            found["evidence_total"] = len(evidence)
            if len(evidence) > MAX_EVIDENCE:
                found["evidence"] = evidence[:MAX_EVIDENCE]
                found["more"] = "`hptriage analyze PATH... --json FILE` holds every evidence line"
            return found

    def _analysis(self, paths: list[Path]) -> dict[str, Any]:
        """The findings document ``analyze --json`` writes for these paths (analyzed anew each time)."""
        from analyzer.pipeline import analyze
        from reports.findings_json import dumps

        data = analyze(paths, self._settings(), jobs=self.jobs)
        document: dict[str, Any] = json.loads(dumps(data))
        key = tuple(str(p) for p in paths)
        with self._lock:
            self._analyses.pop(key, None)
            self._analyses[key] = document
            while len(self._analyses) > KEPT_ANALYSES:
                self._analyses.popitem(last=False)
        return document

    def plan(
        self,
        paths: Sequence[str],
        max_age_hours: float | None = None,
        history_db: str | None = None,
        cluster_name: str | None = None,
    ) -> dict[str, Any]:
        """The remediation plan of an analysis of the paths, as ``hptriage analyze --plan FILE`` writes it
        (docs/plan.schema.json): text to review; nothing is run.  ``max_age_hours``: the evidence age a
        disruptive action may rest on (None: the thresholds' [plan] value; 0: not checked)."""
        from analyzer.pipeline import analyze
        from analyzer.plan.build import build, options
        from reports.plan_json import document

        with _problems():
            inputs = self._inputs(paths)
            history = None
            if history_db is not None:
                from analyzer.history.repeats import earlier_findings

                con = _read_store(self._existing(history_db))
                try:
                    data = analyze(inputs, self._settings(), jobs=self.jobs)
                    history = earlier_findings(con, data.nodes)
                finally:
                    con.close()
            else:
                data = analyze(inputs, self._settings(), jobs=self.jobs)
            hours: float | None | str = "default" if max_age_hours is None else (max_age_hours or None)
            plan = build(
                data, options(self._settings(), max_age_hours=hours, cluster_name=cluster_name), history
            )
            listed = " ".join(str(p) for p in inputs)
            return _fitted(_plain(document(plan)), f"`hptriage analyze {listed} --plan FILE`")

    # --- parse and rules ------------------------------------------------------------------------------

    def parse(self, path: str, kind: str | None = None, limit: int = PARSE_RECORDS) -> dict[str, Any]:
        """The records one parser makes of one raw file, as ``hptriage parse`` prints them."""
        import parsers

        with _problems():
            file = self._existing(path)
            if file.is_dir():
                raise ToolProblem(f"{path} is a directory: parse reads one raw file; give bundles to analyze")
            if kind is None:
                from analyzer.intake import foreign

                source = foreign.detect(file)
                if source is not None:
                    raise ToolProblem(
                        f"{path} is a {source}: give it to analyze, which reads every file in it"
                    )
            if file.stat().st_size > MAX_PARSE_BYTES:
                raise ToolProblem(f"{path} is over {MAX_PARSE_BYTES // 1024**2} MiB: not parsed")
            text = parsers.text_of(file.read_bytes())
            detected = kind is None
            if kind is None:
                kind = parsers.detect_kind(text)
                if kind is None:
                    raise ToolProblem(
                        f"could not recognise the format of {path}; name it with kind (the kinds are listed"
                        " by `hptriage parse --list` and in docs/bundle-format.md)"
                    )
            elif kind not in parsers.KINDS:
                near = difflib.get_close_matches(kind, parsers.KINDS, n=3)
                raise ToolProblem(
                    f"unknown kind {kind!r}" + (f"; did you mean {', '.join(near)}?" if near else "")
                )
            if kind not in parsers.WHOLE_FILE_KINDS and (too_long := parsers.long_line(text)):
                raise ToolProblem(f"{path}: not parsed: line {too_long[0]} is {too_long[1]} characters long")
            try:
                result = parsers.parse(kind, text, filename=str(file))
            except parsers.NoData:
                result = parsers.ParseResult()
            except parsers.ParserFailure as exc:
                raise ToolProblem(f"{path}: not parsed as {kind}: {exc}") from exc
            tables = result.table_rows()
            records = [{"table": t, **row} for t, rows in tables.items() for row in rows]
            limit = max(0, min(limit, MAX_PARSE_RECORDS))
            issues = [{"line": i.line_no, "reason": i.reason} for i in result.issues]
            answer = {
                "path": str(file),
                "kind": kind,
                "detected": detected,
                "tables": {t: len(rows) for t, rows in tables.items()},
                "records_total": len(records),
                "records": records[:limit],
                "issues_total": len(issues) + result.issues_dropped,
                "issues": issues[:20],
            }
            if len(records) > limit:
                answer["more"] = f"`hptriage parse {file} --kind {kind}` prints all {len(records)} records"
            return _plain(answer)

    def rules(self, rule: str | None = None) -> dict[str, Any]:
        """The rule catalog: one line per rule, or in full (thresholds, route, inputs) for the rules whose
        id is ``rule``, or else every rule of the area it names (``gpu.``, ``fs``)."""
        from analyzer.judge.rule_catalog import rule_catalog

        with _problems():
            catalog = rule_catalog(self._settings())
            if rule is None:
                return {
                    "total": len(catalog),
                    "rules": [
                        {
                            "rule": r["rule"],
                            "severity": r["severity"],
                            "title": r["title"],
                            "owner": r["route"]["owner"],
                        }
                        for r in catalog
                    ],
                    "more": "rules(rule) gives a rule (or every rule of an area: 'gpu.', 'fs.') in full:"
                    " thresholds with units and sources, inputs, route",
                }
            chosen = [r for r in catalog if r["rule"] == rule] or [
                r for r in catalog if r["rule"].startswith(rule.rstrip(".") + ".")
            ]
            if not chosen:
                near = difflib.get_close_matches(rule, [r["rule"] for r in catalog], n=5, cutoff=0.4)
                raise ToolProblem(
                    f"no rule {rule!r}"
                    + (f"; close: {', '.join(near)}" if near else "")
                    + "; rules() lists them"
                )
            return _fitted({"total": len(chosen), "rules": chosen}, "`hptriage rules --format json`")

    # --- history and diff -------------------------------------------------------------------------------

    def history(self, db: str, node: str | None = None) -> dict[str, Any]:
        """Per node, findings over time in a history store (``hptriage history --db DB --json``)."""
        from analyzer.history.query import history, known_nodes

        with _problems():
            store = self._existing(db)
            con = _read_store(store)
            try:
                if node is not None:
                    known = known_nodes(con)
                    if node not in known:
                        near = difflib.get_close_matches(node, known, n=5, cutoff=0.5) or known[:5]
                        raise ToolProblem(
                            f"no node {node!r} in {db}; nodes it holds include {', '.join(near)}"
                        )
                data = history(con, node)
            finally:
                con.close()
            return _fitted(_history_json(data), f"`hptriage history --db {store} --json FILE`")

    def diff(self, old: str, new: str, db: str | None = None) -> dict[str, Any]:
        """What changed between two snapshots: two bundles or cluster folders, or with ``db`` two
        snapshots of a history store (ids or their start, dates, 'latest', 'previous')."""
        from analyzer.history.query import diff, resolve_snapshot

        with _problems():
            if db is not None:
                store = self._existing(db)
                con = _read_store(store)
                try:
                    data = diff(con, *(_looked_up(resolve_snapshot, con, ref) for ref in (old, new)))
                finally:
                    con.close()
                how = f"`hptriage diff --db {store} {old} {new} --json FILE`"
            else:
                sides = [self._existing(old), self._existing(new)]
                data = self._diff_paths(sides[0], sides[1])
                how = f"`hptriage diff {sides[0]} {sides[1]} --json FILE`"
            return _fitted(_history_json(data), how)

    def _diff_paths(self, old: Path, new: Path) -> dict[str, Any]:
        """Each side becomes a snapshot of a scratch store (removed after), as ``hptriage diff`` does."""
        from analyzer.history.ingest import StoreError, ingest, open_store
        from analyzer.history.query import diff

        work = Path(tempfile.mkdtemp(prefix="hptriage-diff-"))
        try:
            store = work / "diff.duckdb"
            ids = []
            for side in (old, new):
                try:
                    results = ingest([side], store, self.jobs, self._settings())
                except StoreError as exc:
                    raise ToolProblem(str(exc)) from exc
                if len(results) > 1:
                    held = ", ".join(f"{r.cluster} ({r.folder})" for r in results)
                    raise ToolProblem(
                        f"{side} holds {len(results)} snapshots: {held}; give diff one cluster folder per side"
                    )
                ids.append(str(results[0].snapshot_id))
            con = open_store(store, create=False)
            try:
                return diff(con, ids[0], ids[1])
            finally:
                con.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)

    # --- redact -----------------------------------------------------------------------------------------

    def redact(
        self, paths: Sequence[str], out: str, map_path: str | None = None, mask_serials: bool = False
    ) -> dict[str, Any]:
        """Redacted copies of the bundles into ``out`` (new or empty, under a root), one mapping for them
        all, then checked: no original value of the map may be left in ``out``."""
        from analyzer.redact.bundles import RedactError, default_map_path, verify
        from analyzer.redact.bundles import redact as run_redact

        with _problems():
            inputs = self._inputs(paths)
            target = self.roots.check(out)
            mapping = self.roots.check(map_path) if map_path else default_map_path(target)
            if map_path is None:
                try:
                    self.roots.check(mapping)
                except OutsideRoots as exc:
                    raise ToolProblem(
                        f"the map would be written to {mapping}, outside the roots: give map_path under a root"
                        " (outside out)"
                    ) from exc
            try:
                report = run_redact(inputs, target, mapping, mask_serials=mask_serials)
            except RedactError as exc:
                raise ToolProblem(str(exc)) from exc
            leaks = verify(target, mapping)
            return {
                "out": str(target),
                "map": str(mapping),
                "bundles": report.bundles,
                "refused": report.refused[:20],
                "errors": report.errors[:20],
                "leaks": len(leaks),
                "leaks_where": [f"a {category} value in {where}" for category, where in leaks[:20]],
                "next": "analyze the redacted copy to check its findings; attach only out to a case, and keep"
                " the map (it undoes the redaction and lines up later runs) where it is",
            }

    # --- shared -----------------------------------------------------------------------------------------

    def _inputs(self, paths: Sequence[str]) -> list[Path]:
        if not paths:
            raise ToolProblem("give at least one path: a node bundle, a cluster folder or a folder of them")
        return [self._existing(p) for p in paths]

    def _existing(self, path: str) -> Path:
        full = self.roots.check(path)
        if not full.exists():
            raise ToolProblem(f"{path}: no such file or directory (under {self.roots.describe()})")
        return full

    def _settings(self) -> Settings:
        if self.settings is None:
            from analyzer.judge.settings import load_settings

            self.settings = load_settings()
        return self.settings


@contextmanager
def _problems() -> Iterator[None]:
    """The errors a user can act on become one ToolProblem line; anything else passes (a bug)."""
    try:
        yield
    except ToolProblem:
        raise
    except OutsideRoots as exc:
        raise ToolProblem(str(exc)) from exc
    except HptriageError as exc:
        raise ToolProblem(exc.format_message()) from exc
    except OSError as exc:
        raise ToolProblem(f"{exc.filename or 'input'}: {exc.strerror or exc}") from exc


def _read_store(path: Path) -> duckdb.DuckDBPyConnection:
    """A history store opened read-only (``hptriage history`` would create or migrate one)."""
    import duckdb

    from analyzer.history.ingest import SCHEMA_VERSION

    if path.is_dir():
        raise ToolProblem(f"{path} is a directory, not a history store file")
    try:
        con = duckdb.connect(str(path), read_only=True)
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    except duckdb.Error as exc:
        raise ToolProblem(f"cannot open {path}: {str(exc).splitlines()[0]}") from exc
    if "store_meta" not in tables:
        con.close()
        raise ToolProblem(
            f"{path} is not an hptriage history store (stores are made with `hptriage ingest PATH... --db FILE`)"
        )
    row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None or int(row[0]) != SCHEMA_VERSION:
        con.close()
        raise ToolProblem(
            f"{path} has store schema {row[0] if row else 'unknown'}; this hptriage reads schema"
            f" {SCHEMA_VERSION}: run `hptriage history --db {path}` once (it migrates an older store)"
        )
    return con


def _looked_up(resolve: Callable[[Any, str], str], con: duckdb.DuckDBPyConnection, ref: str) -> str:
    try:
        return resolve(con, ref)
    except LookupError as exc:
        raise ToolProblem(str(exc.args[0] if exc.args else exc)) from exc


def _history_json(data: dict[str, Any]) -> dict[str, Any]:
    """The history or diff as ``--json`` writes it (times in ISO form)."""
    from reports.history import dumps

    loaded: dict[str, Any] = json.loads(dumps(data))
    return loaded


def _fitted(doc: dict[str, Any], how: str) -> dict[str, Any]:
    """The document cut to the budget; when something was cut, ``truncated`` says from which lists (and
    how long they were) and ``more`` which command gives it whole."""
    small, cut = fit(doc)
    if cut:
        small["truncated"] = cut
        small["more"] = f"{how} gives it whole"
    return dict(small)


def _plain(value: T) -> T:
    """Rows as JSON carries them (a timestamp as its text, as ``hptriage parse`` prints it)."""
    plain: T = json.loads(json.dumps(value, default=str))
    return plain
