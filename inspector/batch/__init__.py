"""``context-inspector batch``: many sessions × engines × settings, each replay one task.

:mod:`sources` finds the sessions, :mod:`tasks` names every task by what decides its result,
:mod:`runner` runs one task (the function a worker process calls), :mod:`backends` spreads the
tasks over local processes or a Ray cluster, :mod:`store` keeps the results on disk so a rerun
costs nothing, and :mod:`table` / :mod:`report` present them.
"""
