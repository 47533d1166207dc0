"""The ``hptriage`` command line: thin click commands over the analyzer modules.

Exit codes: 0 analysis done; 1 findings at or above --fail-on; 2 usage error (an option, argument or
file that cannot be used, named); 3 no usable bundle in the input; 4 internal error; 5 analysis done but
some input could not be read.  Errors are one line on stderr; tracebacks only with --debug.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from analyzer import __version__
from analyzer.errors import (
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_UNREAD_INPUT,
    EXIT_USAGE,
    HptriageError,
    InternalError,
    UsageProblem,
    no_usable_bundle,
)

if TYPE_CHECKING:  # imported where used: the CLI starts without the analysis stack
    import duckdb

    from analyzer.intake.load import LoadSummary
    from analyzer.intake.read_node import ParsedFile
    from analyzer.judge.settings import Settings
    from analyzer.model.plan import Plan
    from analyzer.model.report_data import ReportData

EXIT_CODES_HELP = """\b
Exit codes:
  0  analysis done (no findings at or above --fail-on)
  1  findings at or above --fail-on
  2  usage error (an option, argument or file that cannot be used: named)
  3  no usable bundle in the input
  4  internal error
  5  analysis done, but some input could not be read (each is named;
     1 takes precedence when --fail-on is met)
"""

SEVERITY_ORDER = ("critical", "warning", "info")


class _NeverRaised(click.UsageError):
    """Stands for NoArgsIsHelpError where click has none (8.1 printed the help itself, exit 0)."""


#: what click (8.2 and later) raises for a group run with no command
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(click.exceptions, "NoArgsIsHelpError", _NeverRaised)


class _Group(click.Group):
    """Every error ends in one line on stderr and a documented exit code: a usage error (a bad option
    or argument, as click finds it) 2, an HptriageError its own, anything else 4 (internal; the
    traceback only with --debug)."""

    def main(  # noqa: D102
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,  # always False below: errors are shown here
        **extra: Any,
    ) -> Any:
        debug = "--debug" in (sys.argv[1:] if args is None else list(args))
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:  # 'hptriage' alone: the help, as --help prints it (click < 8.2 too)
            assert exc.ctx is not None
            click.echo(exc.ctx.get_help(), color=exc.ctx.color)
            sys.exit(0)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"hptriage: error: {_one_line(exc.format_message())}{where}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            if isinstance(exc, StdoutUnwritable):  # what is still buffered goes nowhere at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            click.echo("hptriage: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            if exc.errno != errno.EPIPE:  # a reader that stopped reading (| head) is no error
                if debug:
                    raise
                if (problem := _stdout_error(exc)) is None:
                    _internal(exc)
                else:
                    problem.show()
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0 if exc.errno == errno.EPIPE else EXIT_USAGE)
        except Exception as exc:
            if debug:
                raise
            _internal(exc)
        sys.exit(code if isinstance(code, int) else 0)


def _internal(exc: BaseException) -> None:
    click.echo(
        f"hptriage: error: internal error: {type(exc).__name__}: {_one_line(str(exc))}"
        " (run 'hptriage --debug ...' for the traceback)",
        err=True,
    )
    sys.exit(EXIT_INTERNAL)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Output(click.Path):
    """An output the user names (every --json, --html, --db, -o ... of every command), checked when the
    option is read, before any work: one that cannot be written is a usage error naming the option, the
    path and why (exit 2), never a failure after the analysis.  Folders missing above it are fine: they
    are made when it is written.  ``folder``: the output is a folder; ``beside``: a file that also needs
    its folder writable (DuckDB writes a .wal beside the database; a map is replaced atomically)."""

    def __init__(self, folder: bool = False, beside: bool = False, name: str | None = None) -> None:
        super().__init__(file_okay=not folder, dir_okay=folder, path_type=Path)
        self.folder, self.beside = folder, beside
        if name:
            self.name = name  # the metavar shown by --help (PATH rather than DIRECTORY)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = value if isinstance(value, Path) else Path(os.fsdecode(value))
        label = max(param.opts, key=len) if param is not None and param.opts else "output"
        why = unwritable(path, folder=self.folder, beside=self.beside)
        if why:
            raise UsageProblem(f"cannot write {label} {path}: {why}")
        return path


class _Duration(click.ParamType):
    """A duration in hours: ``24h``, ``90m``, ``2d``, ``3600s`` or a plain number of hours; ``off`` is None
    (not checked)."""

    name = "DURATION"
    _UNITS = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "d": 24.0}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, float):
            return value
        text = str(value).strip().lower()
        if text in ("off", "none", "no"):
            return None
        unit = text[-1] if text and text[-1] in self._UNITS else "h"
        number = text[:-1] if text and text[-1] in self._UNITS else text
        try:
            hours = float(number) * self._UNITS[unit]
        except ValueError:
            self.fail(f"{value!r} is no duration: give 24h, 90m, 2d or off", param, ctx)
        if hours <= 0:
            self.fail(f"{value!r}: give a duration above 0, or off", param, ctx)
        return hours


def unwritable(path: Path, folder: bool = False, beside: bool = False) -> str | None:
    """Why ``path`` cannot be written as an output, or None when it can; nothing the user has is
    changed: an existing file is opened for writing without truncating it, a folder is tried by making
    a file in it and removing it at once.

    >>> unwritable(Path("/proc/no-such/report.json"))
    '/proc: no new file can be made there'
    >>> unwritable(Path("/"), folder=False)
    'it is a directory'
    """
    import stat

    try:
        mode: int | None = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as exc:
        return exc.strerror or str(exc)
    if mode is not None:
        if folder:
            return _no_new_file(path, path) if stat.S_ISDIR(mode) else "it exists and is not a directory"
        if stat.S_ISDIR(mode):
            return "it is a directory"
        if stat.S_ISREG(mode):
            try:
                os.close(os.open(path, os.O_WRONLY))  # no O_TRUNC: the file is left as it is
            except OSError as exc:
                return exc.strerror or str(exc)
        elif not os.access(path, os.W_OK):  # /dev/stdout, a pipe: written as they are
            return "not writable"
        if not beside:
            return None
    above = path.absolute().parent
    while True:  # the nearest folder above that exists: the missing ones are made in it
        try:
            mode = above.stat().st_mode
            break
        except (FileNotFoundError, NotADirectoryError):
            if above.parent == above:
                return "no directory above it exists"
            above = above.parent
        except OSError as exc:
            return f"{above}: {exc.strerror or exc}"
    if not stat.S_ISDIR(mode):
        return f"{above} is not a directory"
    return _no_new_file(above, path)


def _no_new_file(folder: Path, target: Path) -> str | None:
    """Why no file can be made in ``folder`` (said of ``target``), or None: tried, then removed."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".hptriage-write-check-", dir=folder)
    except OSError as exc:  # /proc answers ENOENT for a file it will not make
        why = "no new file can be made there" if exc.errno == errno.ENOENT else exc.strerror or str(exc)
        return why if folder == target else f"{folder}: {why}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def _distinct_outputs(inputs: Sequence[str | Path], outputs: dict[str, Path | None]) -> None:
    """No output may be one of the inputs (it would be overwritten), nor may two options name one file
    (one would be lost)."""
    given = [Path(p).resolve() for p in inputs if "://" not in str(p)]
    seen: dict[Path, str] = {}
    for label, path in outputs.items():
        if path is None:
            continue
        key = path.resolve()
        if key in given:
            raise UsageProblem(
                f"{label} {path} is one of the inputs: it would be overwritten; give another path"
            )
        if key in seen and (key.is_file() or not key.exists()):
            raise UsageProblem(f"{seen[key]} and {label} both name {path}: give each output its own file")
        seen[key] = label


def _duckdb_io_error(exc: BaseException) -> bool:
    """Whether DuckDB failed on a file (not on a query), without importing DuckDB."""
    return "duckdb" in type(exc).__module__ and (
        "IO Error" in str(exc) or "IOException" in type(exc).__name__
    )


class StdoutUnwritable(UsageProblem):
    """Standard output cannot be written (redirected to a full disk, /dev/full): an output too."""


def _stdout_error(exc: BaseException) -> StdoutUnwritable | None:
    """The error for an OSError raised writing standard output (one of the innermost calls holds a
    stream on file descriptor 1: click.echo's, a csv writer's caller's), else None; a reader gone away
    (EPIPE) is no error and is not asked here."""
    if not isinstance(exc, OSError) or exc.filename is not None or exc.errno == errno.EPIPE:
        return None
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if not any(_is_stdout(v) for frame in frames[-3:] for v in frame.f_locals.values()):
        return None
    return StdoutUnwritable(f"cannot write standard output: {exc.strerror or exc}")


def _is_stdout(value: object) -> bool:
    """Whether a value is a stream writing to file descriptor 1."""
    if value is sys.stdout or value is sys.__stdout__:
        return True
    fileno = getattr(value, "fileno", None)
    if not callable(fileno) or not hasattr(value, "write"):
        return False
    try:
        return bool(fileno() == 1)
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return False


def _output_error(exc: BaseException, outputs: dict[str, Path | None]) -> UsageProblem | None:
    """An error met while writing an output (disk full, a folder gone read-only, DuckDB unable to write
    its file; standard output too) as the user's: 'cannot write OPTION PATH: why'; None when it is
    about no output."""
    if (stdout := _stdout_error(exc)) is not None:
        return stdout
    for label, path in outputs.items():
        if path is None:
            continue
        where = os.path.abspath(path)
        if isinstance(exc, OSError):
            names = [os.path.abspath(os.fsdecode(n)) for n in (exc.filename, exc.filename2) if n]
            if any(n == where or n.startswith(where.rstrip("/") + "/") for n in names):
                return UsageProblem(f"cannot write {label} {path}: {exc.strerror or exc}")
        elif _duckdb_io_error(exc) and (str(path) in str(exc) or where in str(exc)):
            why = str(exc).splitlines()[0].removeprefix("IO Error: ")
            return UsageProblem(f"cannot write {label} {path}: {why}")
    return None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="hptriage")
@click.option("--debug", is_flag=True, help="Show Python tracebacks on internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Offline triage of GPU-cluster diagnostic bundles (SageMaker HyperPod first).

    \b
    Example:
      hptriage analyze sample_bundles/xid-ecc-3node/bundle --html report.html
    """
    ctx.obj = {"debug": debug}


@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "json_out", type=_Output(), help="Write findings JSON.")
@click.option("--html", "html_out", type=_Output(), help="Write the HTML report.")
@click.option("--pdf", "pdf_out", type=_Output(), help="Write the PDF report.")
@click.option(
    "--md",
    "md_out",
    type=_Output(),
    help="Write the Markdown report (for pasting into a ticket).",
)
@click.option("--db", "db_path", type=_Output(beside=True), help="Keep the DuckDB database.")
@click.option(
    "--fail-on",
    type=click.Choice(["critical", "warning", "never"]),
    default="never",
    show_default=True,
    help="Exit 1 when a finding at or above this severity exists.",
)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option(
    "--paper",
    type=click.Choice(["A4", "Letter"], case_sensitive=False),
    default="A4",
    show_default=True,
    help="Page size of the PDF (and of printing the HTML).",
)
@click.option("--jobs", type=click.IntRange(1, 256), help="Parallel workers (default: CPU count, max 8).")
@click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Site thresholds (TOML) overriding the defaults.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print no terminal summary and no progress bar.")
@click.option("--verbose", "-v", is_flag=True, help="Unfold every finding and list in the terminal summary.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "summary"]),
    default="text",
    show_default=True,
    help="What goes to stdout: the terminal report, or the summary JSON (docs/summary.schema.json):"
    " verdict, counts, worst nodes, cluster-wide causes and the top findings, sized for an assistant.",
)
@click.option(
    "--top",
    type=click.IntRange(0, 50),
    default=10,
    show_default=True,
    help="Findings shown in full in the summary (--format summary).",
)
@click.option(
    "--plan",
    "plan_out",
    type=_Output(),
    help="Write the remediation plan (JSON, docs/plan.schema.json) and add it to every report: which nodes"
    " to reboot, replace or test and why, as HyperPod requests, Slurm reasons and EKS labels to review"
    " (hptriage runs none of it; docs/plan.md).",
)
@click.option(
    "--plan-max-age",
    type=_Duration(),
    help="Evidence older than this takes no disruptive action in the plan: 24h, 90m, 2d, or off"
    " (default: [plan] max_age_hours, 7 days).",
)
@click.option(
    "--plan-max-share",
    type=click.FloatRange(0, 1, min_open=True),
    help="The most of a cluster or an instance group one wave of the plan takes down, as a fraction"
    " (default: [plan] max_share, 0.1); more is split into waves.",
)
@click.option(
    "--plan-history",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A history store (hptriage ingest --db): a fault back after a reboot is a replace, one back"
    " after several a reboot loop.",
)
@click.option(
    "--plan-cluster",
    help="The HyperPod cluster name or ARN the plan's requests name, where meta.env names none.",
)
@click.pass_context
def analyze(
    ctx: click.Context,
    paths: tuple[Path, ...],
    json_out: Path | None,
    html_out: Path | None,
    pdf_out: Path | None,
    md_out: Path | None,
    db_path: Path | None,
    fail_on: str,
    color: str,
    paper: str,
    jobs: int | None,
    config: Path | None,
    quiet: bool,
    verbose: bool,
    fmt: str,
    top: int,
    plan_out: Path | None,
    plan_max_age: float | None,
    plan_max_share: float | None,
    plan_history: Path | None,
    plan_cluster: str | None,
) -> None:
    """Analyze node bundles, cluster bundles or directories of them.

    \b
    Example:
      hptriage analyze /fsx/hptriage/2026-12-02 --json findings.json --db triage.duckdb
      hptriage analyze /fsx/hptriage/2026-12-02 --plan plan.json --md report.md
    """
    outputs = {
        "--json": json_out, "--html": html_out, "--pdf": pdf_out, "--md": md_out, "--db": db_path,
        "--plan": plan_out,
    }  # fmt: skip
    _distinct_outputs(paths, outputs)
    source = click.get_current_context().get_parameter_source
    given = [f"--plan-{o}" for o in ("max-age", "max-share", "history", "cluster")
             if source(f"plan_{o.replace('-', '_')}") == click.core.ParameterSource.COMMANDLINE]  # fmt: skip
    if given and plan_out is None:
        raise UsageProblem(f"{', '.join(given)} shape the plan: give --plan FILE to write one")
    with _user_errors(ctx, outputs=outputs):
        if pdf_out:  # a missing Pango is said before the analysis, not after it
            from reports.render import pdf_problem

            if problem := pdf_problem():
                raise UsageProblem(problem)
        settings = _settings(config)
        data = _run_analysis(
            list(paths), db_path, jobs, settings, charts=bool(html_out or pdf_out), quiet=quiet
        )
        if plan_out:
            data.plan = _plan(data, settings, plan_max_age, plan_max_share, plan_history, plan_cluster)
            from reports.plan_json import dumps as plan_dumps

            _write(plan_out, plan_dumps(data.plan))
        if json_out:
            from reports.findings_json import dumps

            _write(json_out, dumps(data))
        if md_out:
            from reports.markdown import render as render_md

            _write(md_out, render_md(data))
        if html_out or pdf_out:
            from reports.render import render_html, write_pdf

            html = render_html(data, paper=paper)
            if html_out:
                _write(html_out, html)
            if pdf_out:
                try:
                    write_pdf(html, pdf_out)
                except OSError as exc:
                    raise UsageProblem(f"cannot write {pdf_out}: {exc.strerror or exc}") from exc
        if fmt == "summary":
            from analyzer.assistants.summary import summarize
            from reports.findings_json import dumps as findings_dumps

            click.echo(json.dumps(summarize(json.loads(findings_dumps(data)), top), indent=2))
        elif not quiet:
            from reports.terminal import write

            write(data, colour_mode=color, verbose=verbose)
    if fail_on != "never":
        limit = SEVERITY_ORDER.index(fail_on)
        if any(SEVERITY_ORDER.index(f.severity.value) <= limit for f in data.findings):
            ctx.exit(EXIT_FINDINGS)
    assert data.verdict is not None  # ReportData computes it when it is not given
    if data.verdict.unread_inputs:
        ctx.exit(EXIT_UNREAD_INPUT)


def _plan(
    data: ReportData,
    settings: Settings,
    max_age: float | None,
    max_share: float | None,
    history_db: Path | None,
    cluster: str | None,
) -> Plan:
    """The remediation plan of an analysis; the options the user gave win over [plan] in the thresholds."""
    from analyzer.plan.build import build, options

    source = click.get_current_context().get_parameter_source("plan_max_age")
    hours: float | None | str = max_age if source == click.core.ParameterSource.COMMANDLINE else "default"
    history = None
    if history_db is not None:
        from analyzer.history.repeats import earlier_findings

        con = _open_store(history_db)
        try:
            history = earlier_findings(con, data.nodes)
        finally:
            con.close()
    return build(
        data, options(settings, max_age_hours=hours, max_share=max_share, cluster_name=cluster), history
    )


@contextlib.contextmanager
def _user_errors(
    ctx: click.Context, *usage: type[Exception], outputs: dict[str, Path | None] | None = None
) -> Iterator[None]:
    """Inside a command: the errors listed are the user's (one line, exit 2), an HptriageError keeps its
    own exit code, an error writing one of ``outputs`` (option -> path) is the user's too (exit 2 naming
    it and why), anything else is a bug (one line, exit 4; the traceback with --debug)."""
    try:
        yield
    except usage as exc:
        raise UsageProblem(str(exc)) from exc
    except HptriageError:
        raise
    except Exception as exc:
        if (problem := _output_error(exc, outputs or {})) is not None:
            raise problem from exc
        if ctx.obj.get("debug"):
            raise
        raise InternalError(f"{type(exc).__name__}: {exc} (run with --debug for details)") from exc


def _warn_inputs(summary: LoadSummary) -> None:
    """Say on stderr what the loader did with inputs the user may not expect (results stay on stdout)."""
    from analyzer.pipeline import snapshot_notes

    for line in snapshot_notes(summary):
        click.echo(f"hptriage: note: {line}", err=True)
    for u in summary.unread_inputs:
        click.echo(f"hptriage: warning: not read: {u.path}: {u.reason}", err=True)
    for d in summary.duplicates:
        click.echo(f"hptriage: warning: {d['path']} is identical to {d['same_as']}: analyzed once", err=True)
    for c in summary.node_conflicts:
        shown = ", ".join(f"{b['path']} (as {b['shown_as']})" for b in c["bundles"])
        click.echo(f"hptriage: warning: several bundles claim node {c['node']}: {shown}", err=True)


def _settings(config: Path | None) -> Settings:
    from analyzer.judge.settings import SettingsError, load_settings

    try:
        return load_settings(config)
    except SettingsError as exc:
        raise UsageProblem(str(exc)) from exc
    except (OSError, UnicodeDecodeError) as exc:  # a directory, a binary file given as --config
        why = exc.strerror if isinstance(exc, OSError) else "not a text (TOML) file"
        raise UsageProblem(f"cannot read --config {config}: {why}") from exc


def _run_analysis(
    paths: list[Path],
    db_path: Path | None,
    jobs: int | None,
    settings: Settings,
    charts: bool = False,
    quiet: bool = False,
) -> ReportData:
    from analyzer.pipeline import analyze
    from analyzer.store.tables import keep_pandas_out

    if _OWN_PROCESS:  # the console script's process: pyarrow need not import pandas (54 MiB, 0.3 s)
        keep_pandas_out()
    if db_path is not None and db_path.exists():
        _replaceable(db_path)
        db_path.unlink()
        db_path.with_name(db_path.name + ".wal").unlink(missing_ok=True)
    if db_path is not None:
        db_path.parent.mkdir(parents=True, exist_ok=True)  # as every other output's folder is made
    return analyze(
        paths,
        settings,
        db_path=db_path,
        jobs=jobs,
        progress=None if quiet else _progress(),
        charts=charts,
        on_loaded=_warn_inputs,
    )


def _replaceable(db_path: Path) -> None:
    """analyze --db replaces the file: only an earlier analysis database (or an empty file) may go."""
    import duckdb

    try:
        with open(db_path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise UsageProblem(f"cannot use --db {db_path}: {exc.strerror}") from exc
    if not head:
        return
    if head[8:12] != b"DUCK":
        raise UsageProblem(
            f"--db {db_path} exists and is not a DuckDB database: not replaced; give a new file"
        )
    try:
        con = duckdb.connect(str(db_path), read_only=True)
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        con.close()
    except duckdb.Error as exc:
        raise UsageProblem(f"cannot use --db {db_path}: {str(exc).splitlines()[0]}") from exc
    if "store_meta" in tables:
        raise UsageProblem(
            f"--db {db_path} is a history store: analyze would replace it; give another file"
            " (bundles are added to a store with 'hptriage ingest')"
        )


def _progress() -> Callable[[int, int], None] | None:
    """A progress bar on stderr while bundles are read (nodes done / total, nodes/s, time left), only
    on a terminal."""
    if not sys.stderr.isatty():
        return None
    state: dict[str, Any] = {}

    def rate(_: object) -> str:
        elapsed = time.monotonic() - state["start"]
        done = state["bar"].pos if "bar" in state else 0
        return f"{done / elapsed:.1f} nodes/s" if elapsed > 0 and done else ""

    def show(done: int, total: int) -> None:
        if "bar" not in state:
            state["start"] = time.monotonic()
            state["bar"] = click.progressbar(
                length=total,
                label="reading bundles",
                file=sys.stderr,
                show_pos=True,
                show_eta=True,
                item_show_func=rate,
            )
            state["bar"].__enter__()
        state["bar"].update(1, current_item=done)
        if done == total:
            state["bar"].__exit__(None, None, None)

    return show


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageProblem(f"cannot write {path}: {exc.strerror}") from exc


@cli.command()
@click.argument("file", required=False, type=click.Path(allow_dash=True, path_type=Path))
@click.option("--kind", help="The raw format (see --list); detected from the content when absent.")
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("--list", "list_kinds", is_flag=True, help="List the kinds and exit.")
@click.option(
    "--fields",
    help="The queried fields of headerless output (nvidia-smi --query-gpu=... --format=csv,noheader), comma-separated.",
)
def parse(file: Path | None, kind: str | None, fmt: str, list_kinds: bool, fields: str | None) -> None:
    """Print the records one parser makes of one raw file (like jc).

    \b
    Example:
      nvidia-smi -q | hptriage parse - --kind nvidia-smi-q
      hptriage parse cmd/dmesg.txt --format csv
    """
    import parsers

    if list_kinds:
        from analyzer.intake import foreign

        for k in parsers.available_kinds():
            click.echo(parsers.describe_kind(k))
        click.echo("\nInputs other tools write (analyze, ingest, diff and redact read them; parse FILE shows")
        click.echo("what is read of one; detected by content, docs/inputs.md):")
        for line in foreign.describe():
            click.echo(line)
        return
    if file is None:
        raise UsageProblem("give a FILE (or - for standard input), or --list")
    if kind is None and str(file) != "-" and _may_be_foreign(file):
        from analyzer.intake import foreign

        source = foreign.detect(file)
        if source is not None:
            _parse_foreign(source, file, fmt)
            return
    if file.is_dir():
        raise UsageProblem(f"{file} is a directory: give one file (or an input another tool wrote)")
    text = _read_input(file)
    if kind is None and not text.strip():
        raise UsageProblem(f"{'standard input' if str(file) == '-' else file} is empty: nothing to parse")
    if kind is None:
        kind = parsers.detect_kind(text)
        if kind is None:
            raise UsageProblem(f"could not recognise the format of {file}; name it with --kind (see --list)")
    elif kind not in parsers.KINDS:
        raise UsageProblem(f"unknown kind {kind!r}; see 'hptriage parse --list'")
    if kind not in parsers.WHOLE_FILE_KINDS and (too_long := parsers.long_line(text)):
        raise UsageProblem(f"{file}: not parsed: line {too_long[0]} is {too_long[1]} characters long")
    if fields and kind != "nvidia-smi-csv":
        raise UsageProblem(f"--fields applies to headerless CSV output, not to kind {kind!r}")
    command = "--query-gpu=" + fields.replace(" ", "") if fields else None
    try:
        result = parsers.parse(kind, text, command=command, filename=None if fields else str(file))
    except parsers.NoData:
        result = parsers.ParseResult()
    except parsers.ParserFailure as exc:
        raise UsageProblem(f"{file}: not parsed as {kind}: {exc}") from exc
    for issue in result.issues:
        click.echo(f"{file}:{issue.line_no}: line not understood: {issue.reason}", err=True)
    if result.issues_dropped:
        click.echo(f"{file}: {result.issues_dropped} more lines not understood (not listed)", err=True)
    if fmt == "json":
        records = [{"table": t, **row} for t, rows in result.table_rows().items() for row in rows]
        click.echo(json.dumps(records, indent=2, default=str))
    else:
        _write_csv(result.table_rows())


#: How the inputs other tools write begin: archives (gzip, xz, bzip2, zip), a bug report's underscore
#: line, a JSON document (DCGM's mndiag); a tar's magic lies at offset 257.
_FOREIGN_HEADS = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"PK\x03\x04", b"_" * 44, b"{")


def _may_be_foreign(path: Path) -> bool:
    """Whether a path can be an input another tool wrote, by its first bytes: only then is the
    foreign-input machinery imported (``parse`` of one tool's output stays as quick to start as jc)."""
    if path.is_dir():
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \r\n\t").startswith(_FOREIGN_HEADS) or head[257:262] == b"ustar"


def _parse_foreign(source: str, file: Path, fmt: str) -> None:
    """``parse`` of an input another tool wrote: each file it is laid out as, read by the node reader
    analyze uses (its limits and guards), every record tagged with its node, kind and file; what could
    not be read goes to stderr."""
    from analyzer.pipeline import convert_input, read_extra_files, read_node_files

    tables: dict[str, list[dict[str, Any]]] = {}

    def keep(node: str, parsed: ParsedFile, where: str) -> None:
        for table, records in parsed.table_rows().items():
            tables.setdefault(table, []).extend(
                {"node": node, "kind": parsed.kind, "file": where} | r for r in records
            )

    with tempfile.TemporaryDirectory(prefix="hptriage-parse-") as work:
        converted = convert_input(source, file, Path(work) / "input")
        for r in converted.refusals:
            click.echo(f"{file}!{r.path}: not read: {r.reason}", err=True)
        for problem in converted.problems:
            click.echo(f"{file}: {problem}", err=True)
        if not converted.nodes and not converted.extras:
            raise UsageProblem(f"{file}: {source}, but nothing hptriage reads in it: {converted.reason}")
        absent: dict[tuple[str, str], list[str]] = {}  # (node, why) -> kinds
        for node_dir in converted.nodes:
            files: list[ParsedFile] = []
            data = read_node_files(node_dir, str(file), files)
            node = data.node
            for probe in data.probes:
                if not probe["present"]:
                    absent.setdefault((node, probe["note"] or "no output"), []).append(str(probe["kind"]))
            for parsed in sorted(files, key=lambda p: p.path):
                # named as the user knows it: their file and its lines (origins.tsv), else the output
                # the conversion took from their input, said to be so
                origin, first = parsed.origin or ("", 1)
                where = (
                    _users_file(file, origin)
                    if origin
                    else f"{file} ('{parsed.command or parsed.kind}' output)"
                )
                if parsed.error is not None:
                    click.echo(f"{where}: {node}: not parsed as {parsed.kind}: {parsed.error}", err=True)
                    continue
                if parsed.result is None:  # no data
                    continue
                for issue in parsed.result.issues:
                    at = f":{issue.line_no + first - 1}" if origin and issue.line_no else ""
                    conversion = "" if origin else f" (line {issue.line_no} of what the conversion took)"
                    click.echo(f"{where}{at}: line not understood: {issue.reason}{conversion}", err=True)
                if parsed.result.issues_dropped:
                    dropped = parsed.result.issues_dropped
                    click.echo(f"{where}: {dropped} more lines not understood (not listed)", err=True)
                keep(node, parsed, where)
        for (node, why), kinds in sorted(absent.items()):
            click.echo(f"{file}: {node}: {why}: {', '.join(sorted(kinds))}", err=True)
        for extra in converted.extras:
            files = []
            read_extra_files(extra, str(file), files)
            for parsed in sorted(files, key=lambda p: p.path):
                if parsed.result is not None:
                    keep("", parsed, parsed.path)
    click.echo(f"{file}: {source}", err=True)
    if fmt == "json":
        records = [{"table": t, **row} for t, rows in tables.items() for row in rows]
        click.echo(json.dumps(records, indent=2, default=str))
    else:
        _write_csv(tables)


def _users_file(given: Path, origin: str) -> str:
    """An origin (origins.tsv: the input's own name, ``<tarball>!<member>``, or a path inside a folder
    input) as a path the user can open: ``report.log`` -> the path they gave.

    >>> _users_file(Path("case/report.log"), "report.log"), _users_file(Path("s.tar.xz"), "s.tar.xz!dmesg")
    ('case/report.log', 's.tar.xz!dmesg')
    """
    if origin == given.name or origin.startswith(given.name + "!"):
        return str(given) + origin[len(given.name) :]
    return f"{given}/{origin}" if given.is_dir() else origin


def _write_csv(tables: dict[str, list[dict[str, Any]]]) -> None:
    import csv

    names: list[str] = ["table"]
    for rows in tables.values():
        for row in rows:
            names.extend(k for k in row if k not in names)
    stdout = sys.stdout  # a local: an error writing it is known as standard output's (_stdout_error)
    writer = csv.DictWriter(stdout, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for table, rows in tables.items():
        for row in rows:
            writer.writerow({"table": table, **row})


def _read_input(file: Path) -> str:
    import parsers

    try:
        if str(file) == "-":
            return parsers.text_of(sys.stdin.buffer.read())
        return parsers.text_of(file.read_bytes())
    except OSError as exc:
        raise UsageProblem(f"cannot read {file}: {exc.strerror}") from exc


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--config", "config", type=click.Path(dir_okay=False, path_type=Path), help="Site thresholds (TOML)."
)
def rules(fmt: str, config: Path | None) -> None:
    """List the rule catalog with severities, thresholds and routes.

    \b
    Example:
      hptriage rules --format json
    """
    from analyzer.judge.rule_catalog import rule_catalog

    catalog = rule_catalog(_settings(config))
    if fmt == "json":
        click.echo(json.dumps(catalog, indent=2, default=str))
        return
    for r in catalog:
        click.echo(f"{r['rule']:32} {r['severity']:8} {r['title']}")
        needs = ", ".join(r["requires"]) + (
            f" and any of {', '.join(r['requires_any'])}" if r["requires_any"] else ""
        )
        click.echo(f"{'':32} needs {needs}; → {r['route']['owner']} ({r['route']['target']})")
        if r["severity_reason"]:
            click.echo(f"{'':32} why {r['severity']}: {r['severity_reason']}")
        for k, v in r["thresholds"].items():
            unit = f" {v['unit']}" if v.get("unit") else ""
            click.echo(f"{'':32} {k} = {v['value']}{unit}  [{v['source']}]")
        for sig in r.get("signatures", []):
            click.echo(
                f"{'':32} signature {sig['signature']} ({sig['family']}, {sig['severity']}, "
                f"→ {sig['route']['owner']})  [{'; '.join(sig['sources'])}]"
            )


@cli.command()
@click.argument("db", metavar="[DB]")
@click.argument("query", required=False)
@click.option("--parquet", type=click.Path(file_okay=False, path_type=Path),
              help="Query a Parquet dataset (ingest --parquet, export) instead of DB: one view per table.")  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(["text", "csv", "json"]), default="text", show_default=True
)
def sql(db: str, query: str | None, parquet: Path | None, fmt: str) -> None:
    """Run one read-only SQL query on a database kept with --db, a history store, or a Parquet dataset
    (schema: docs/schema.md).

    \b
    Example:
      hptriage analyze sample_bundles/xid-ecc-3node/bundle --db triage.duckdb -q
      hptriage sql triage.duckdb "SELECT node, pci, xid, count(*) FROM kernel_event GROUP BY ALL"
      hptriage sql --parquet /fsx/hptriage-dataset "SELECT rule, count(*) FROM findings GROUP BY ALL"
    """
    import duckdb

    if parquet is not None:
        if query is not None:
            raise UsageProblem("give either DB or --parquet DIR, and one QUERY")
        query, where = db, str(parquet)
        con = _open_store(None, parquet)
    elif query is None:
        raise UsageProblem("give DB and QUERY (or --parquet DIR and QUERY)")
    else:
        where = db
        if not Path(db).is_file():
            raise UsageProblem(f"{db}: no such database file")
    try:
        if parquet is None:
            con = duckdb.connect(db, read_only=True)
        cur = con.execute(query)
        names = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except duckdb.Error as exc:
        raise UsageProblem(f"{where}: {str(exc).splitlines()[0]}") from exc
    if fmt == "json":
        click.echo(json.dumps([dict(zip(names, r, strict=True)) for r in rows], indent=2, default=str))
    elif fmt == "csv":
        import csv

        stdout = sys.stdout  # a local: an error writing it is known as standard output's (_stdout_error)
        writer = csv.writer(stdout, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
    else:
        cells = [names] + [["" if v is None else str(v) for v in r] for r in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(names))]
        for i, row in enumerate(cells):
            click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
            if i == 0:
                click.echo("  ".join("-" * w for w in widths))


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=_Output(folder=True, name="path"), help="An empty or new directory.")
@click.option(
    "--map",
    "map_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The mapping file (original -> token): reused when it exists, so bundles redacted later line up."
    " Default: OUT.map.json beside OUT; never inside OUT.",
)
@click.option(
    "--mask-serials", is_flag=True, help="Also mask GPU serial numbers and UUIDs (kept by default)."
)
@click.option(
    "--verify",
    "verify_dir",
    type=click.Path(exists=True, path_type=Path),
    help="Check a redacted OUT instead: no original value of --map may be left in it (exit 1 if one is).",
)
@click.pass_context
def redact(
    ctx: click.Context,
    paths: tuple[Path, ...],
    out: Path | None,
    map_path: Path | None,
    mask_serials: bool,
    verify_dir: Path | None,
) -> None:
    """Write redacted copies of bundles, consistent across the whole cluster (see docs/security.md).

    \b
    Example:
      hptriage redact /fsx/hptriage/2026-12-02 -o case-1234 --map ~/hptriage-site.map.json
      hptriage redact --verify case-1234 --map ~/hptriage-site.map.json
    """
    from analyzer.redact.bundles import RedactError, default_map_path, verify
    from analyzer.redact.bundles import redact as run_redact

    if verify_dir is not None:
        map_path = map_path or default_map_path(verify_dir)
        if not map_path.is_file():
            raise UsageProblem(f"--verify needs the map the bundles were redacted with: {map_path} not found")
        _check_map(map_path)
        try:
            leaks = verify(verify_dir, map_path)
        except (OSError, ValueError) as exc:  # not the map redact wrote (not JSON, unreadable)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a map written by redact"
            raise UsageProblem(f"cannot read the map {map_path}: {why}") from exc
        for category, where in leaks:
            click.echo(f"hptriage: leak: a {category} value of the map is in {where}", err=True)
        if leaks:
            click.echo(f"{verify_dir}: {len(leaks)} place(s) still hold a value of the map")
            ctx.exit(EXIT_FINDINGS)
        click.echo(f"{verify_dir}: no value of the map found (contents and names, archives opened)")
        return
    if not paths or out is None:
        raise UsageProblem("redact needs PATH... and -o OUT (or --verify OUT)")
    missing = [(str(p), "no such file or directory") for p in paths if not p.exists()]
    if missing:  # nothing is redacted then: the copies must line up as one cluster
        raise no_usable_bundle(missing)
    map_path = map_path or default_map_path(out)
    if map_path.is_file():
        _check_map(map_path)
    if unfit := unwritable(map_path, beside=True):  # checked before any copy is made, like every output
        raise UsageProblem(f"cannot write --map {map_path}: {unfit}")
    _distinct_outputs(paths, {"--out": out, "--map": map_path})
    with _user_errors(ctx, RedactError, outputs={"--out": out, "--map": map_path}):
        report = run_redact(list(paths), out, map_path, mask_serials=mask_serials)
    for line in report.refused:
        click.echo(f"hptriage: warning: not copied: {line}", err=True)
    for line in report.errors:
        click.echo(f"hptriage: warning: {line}", err=True)
    click.echo(
        f"redacted {report.bundles} node bundle(s) into {out}; map: {map_path} (keep it: it undoes the"
        " redaction; check before sending: docs/security.md)"
    )
    if report.refused or report.errors:
        ctx.exit(EXIT_UNREAD_INPUT)


def _check_map(map_path: Path) -> None:
    """A map redact wrote is a JSON object; anything else is named before it is used."""
    try:
        doc = json.loads(map_path.read_bytes())
    except OSError as exc:
        raise UsageProblem(f"cannot read the map {map_path}: {exc.strerror or exc}") from exc
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise UsageProblem(f"cannot read the map {map_path}: not a map written by redact (a JSON object)")


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--db", "db_path", type=_Output(beside=True),
              help="The history store (created when missing).")  # fmt: skip
@click.option("--parquet", "parquet", type=_Output(folder=True),
              help="Write a hive-partitioned Parquet dataset instead (created when missing, appended to).")  # fmt: skip
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Who reads the bundles for --parquet: local processes, or Ray (pip install 'hptriage[ray]').")  # fmt: skip
@click.option("--ray-address", help="The Ray cluster to join (default: a local Ray of --jobs CPUs).")
@click.option("--jobs", type=click.IntRange(1, 256), help="Parallel workers (default: CPU count, max 8).")
@click.option(
    "--config", "config", type=click.Path(dir_okay=False, path_type=Path), help="Site thresholds (TOML)."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def ingest(
    ctx: click.Context,
    paths: tuple[str, ...],
    db_path: Path | None,
    parquet: Path | None,
    engine: str,
    ray_address: str | None,
    jobs: int | None,
    config: Path | None,
    quiet: bool,
) -> None:
    """Add bundles to a history store (--db) or a Parquet dataset (--parquet): facts, findings, rule
    outcomes, bundle and node metadata.

    The same bundle is stored once (by content hash); the same set again adds nothing, unless the rules
    changed since: then its findings are judged again and the rule versions recorded.  With --parquet
    the bundles are read by local processes or on Ray (--engine ray; PATHS may then be object-store
    prefixes such as s3://bucket/hptriage/), and the rules that compare nodes run over the dataset.

    \b
    Example:
      hptriage ingest /fsx/hptriage/2026-12-02 --db history.duckdb
      hptriage ingest /fsx/hptriage/2026-12-* --parquet /fsx/hptriage-dataset --engine ray
    """
    if (db_path is None) == (parquet is None):
        raise UsageProblem("give one of --db FILE (a history store) or --parquet DIR (a Parquet dataset)")
    if parquet is None and (engine != "local" or ray_address):
        raise UsageProblem("--engine ray and --ray-address write a Parquet dataset: give --parquet DIR")
    if parquet is not None:
        _ingest_parquet(ctx, list(paths), parquet, engine, ray_address, jobs, config, quiet)
        return
    from analyzer.history.ingest import StoreError
    from analyzer.history.ingest import ingest as run_ingest

    assert db_path is not None
    _distinct_outputs(paths, {"--db": db_path})
    with _user_errors(ctx, StoreError, outputs={"--db": db_path}):
        db_path.parent.mkdir(parents=True, exist_ok=True)  # as every other output's folder is made
        results = run_ingest(
            [Path(p) for p in paths], db_path, jobs, _settings(config), None if quiet else _progress()
        )
    unread = [u for r in results for u in r.unread]
    for u in unread:
        click.echo(f"hptriage: warning: not read: {u.path}: {u.reason}", err=True)
    for r in results:
        where = f" (cluster {r.cluster}, {r.folder})" if len(results) > 1 else ""
        click.echo(
            f"snapshot {r.snapshot_id}: {r.status}; {r.bundles_new} new bundle(s),"
            f" {r.bundles_known} already in the store; {r.findings} finding(s){where}"
        )
    if unread:
        ctx.exit(EXIT_UNREAD_INPUT)


def _ingest_parquet(
    ctx: click.Context,
    paths: list[str],
    out: Path,
    engine: str,
    ray_address: str | None,
    jobs: int | None,
    config: Path | None,
    quiet: bool,
) -> None:
    from analyzer.fleet.dataset import DatasetError
    from analyzer.fleet.ingest import EngineMissing, ingest_dataset

    _distinct_outputs(paths, {"--parquet": out})
    with _user_errors(ctx, DatasetError, EngineMissing, outputs={"--parquet": out}):
        done = ingest_dataset(
            paths,
            out,
            engine=engine,
            jobs=jobs,
            ray_address=ray_address,
            settings=_settings(config),
            progress=None if quiet else _progress(),
        )
    for path, reason in done.unread:
        click.echo(f"hptriage: warning: not read: {path}: {reason}", err=True)
    for r in done.snapshots:
        where = f" (cluster {r.cluster}, {r.folder})" if len(done.snapshots) > 1 else ""
        click.echo(
            f"snapshot {r.snapshot_id}: {r.status}; {r.bundles_new} new bundle(s),"
            f" {r.bundles_known} already in the dataset; {r.findings} finding(s){where}"
        )
    if done.unread:
        ctx.exit(EXIT_UNREAD_INPUT)


def _open_store(db_path: Path | None, parquet: Path | None = None) -> duckdb.DuckDBPyConnection:
    """The history store (opened read-only: the commands that call this only read it, so a store the
    user may read but not write is read), or the Parquet dataset's tables as views: exactly one."""
    from analyzer.history.ingest import StoreError, open_store

    if (db_path is None) == (parquet is None):
        raise UsageProblem("give one of --db FILE (a history store) or --parquet DIR (a Parquet dataset)")
    if parquet is not None:
        from analyzer.fleet.dataset import DatasetError, open_dataset

        try:
            return open_dataset(parquet)
        except DatasetError as exc:
            raise UsageProblem(str(exc)) from exc
    assert db_path is not None
    try:
        return open_store(db_path, read_only=True)
    except StoreError as exc:
        raise UsageProblem(str(exc)) from exc


_PARQUET_HELP = "A Parquet dataset (ingest --parquet, export) instead of --db."


@cli.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), help="A history store.")
@click.option("--parquet", type=click.Path(file_okay=False, path_type=Path), help=_PARQUET_HELP)
@click.option("--node", help="Only this node.")
@click.option("--since", type=click.DateTime(), help="Only bundles collected since (YYYY-MM-DD).")
@click.option("--json", "json_out", type=_Output(), help="Write the history as JSON.")
@click.option(
    "--html",
    "html_out",
    type=_Output(),
    help="Write an HTML page with a per-node timeline.",
)
@click.option("--verbose", "-v", is_flag=True, help="List every node.")
def history(
    db_path: Path | None,
    parquet: Path | None,
    node: str | None,
    since: Any,
    json_out: Path | None,
    html_out: Path | None,
    verbose: bool,
) -> None:
    """Per node, findings over time (first / last / times seen), repeat offenders first.

    Also recurring Xids on the same GPU across bundles, corrected-ECC counts climbing (per day, across
    bundles), retired pages and remapped rows growing, busbw over time and version changes.

    \b
    Example:
      hptriage history --db history.duckdb --node p5-node-07 --since 2026-11-01
      hptriage history --parquet /fsx/hptriage-dataset --json history.json
    """
    from analyzer.history.query import history as query
    from reports.history import dumps, history_html, history_text, timeline_svg

    con = _open_store(db_path, parquet)
    try:
        if node is not None:
            _known_node(con, db_path or parquet, node)
        data = query(con, node, since)
    finally:
        con.close()
    if json_out:
        _write(json_out, dumps(data))
    if html_out:
        _write(html_out, history_html(data, timeline_svg(data)))
    click.echo(history_text(data, verbose), nl=False)


def _known_node(con: duckdb.DuckDBPyConnection, db_path: Path | None, node: str) -> None:
    """An unknown --node is an error naming it and a few nodes the store does hold."""
    import difflib

    from analyzer.history.query import known_nodes

    known = known_nodes(con)
    if node in known:
        return
    if not known:
        raise UsageProblem(f"no node {node!r} in {db_path}: the store holds no node yet")
    near = difflib.get_close_matches(node, known, n=5, cutoff=0.5) or known[:5]
    more = f" ({len(known)} in all)" if len(known) > len(near) else ""
    raise UsageProblem(f"no node {node!r} in {db_path}; nodes it holds include {', '.join(near)}{more}")


@cli.command()
@click.argument("old")
@click.argument("new")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A history store: OLD and NEW are then snapshot ids (or their start), dates, 'latest' or 'previous'.")  # fmt: skip
@click.option("--parquet", type=click.Path(file_okay=False, path_type=Path),
              help="A Parquet dataset (ingest --parquet, export), read as --db is.")  # fmt: skip
@click.option("--json", "json_out", type=_Output(), help="Write the diff as JSON.")
@click.pass_context
def diff(
    ctx: click.Context, old: str, new: str, db_path: Path | None, parquet: Path | None, json_out: Path | None
) -> None:
    """What changed between two snapshots: new and resolved findings, version changes, nodes added or
    gone, busbw and FSx deltas.  OLD and NEW are bundles (or cluster folders), or snapshots of --db.

    \b
    Example:
      hptriage diff /fsx/hptriage/2026-11-25 /fsx/hptriage/2026-12-02
      hptriage diff --db history.duckdb previous latest --json diff.json
      hptriage diff --parquet /fsx/hptriage-dataset 2026-11-25 2026-12-02
    """
    from analyzer.history.ingest import StoreError
    from analyzer.history.ingest import ingest as run_ingest
    from analyzer.history.query import diff as query
    from analyzer.history.query import resolve_snapshot
    from reports.history import diff_text, dumps

    work: Path | None = None
    store = db_path
    if db_path is not None and parquet is not None:
        raise UsageProblem("give one of --db FILE (a history store) or --parquet DIR (a Parquet dataset)")
    if db_path is None and parquet is None:  # two bundles or folders: each a snapshot of a scratch store
        work = Path(tempfile.mkdtemp(prefix="hptriage-diff-"))
        store = work / "diff.duckdb"
    try:
        with _user_errors(ctx, StoreError, LookupError):
            if work is not None:
                scratch = work / "diff.duckdb"
                a, b = (
                    _one_snapshot(p, run_ingest([Path(p)], scratch, None, _settings(None)))
                    for p in (old, new)
                )
            con = _open_store(None, parquet) if parquet is not None else _open_store(store)
            if work is None:
                a, b = resolve_snapshot(con, old), resolve_snapshot(con, new)
            data = query(con, a, b)
            con.close()
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    if json_out:
        _write(json_out, dumps(data))
    click.echo(diff_text(data), nl=False)


def _one_snapshot(path: str, results: list[Any]) -> str:
    """The snapshot one side of a diff made; a side holding several clusters or folders is refused."""
    if len(results) > 1:
        held = ", ".join(f"{r.cluster} ({r.folder})" for r in results)
        raise UsageProblem(
            f"{path} holds {len(results)} snapshots: {held}; give diff one cluster folder per side"
        )
    return str(results[0].snapshot_id)


@cli.command()
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--parquet", "out", required=True, type=_Output(folder=True),
              help="An empty or new directory.")  # fmt: skip
@click.pass_context
def export(ctx: click.Context, db_path: Path, out: Path) -> None:
    """Write every table of a history store as Parquet, hive-partitioned by cluster and collection date
    (schema in docs/schema.md and DIR/_hptriage_schema.json), for Spark, Athena or Trino.

    \b
    Example:
      hptriage export --db history.duckdb --parquet s3-staging/hptriage/
    """
    from analyzer.history.export import export as run_export

    con = _open_store(db_path)
    try:
        with _user_errors(ctx, outputs={"--parquet": out}):
            try:
                doc = run_export(con, out)
            except FileExistsError as exc:
                raise UsageProblem(str(exc)) from exc
            except OSError as exc:
                raise UsageProblem(f"cannot write {out}: {exc.strerror or exc}") from exc
    finally:
        con.close()
    rows = sum(t["rows"] for t in doc["tables"].values())
    click.echo(f"{out}: {len(doc['tables'])} table(s), {rows} row(s), schema version {doc['schema_version']}")


@cli.command()
@click.option("--out", "out", required=True, type=_Output(folder=True),
              help="Where OUT/hptriage/ (and OUT/hptriage.zip) go: e.g. .agents/skills or .claude/skills.")  # fmt: skip
@click.option("--zip/--no-zip", "zip_too", default=True, show_default=True,
              help="Also write OUT/hptriage.zip, which unpacks into a skills folder as hptriage/.")  # fmt: skip
@click.option(
    "--config", "config", type=click.Path(dir_okay=False, path_type=Path), help="Site thresholds (TOML)."
)
@click.pass_context
def skill(ctx: click.Context, out: Path, zip_too: bool, config: Path | None) -> None:
    """Write the agent skill: OUT/hptriage/SKILL.md (the triage workflow, thresholds and routes) and
    scripts/collector.sh, for assistants that read agent skills (docs/assistants.md).

    \b
    Example:
      hptriage skill --out .agents/skills --no-zip
      hptriage skill --out dist/
    """
    from analyzer.assistants.skill import SkillError, write_skill

    with _user_errors(ctx, SkillError):
        try:
            written = write_skill(out, zip_too=zip_too, settings=_settings(config))
        except OSError as exc:
            raise UsageProblem(f"cannot write the skill under {out}: {exc.strerror or exc}") from exc
    click.echo(f"skill: {written.folder}" + (f"; zip: {written.zip_path}" if written.zip_path else ""))


@cli.command()
@click.option("--root", "roots", required=True, multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A folder the tools may read (repeatable); paths outside every root are refused.")  # fmt: skip
@click.option("--jobs", type=click.IntRange(1, 256), help="Parallel workers (default: CPU count, max 8).")
@click.option(
    "--config", "config", type=click.Path(dir_okay=False, path_type=Path), help="Site thresholds (TOML)."
)
def mcp(roots: tuple[Path, ...], jobs: int | None, config: Path | None) -> None:
    """Serve the analysis as MCP tools over stdio (analyze, finding, parse, rules, history, diff,
    redact) for assistants; needs the extra: pip install 'hptriage[mcp]' (docs/assistants.md).

    \b
    Example:
      claude mcp add hptriage -- hptriage mcp --root /fsx/hptriage
    """
    from analyzer.assistants.roots import Roots
    from analyzer.assistants.tools import Toolbox

    settings = _settings(config)
    try:
        from analyzer.assistants.mcp_server import serve
    except ImportError as exc:
        raise UsageProblem(
            f"hptriage mcp needs the MCP SDK ({exc.name or exc} is not installed): pip install 'hptriage[mcp]'"
        ) from exc
    serve(Toolbox(Roots(roots), settings, jobs))


#: True when the process is the console script's own (``main``), not a host that invokes ``cli`` (a test's
#: CliRunner): only then may an analysis keep pandas out of the process (store.tables.keep_pandas_out),
#: since pyarrow remembers for the process's life that it found no pandas.
_OWN_PROCESS = False


def main() -> None:
    global _OWN_PROCESS
    _OWN_PROCESS = True
    cli(prog_name="hptriage")


if __name__ == "__main__":
    main()
