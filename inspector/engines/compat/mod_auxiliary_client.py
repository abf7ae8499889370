"""Stand-in for ``agent.auxiliary_client``: backed by :mod:`inspector.llm.aux`."""

from __future__ import annotations

from inspector.llm.aux import async_call_llm, aux_interrupt_protection, call_llm, is_aux_interrupt_protected

__all__ = ["call_llm", "async_call_llm", "aux_interrupt_protection", "is_aux_interrupt_protected"]
