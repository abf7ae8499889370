"""Where the inspector may write: never over the user's data.

Output options (``--out``, ``--html``, ``--screenshot``, Save) name a path the user typed, and a
slip of the keyboard can name the transcript, the ``state.db`` or some unrelated file. A path is
refused when it is one of the inputs or an existing file the inspector did not write (a saved
trace or comparison, a report, an image): overwriting one of our own files is what re-running a
command with the same ``--out`` means, overwriting anything else is data loss.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from inspector.input_files import InputRefused, read_head_inflated

HEAD_BYTES = 4096


def file_head(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of ``path``, decompressed when it is gzipped."""
    return read_head_inflated(path, size)


def is_saved_file(head: bytes) -> bool:
    """A trace or comparison this inspector wrote."""
    from inspector.trace.io import saved_kind_of

    return saved_kind_of(head) is not None


def is_html_report(head: bytes) -> bool:
    return head.lstrip()[:15].lower() == b"<!doctype html>"


def is_image(head: bytes) -> bool:
    return head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"BM"))


def _input_path(spec: str) -> str:
    """``state.db#id`` names the database file."""
    if "#" in spec and not os.path.exists(spec):
        return spec.rpartition("#")[0]
    return spec


def output_problem(path: str, *, inputs: Iterable[str] = (), ours: Callable[[bytes], bool] = is_saved_file,
                   what: str = "(.json or .json.gz)") -> str | None:
    """Why the inspector must not write ``path`` (None when it may)."""
    target = os.path.abspath(path)
    for spec in inputs:
        source = os.path.abspath(_input_path(str(spec)))
        same = os.path.exists(source) and os.path.exists(target) and os.path.samefile(source, target)
        if same or source == target or target.startswith(source + "-"):  # state.db-wal, -shm, -journal
            return "is one of the inputs of this command: choose another name (the inspector never writes to your data)"
    if os.path.isdir(target):
        return f"is a directory; give a file name {what}"
    if os.path.exists(target) and not os.path.isfile(target):
        import stat

        mode = os.stat(target).st_mode
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"
        return f"is {kind}, not a file; give a file name {what}"
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        return f"the folder {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"the folder {parent} is not writable"
    if os.path.isfile(target) and os.path.getsize(target) > 0:
        try:
            head = file_head(target)
        except OSError as exc:
            return f"exists and cannot be read ({exc.strerror or exc})"
        except InputRefused as exc:
            return str(exc)
        if not ours(head):
            return ("exists and is not a file the inspector wrote: choose another name, or delete it first "
                    "if you mean to replace it")
    return None


def write_atomic(path: str | os.PathLike[str], data: bytes | str | Iterable[str | bytes], *, mode: int | None = None,
                 compress: bool = False, scrub: bool = True, text_bytes: bool = False) -> Path:
    """Write ``data`` to ``path`` so that ``path`` holds either its old content or all of ``data``.

    The one way the inspector writes a file (traces, bundles, bookmarks, the HTML report, images,
    transcripts, the summary cache): the bytes go to a new file in the destination folder, made
    with an exclusive create (``O_EXCL``, never following a symlink) under an unpredictable name,
    so no existing file, and nothing a symlink points to, is ever opened; they are flushed to
    disk, and the new file is renamed over ``path``. Text has every known key masked first
    (:func:`inspector.llm.secrets.mask_known`) unless ``scrub`` is False; text given as pieces
    (an iterable of ``str``, each a whole JSON value or more) is encoded, compressed and written
    piece by piece, so a large trace is never held twice in memory. ``compress`` gzips with no
    time and no name in the header, so the same data always gives the same bytes. The file keeps
    the mode of the file it replaces, else ``mode`` (0644 unless given). ``text_bytes``: pieces
    given as ``bytes`` are UTF-8 text too (JSON written by ``orjson``), masked as bytes.
    """
    import secrets as _random

    target = Path(path)
    pieces: Iterable[bytes | str] = [data] if isinstance(data, (bytes, bytearray, str)) else data
    mask: Callable[[Any], Any] = lambda text: text  # noqa: E731
    if scrub:
        from inspector.llm.secrets import mask_known, secret_values

        known = secret_values()
        mask = lambda text: mask_known(text, known)  # noqa: E731
    mask_bytes = mask if text_bytes else (lambda data: data)
    folder = target.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(16):
        tmp = folder / f".{target.name}.{_random.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{folder}: cannot create a temporary file")

    def put(chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]

    try:
        try:
            if compress:
                _write_compressed(pieces, mask, mask_bytes, put)
            else:
                for piece in pieces:
                    put(_encoded(piece, mask, mask_bytes))
            os.fsync(fd)
            try:
                keep = os.stat(target).st_mode & 0o777
            except FileNotFoundError:
                keep = 0o644 if mode is None else mode
            os.fchmod(fd, keep)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


# Level 3, ISA-L's highest (inspector.gunzip.gzip_member): a 150 MB session's trace is 45.6 MB
# and its save takes 3.5-4.4 s of CPU; by zlib at level 3, 43.8 MB and 5.6-6.3 s (zlib's level 6
# made it 17 % smaller for 2.6 times the CPU of level 3). Measured on one trace, both alternately.
GZIP_LEVEL = 3


MEMBER_BYTES = 4 << 20  # text gathered into one gzip member before it is compressed


def _member(data: bytes) -> bytes:
    """One gzip member of ``data``, saying its length so that reading inflates members on every core."""
    from inspector.gunzip import gzip_member

    return gzip_member(data, GZIP_LEVEL)


def _encoded(piece: bytes | str, mask: Callable[[Any], Any], mask_bytes: Callable[[Any], Any]) -> bytes:
    """A piece's bytes, masked: text by ``mask``, bytes by ``mask_bytes`` (see ``text_bytes``)."""
    if isinstance(piece, str):
        return mask(piece).encode("utf-8", "surrogatepass")
    return mask_bytes(bytes(piece))


def _write_compressed(pieces: Iterable[bytes | str], mask: Callable[[Any], Any], mask_bytes: Callable[[Any], Any],
                      put: Callable[[bytes], None]) -> None:
    """Gzip ``pieces`` through ``put`` as consecutive gzip members of about ``MEMBER_BYTES`` each,
    compressed on every core while the next are made (zlib lets go of the interpreter lock).

    A gzip file may hold several members, which every reader inflates as one stream (ours:
    :func:`inspector.gunzip.gunzip`; ``gzip -d``; Python's ``gzip``); members of a few megabytes
    cost a negligible ratio and let a 150 MB session's trace compress on two cores instead of one
    (``inspector.bench.large_session``); each says its length, so reading it inflates them on
    every core too (:func:`inspector.gunzip.sized_member`). Order is kept; at most one member
    per core waits.
    """
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    cores = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=cores, thread_name_prefix="inspector-gzip") as pool:
        waiting: deque[Future[bytes]] = deque()
        buffer: list[bytes] = []
        size = 0

        def submit() -> None:
            nonlocal buffer, size
            data = b"".join(buffer)
            buffer, size = [], 0
            waiting.append(pool.submit(_member, data))
            while len(waiting) > cores:
                put(waiting.popleft().result())

        for piece in pieces:
            raw = _encoded(piece, mask, mask_bytes)
            buffer.append(raw)
            size += len(raw)
            if size >= MEMBER_BYTES:
                submit()
        if buffer or not waiting:
            submit()  # the last member (an empty input still makes a valid gzip file)
        while waiting:
            put(waiting.popleft().result())
