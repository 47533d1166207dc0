"""A table's batch as the held-back store keeps it: Arrow IPC, compressed (``analyzer.store.deferred``).

Made where the batch is read (a pool's worker, in parallel) or where it is held; the parent then keeps
the bytes alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Packed:
    """A batch of a held table already in the form Deferred keeps it (Arrow IPC, compressed): made where
    the batch is read (a pool's worker), so the parent only keeps the bytes."""

    buffer: pa.Buffer
    num_rows: int

    def table(self) -> pa.Table:
        import pyarrow as pa

        return pa.ipc.open_stream(self.buffer).read_all()


def pack(batch: pa.Table, compress: bool = True) -> Packed:
    """A batch as Deferred keeps it (zstd Arrow IPC, or IPC as it is)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=_codec() if compress else None)
    with pa.ipc.new_stream(sink, batch.schema, options=options) as writer:
        writer.write_table(batch)
    return Packed(sink.getvalue(), batch.num_rows)


def _codec() -> str | None:
    import pyarrow as pa

    return next((c for c in ("zstd", "lz4") if pa.Codec.is_available(c)), None)
