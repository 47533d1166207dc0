"""Each bundle's facts in one file of each table, whatever a run wrote twice or wrote again.

Workers write a batch's facts into files named by the batch (:class:`analyzer.fleet.worker.Written`).
A bundle can reach two batches of one run (the same content in two folders), and a bundle read again
in a later run is written again, into a file of its new batch.  Before the snapshots are judged, the
driver settles both: a bundle's rows stay in the first batch of this run that wrote them; they are
taken out of the later batches of this run and out of every file an earlier run wrote in the partitions
it lies in (a file of that bundle alone is removed, a batch file is written again without it): a
bundle stored before, and one a run that stopped half way wrote without storing its snapshot.  A run's
new rows replace the old ones, as a file named by one bundle's hash was replaced before batches.  The
cost is a look at the bundle hashes of the earlier files in the partitions this run wrote (none for a
new day).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.fleet.dataset import Tally, partition_files

if TYPE_CHECKING:
    from analyzer.fleet.worker import Written

Place = tuple[str, str]  # (cluster, collection day)


def settle_repeats(root: Path, written: list[Written], known: dict[str, Place], tally: Tally) -> int:
    """Take the repeated rows out (see the module docstring); ``known`` holds the bundles earlier runs
    stored, with their partition.  Returns the number of files written again or removed."""
    owner: dict[str, str] = {}  # bundle hash -> the stem of the first batch of this run that wrote it
    fresh = {(w.cluster, w.day, w.stem) for w in written}
    changed = 0
    for w in written:
        twice = {h for h in w.hashes if owner.get(h, w.stem) != w.stem}
        for h in w.hashes:
            owner.setdefault(h, w.stem)
        if twice:
            changed += _drop(root, {(w.cluster, w.day)}, twice, tally, only={w.stem})
    if owner:  # stored before (known), or left by a run that stopped half way
        places = {(w.cluster, w.day) for w in written} | {known[h] for h in owner if h in known}
        changed += _drop(root, places, set(owner), tally, skip=fresh)
    return changed


def _drop(
    root: Path,
    places: Iterable[Place],
    hashes: set[str],
    tally: Tally,
    *,
    only: set[str] | None = None,
    skip: set[tuple[str, str, str]] = frozenset(),  # type: ignore[assignment]
) -> int:
    """The rows of ``hashes`` taken out of every fact file in ``places`` (``only``: the files of these
    stems; ``skip``: not these (cluster, day, stem))."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from analyzer.history.ingest import STORE_TABLES

    wanted = pa.array(sorted(hashes), pa.string())
    places = {(cluster, str(day)) for cluster, day in places}  # a day read back from the dataset is a date
    changed = 0
    for table in sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in STORE_TABLES):
        for cluster, day in sorted(places):
            for path in partition_files(root, table, cluster, day):
                stem = path.name.removesuffix("_0.parquet")
                if (only is not None and stem not in only) or (cluster, day, stem) in skip:
                    continue
                if stem in hashes:  # the file of that one bundle (as files were named before batches)
                    rows = pa.table({"bundle_hash": pa.array([], pa.string())})  # no rows: removed
                else:
                    present = pq.read_table(path, columns=["bundle_hash"], partitioning=None).column(
                        "bundle_hash"
                    )
                    if not pc.any(pc.is_in(present, wanted)).as_py():
                        continue
                    rows = pq.read_table(path, partitioning=None)
                    rows = rows.filter(pc.invert(pc.is_in(rows.column("bundle_hash"), wanted)))
                tally.write(root, table, rows, cluster, day, stem)
                changed += 1
    return changed
