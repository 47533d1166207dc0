"""DCGM's multi-node diagnostics JSON (``dcgmi mndiag --json``) given as a file, as a cluster extra/ folder.

``dcgmi mndiag`` runs on a head node for many hosts at once, so its JSON speaks for the cluster: it is
written unchanged as the one file of an ``extra/`` folder, where the parser kind ``dcgm-mndiag`` reads it
and rules map its hosts to the node bundles by name.  The same file dropped into a cluster's own
``extra/`` folder is recognised there by content (``parsers.detect_kind``) without this reader.

Recognised by content: a regular file whose first non-blank character is ``{`` and whose first
:data:`SNIFF_BYTES` hold the document's root, ``"DCGM Diagnostic": "DCGM Multi-Node Diagnostic"`` (or
the schema's ``"DCGM Multi-Node Diagnostic"`` key).  Only that much is read to decide; a file over
:data:`MAX_BYTES` (or the file cap of the limits, the smaller) is never taken for one.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.intake.foreign.layout import Converted, write_extra
from analyzer.intake.safe_read import Limits
from parsers import dcgm_mndiag

SOURCE = "dcgm-mndiag"
#: bytes read to recognise the document (jsoncpp writes the root key on the second line)
SNIFF_BYTES = 64 * 1024
#: no mndiag document of up to 72 hosts comes near this
MAX_BYTES = 64 * 1024**2


def detect(path: Path) -> bool:
    """Whether ``path`` is a DCGM mndiag JSON file, from its first bytes (links and folders are not)."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return False
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return _looks_like(head)


def _looks_like(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return text.startswith("{") and dcgm_mndiag.detect(text) > 0


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the JSON at ``path`` as the one file of an extra/ folder under ``dest`` (a new directory)."""
    cap = min(MAX_BYTES, limits.max_file_bytes)
    try:
        size = path.stat().st_size
        if size > cap:
            return Converted(reason=f"DCGM mndiag JSON of {size} bytes, over the {cap}-byte cap: not read")
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        return Converted(reason=f"DCGM mndiag JSON not readable: {exc.strerror or exc}")
    if len(data) > cap:
        return Converted(reason=f"DCGM mndiag JSON grew past the {cap}-byte cap while read: not read")
    if not _looks_like(data[:SNIFF_BYTES]):
        return Converted(reason="not a DCGM mndiag JSON document")
    return Converted(extras=[write_extra(dest / "extra", {path.name: data})])
