"""Reading bundles past one machine: the engine-neutral step (:mod:`analyzer.fleet.read_input`), the
Parquet dataset it fills (:mod:`analyzer.fleet.dataset`), the per-snapshot judging over it
(:mod:`analyzer.fleet.snapshot`) and the engines that map the step over the inputs
(:mod:`analyzer.fleet.engines`: local processes, Ray Data)."""
