"""A trace's per-message token figures, each row held packed.

The store keeps ``{key: {"tiktoken": n, "rough_chars": n, "images": n}}`` for every distinct
message: 50,000 three-key dicts in a 10,000-turn replay, 11.5 MiB of it (issue 23). Held as
packed tuples (:mod:`inspector.trace.packed`) the rows cost half that. The table reads as the
mapping it replaces: a row reads as a new dict, so a row is changed by assigning a new one.
The host, which writes and reads rows in its inner loop, uses :attr:`TokenTable.rows` directly:
rows it writes are ``(FIGURES, tiktoken, rough_chars, images)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from inspector.trace.packed import pack, shape_of, unpack

# The host's rows: (FIGURES, tiktoken, rough_chars, images).
FIGURES = shape_of(("tiktoken", "rough_chars", "images"))
_ABSENT = object()


class TokenTable(MutableMapping):
    """``{message key: {tokenizer or figure name: count}}``, rows held packed."""

    __slots__ = ("rows",)

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        self.rows: dict[str, Any] = {}
        self.update(items)

    def __getitem__(self, key: str) -> Any:
        return unpack(self.rows[key])

    def get(self, key: str, default: Any = None) -> Any:
        row = self.rows.get(key, _ABSENT)
        return default if row is _ABSENT else unpack(row)

    def __setitem__(self, key: str, value: Any) -> None:
        self.rows[key] = pack(value)

    def __delitem__(self, key: str) -> None:
        del self.rows[key]

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"TokenTable({dict(self.items())!r})"

    def copy(self) -> TokenTable:
        out = TokenTable()
        out.rows = dict(self.rows)  # rows are immutable or, as dicts, were shared before too
        return out
