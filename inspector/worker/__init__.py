"""Engines run in worker processes supervised by the process that owns the terminal or window.

- :mod:`~inspector.worker.supervisor`: start, watch, kill; outcomes with faults.
- :mod:`~inspector.worker.runtime`, :mod:`~inspector.worker.jobs`: the worker's side.
- :mod:`~inspector.worker.protocol`, :mod:`~inspector.worker.codec`: JSON frames, streamed traces.
- :mod:`~inspector.worker.tracker`: the running hook, readable while the worker is frozen.
- :mod:`~inspector.worker.sandbox`: bubblewrap where the machine has it.
"""
