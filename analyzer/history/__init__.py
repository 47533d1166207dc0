"""Across bundles: ingest into a history store, queries, diffs, Parquet export."""
