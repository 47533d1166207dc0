"""Redaction of bundles and of every input type, with one mapping for a whole cluster."""
