"""Who runs the workers of ``ingest --parquet``: a pool of local processes, or Ray (Ray Data reads the
files and maps them by the same step; snapshots are judged as Ray tasks).  Ray is imported only here,
only for ``--engine ray``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.fleet.read_input import (
    Place,
)
from analyzer.fleet.snapshot import MapParts
from analyzer.fleet.worker import BATCH, Task, base_of, batches, digest_inputs, folder_of, run_task, run_tasks
from analyzer.store.tables import keep_pandas_out

if TYPE_CHECKING:
    import pyarrow as pa

    from analyzer.judge.settings import Settings


class EngineMissing(Exception):
    """The engine asked for is not installed."""


def pool_map(jobs: int | None) -> MapParts:
    """Snapshots judged by local processes, several at a time (one at a time here for one snapshot)."""

    def run(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        workers = min(jobs or min(os.cpu_count() or 1, 8), len(items))
        if workers <= 1:
            return [fn(i) for i in items]
        context = multiprocessing.get_context(
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        )
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(fn, items))

    return run


def ray_map(ray: Any) -> MapParts:
    """Snapshots judged as Ray tasks, spread over the cluster (here for one snapshot)."""

    def run(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if len(items) <= 1:
            return [fn(i) for i in items]
        remote = ray.remote(fn)
        return list(ray.get([remote.remote(i) for i in items]))

    return run


def local_answers(
    tasks: list[Task],
    root: Path,
    settings: Settings,
    jobs: int | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[dict[str, Any]]:
    """The tasks, in batches (:func:`batches`), read by a pool of local processes (in this one for
    jobs=1 or a single batch), a bounded number in flight so memory stays flat."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    workers = jobs or min(os.cpu_count() or 1, 8)
    # batches small enough that every worker has several (one worker: as large as a batch may be)
    units = batches(tasks, BATCH if workers <= 1 else max(1, min(BATCH, len(tasks) // (workers * 4))))
    done = 0

    def said(answer: dict[str, Any]) -> dict[str, Any]:
        nonlocal done
        done += answer.get("inputs", 1)
        if progress:
            progress(min(done, len(tasks)), len(tasks))
        return answer

    if workers <= 1 or len(units) <= 1:
        for unit in units:
            yield said(run_tasks(unit, str(root), settings))
        return
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=keep_pandas_out) as pool:
        queue = iter(units)
        in_flight: set[Future[dict[str, Any]]] = set()
        for unit in queue:
            in_flight.add(pool.submit(run_tasks, unit, str(root), settings))
            if len(in_flight) >= workers * 2:
                break
        while in_flight:
            finished, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                yield said(future.result())
                nxt = next(queue, None)
                if nxt is not None:
                    in_flight.add(pool.submit(run_tasks, nxt, str(root), settings))


def ray_answers(
    tasks: list[Task],
    remote: list[str],
    root: Path,
    settings: Settings,
    jobs: int | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[dict[str, Any]]:
    """The tasks on the Ray this process joined (:func:`ray_session`): files read as
    ``read_binary_files`` reads them (local paths and object-store prefixes),
    folders (an unpacked bundle, an ``extra/`` folder) through ``from_items``, each mapped by the same
    step as the local pool; the answers stream back as the blocks finish."""
    import pickle

    import pyarrow as pa
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    names = {t.path: t for t in tasks}
    out = str(root.resolve())

    def read_files(batch: pa.Table) -> pa.Table:
        """A block of files: those of one folder read together, one answer per folder."""
        groups: dict[tuple[str, Place | None], list[tuple[str, Any, bytes | None]]] = {}
        for path, data in zip(
            batch.column("path").to_pylist(), batch.column("bytes").to_pylist(), strict=True
        ):
            task = names.get(path) or names.get("/" + path.lstrip("/")) or Task(_uri_name(path, remote), path)
            checksum = _sidecar(path) if task.checksum or not names else None
            groups.setdefault((folder_of(task.name), task.place), []).append(
                (base_of(task.name), data, checksum)
            )
        answers = [
            pickle.dumps(digest_inputs(parent, members, Path(out), settings, place))
            for (parent, place), members in groups.items()
        ]
        return pa.table({"answer": pa.array(answers, pa.binary())})

    def read_dir(row: dict[str, Any]) -> dict[str, Any]:
        return {"answer": pickle.dumps(run_task(names[row["path"]], out, settings))}

    total = len(tasks)
    done = 0
    size = max(1, min(BATCH, len(tasks) // ((jobs or os.cpu_count() or 1) * 4)))
    files = [t.path for t in tasks if not t.is_dir] + remote
    dirs = [{"name": t.name, "path": t.path} for t in tasks if t.is_dir]
    streams = []
    if files:
        raw = ray.data.read_datasource(_raw_files(files))
        streams.append(raw.map_batches(read_files, batch_size=size, batch_format="pyarrow"))
    if dirs:
        streams.append(ray.data.from_items(dirs).map(read_dir))
    for stream in streams:
        for row in stream.iter_rows():
            answer = pickle.loads(row["answer"])  # noqa: S301 - the answer of our own worker
            done += answer.get("inputs", 1)
            if progress:
                progress(min(done, total), max(total, done))
            yield answer


@contextlib.contextmanager
def ray_session(jobs: int | None, address: str | None) -> Iterator[Any]:
    """Ray, started for the ingest (a local Ray of ``jobs`` CPUs, or the cluster at ``address``) and
    stopped after it; one already running in this process is used as it is."""
    # Ray Data's lines per dataset run stay out of the terminal (a user's own setting wins)
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    try:
        import ray
    except ImportError as exc:
        raise EngineMissing(
            "the ray engine needs Ray, which is not installed: pip install 'hptriage[ray]'"
        ) from exc
    started = not ray.is_initialized()
    if started:
        ray.init(
            address=address,
            num_cpus=None if address else (jobs or os.cpu_count() or 1),
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _raw_files(paths: list[str]) -> Any:
    """``read_binary_files`` with the bytes as they lie: Ray's reader un-gzips a file whose name ends in
    .gz (Arrow's compression detection), and a bundle's hash and checksum are of the file itself."""
    import pyarrow as pa
    from ray.data.datasource import FileBasedDatasource

    class RawFiles(FileBasedDatasource):
        def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> pa.NativeFile:
            return filesystem.open_input_stream(path, compression=None)

        def _read_stream(self, f: pa.NativeFile, path: str) -> Iterator[pa.Table]:
            yield pa.table({"bytes": pa.array([f.readall()], pa.binary())})

        def _rows_per_file(self) -> int:
            return 1

    return RawFiles(paths, include_paths=True)


def _uri_name(path: str, remote: list[str]) -> str:
    """The name of a file Ray listed under an object-store prefix: its URI."""
    for prefix in remote:
        scheme, _, rest = prefix.partition("://")
        if path.startswith(rest.rstrip("/")):
            return f"{scheme}://{path}"
    return path


def _sidecar(path: str) -> bytes | None:
    """The digest file beside a tarball: ``.sha256``, else sos's ``.md5`` (read_input tells them by
    their text)."""
    for suffix in (".sha256", ".md5"):
        try:
            with open(path + suffix, "rb") as fh:
                return fh.read(4096)
        except OSError:
            continue
    return None


# --- the driver ------------------------------------------------------------------------------------
