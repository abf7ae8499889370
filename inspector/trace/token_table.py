"""A trace's per-message token figures, each row held packed.

The store keeps ``{key: {"tiktoken": n, "rough_chars": n, "images": n}}`` for every distinct
message: 50,000 three-key dicts in a 10,000-turn replay, 11.5 MiB of it (issue 23). Held as
packed tuples (:mod:`inspector.trace.packed`) the rows cost half that. The table reads as the
mapping it replaces: a row reads as a new dict, so a row is changed by assigning a new one.
The host, which writes and reads rows in its inner loop, uses :attr:`TokenTable.rows` directly:
rows it writes are ``(FIGURES, tiktoken, rough_chars)`` (no images: nearly every message) or
``(FIGURES_IMAGES, tiktoken, rough_chars, images)``, made by :func:`figures`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from inspector.trace.packed import made_shape, pack, shape_of, unpack

_NAMES = ("tiktoken", "rough_chars", "images")
# The host's rows: (FIGURES, tiktoken, rough_chars) for a message without images, else
# (FIGURES_IMAGES, tiktoken, rough_chars, images).
FIGURES = made_shape("figures", _NAMES, lambda row: {"tiktoken": row[1], "rough_chars": row[2], "images": 0})
FIGURES_IMAGES = shape_of(_NAMES)
_ABSENT = object()


def figures(tiktoken: int, rough_chars: int, images: int) -> tuple[Any, ...]:
    """The host's row of one message's figures (read ``images`` as ``row[3] if len(row) > 3 else 0``)."""
    if images == 0 and type(images) is int:
        return (FIGURES, tiktoken, rough_chars)
    return (FIGURES_IMAGES, tiktoken, rough_chars, images)


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
