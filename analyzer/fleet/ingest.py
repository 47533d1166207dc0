"""``hptriage ingest --parquet DIR``: bundles read where they lie, by a pool of local processes or by Ray,
into the Parquet dataset ``export`` writes; the rules that compare nodes then run once per snapshot on
this machine over what was written.

Each worker takes a batch of inputs of one folder (:func:`analyzer.fleet.worker.run_tasks`):
:func:`analyzer.fleet.read_input.read_inputs` gives their rows, the fact rows of every bundle whose
collection time is known are written straight into the dataset (one file per table and partition, named
by the batch's bundle hashes), and only the small rest (bundle rows, the node-local rules' findings and
outcomes, what could not be read, the files written) travels back; the driver keeps each bundle's rows
in one file (:mod:`analyzer.fleet.repeats`).  The
driver groups the bundles into snapshots as ``ingest --db`` does (one cluster's bundles in one folder),
runs the cross-node rules over each snapshot's rows read back from the dataset through DuckDB, merges
the outcomes, and writes the snapshot's rows.  A snapshot already in the dataset, judged by the same
rules, is left as it is; a bundle already there keeps its first snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.fleet.dataset import PARTITIONS, DatasetError
from analyzer.fleet.engines import (
    EngineMissing,
    MapParts,
    local_answers,
    pool_map,
    ray_answers,
    ray_map,
    ray_session,
)
from analyzer.fleet.snapshot import FleetIngest, gather, judge_snapshots
from analyzer.fleet.worker import Task, digest_input, run_task

if TYPE_CHECKING:
    from analyzer.judge.settings import Settings


ENGINES = ("local", "ray")


def ingest_dataset(
    paths: list[str],
    root: Path,
    *,
    engine: str = "local",
    jobs: int | None = None,
    ray_address: str | None = None,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> FleetIngest:
    """Ingest the inputs under paths into the dataset at root (made when missing)."""
    from analyzer.fleet.inputs import list_inputs
    from analyzer.judge.settings import load_settings

    settings = settings or load_settings()
    _check_root(root)
    remote = [p for p in paths if _is_uri(p)]
    if remote and engine != "ray":
        raise DatasetError(f"{remote[0]}: an object-store prefix is read with --engine ray")
    listing = list_inputs([Path(p) for p in paths if not _is_uri(p)])
    tasks = [Task(i.path, os.path.abspath(i.path), i.is_dir, i.checksum, i.place()) for i in listing.items]
    result = FleetIngest(unread=list(listing.skipped), inputs=len(tasks))
    if not tasks and not remote:
        from analyzer.errors import no_usable_bundle

        raise no_usable_bundle(result.unread or [(p, "no bundle found") for p in paths])
    if engine == "ray":
        with ray_session(jobs, ray_address) as ray:
            answers = ray_answers(tasks, remote, root, settings, jobs, progress)
            return finish(answers, root, paths, settings, result, map_parts=ray_map(ray))
    answers = local_answers(tasks, root, settings, jobs, progress)
    return finish(answers, root, paths, settings, result, map_parts=pool_map(jobs))


def finish(
    answers: Iterable[dict[str, Any]],
    root: Path,
    paths: list[str],
    settings: Settings | None = None,
    result: FleetIngest | None = None,
    map_parts: MapParts | None = None,
) -> FleetIngest:
    """The driver's part, whoever ran the workers (a local pool, Ray, Spark's ``mapInArrow``): the
    answers of :func:`digest_input` grouped into snapshots, each judged by the cross-node rules over the
    dataset and written, and the schema document brought up to date.  ``paths`` are the paths given
    (a snapshot's ``sources``); ``map_parts`` spreads the snapshots' judging (default: one after
    another here)."""
    from analyzer.judge.settings import load_settings

    settings = settings or load_settings()
    result = result or FleetIngest()
    groups = gather(answers, result)
    result.snapshots = judge_snapshots(groups, root, paths, settings, result.tally, map_parts)
    if not result.snapshots:
        from analyzer.errors import no_usable_bundle

        raise no_usable_bundle(result.unread or [(p, "no bundle read") for p in paths])
    from analyzer.fleet.dataset import update_schema_doc

    update_schema_doc(root, result.tally.added, result.tally.samples)
    return result


def _check_root(root: Path) -> None:
    from analyzer.history.export import SCHEMA_FILE

    if root.exists() and not root.is_dir():
        raise DatasetError(f"{root} is a file, not a dataset directory")
    if root.is_dir() and any(root.iterdir()) and not (root / SCHEMA_FILE).is_file():
        raise DatasetError(
            f"{root} is not empty and holds no hptriage dataset (no {SCHEMA_FILE}): give a new or empty"
            " directory, or one an earlier ingest --parquet or export wrote"
        )
    if root.is_dir() and (root / SCHEMA_FILE).is_file():
        from analyzer.fleet.dataset import open_dataset

        open_dataset(root).close()  # the schema version is checked before any work


def _is_uri(path: str) -> bool:
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isalnum() and head != "file"


# --- engines ---------------------------------------------------------------------------------------


__all__ = ["ENGINES", "PARTITIONS", "EngineMissing", "FleetIngest", "Task", "digest_input", "finish", "ingest_dataset",
           "run_task"]  # fmt: skip
