"""hptriage: offline analyzer of diagnostic bundles from GPU training clusters."""

__version__ = "0.1.0"
