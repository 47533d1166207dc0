"""Generators of the docs pages that must match the code (rules, schema, kinds)."""
