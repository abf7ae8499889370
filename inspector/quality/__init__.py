"""What survives compression: message lifetimes, facts and their retention (Qt-free).

- :mod:`~inspector.quality.lifetime`: for every session message, the requests it was sent in and
  the compaction that summarised or dropped it, and any later return.
- :mod:`~inspector.quality.facts`: deterministic extraction of facts (paths, identifiers,
  numbers with units, errors, commands, URLs, user decisions, key tool-result lines).
- :mod:`~inspector.quality.retention`: which facts of the compacted part the next request still
  carries, only in a summary, or lost.
- :mod:`~inspector.quality.analysis`: the derived, cached analysis a trace carries and saves.
- :mod:`~inspector.quality.probes`: dry-run calls of an engine's read-only retrieval tools, and
  graded questions answered by a configured model.
"""
