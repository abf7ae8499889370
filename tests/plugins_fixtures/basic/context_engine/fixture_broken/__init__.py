"""Fails at import time: the error must name the available engines and carry this traceback."""

import fixture_dependency_that_does_not_exist  # noqa: F401
from agent.context_engine import ContextEngine  # noqa: F401
