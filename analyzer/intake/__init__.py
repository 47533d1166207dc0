"""Untrusted inputs to per-node rows: safe reading, discovery of bundles, meta.env and manifest, per-node parsing, loading into the store."""
