"""The DuckDB store: table schemas (from the parsers' declarations), coercion, batched inserts."""
