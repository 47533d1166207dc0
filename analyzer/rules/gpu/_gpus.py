"""Shared SQL for GPU rules: map a kernel event's PCI address to the GPU index of the same bundle."""

from __future__ import annotations

#: A view of every GPU seen by any source, keyed by bundle and normalised PCI address.
GPU_BY_PCI = """
    SELECT bundle_id, node, pci, min("index") AS gpu
    FROM gpu WHERE pci IS NOT NULL GROUP BY bundle_id, node, pci
"""
