"""``~`` for engine code: the user's home, except that ``~/.hermes`` is the run's sandbox.

Hermes' own code finds its home through ``get_hermes_home()``, and the stand-ins answer that
with each run's sandbox. Plugins often build the path themselves instead
(``os.path.expanduser("~/.hermes/…")``, ``Path.home() / ".hermes"``), and would write replayed
sessions into the user's real agent state. So each run gets a mirror of the home folder: a
private folder holding a link to every entry of the real home (an engine still reads
``~/.config`` or finds ``~/.bun``) except ``.hermes``, which links to the run's sandbox.

``os.path.expanduser`` (which ``Path.home()`` and ``Path.expanduser()`` call) answers with the
mirror only in a context where a run is active (:func:`using`): plugin imports and hook calls,
including the compress pool, which inherits the context. Everything else, the window
included, sees the real home. Code that reads ``$HOME`` itself is not redirected.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_LINKS = 2000  # a home with more entries than this has the rest missing from the mirror

_real_expanduser = os.path.expanduser
_user_home: contextvars.ContextVar[str | None] = contextvars.ContextVar("engine_user_home", default=None)
_installed = threading.Lock()
_done = False


def real_home() -> Path:
    """The user's real home, whatever context the caller runs in."""
    return Path(_real_expanduser("~"))


def real_expanduser(path: str | os.PathLike[str]) -> Path:
    """``Path(path).expanduser()`` against the real home: for the inspector's own paths
    (plugin folders, caches), which must not depend on whether a run is active."""
    return Path(_real_expanduser(os.fspath(path)))


def make_mirror(hermes_home: Path) -> Path:
    """A private folder standing in for the home folder, with ``.hermes`` → ``hermes_home``."""
    mirror = Path(tempfile.mkdtemp(prefix="context-inspector-user-home-"))
    os.chmod(mirror, 0o700)
    os.symlink(hermes_home, mirror / ".hermes", target_is_directory=True)
    home = real_home()
    try:
        entries = sorted(os.listdir(home))[:MAX_LINKS]
    except OSError:
        entries = []
    for name in entries:
        if name == ".hermes":
            continue
        try:
            os.symlink(home / name, mirror / name)
        except OSError:
            continue
    return mirror


def _expanduser(path: Any) -> Any:
    mirror = _user_home.get()
    if mirror is None:
        return _real_expanduser(path)
    text = os.fspath(path)
    tilde, seps = ("~", ("/", os.sep)) if isinstance(text, str) else (b"~", (b"/", os.sep.encode()))
    if text == tilde:
        return mirror if isinstance(text, str) else os.fsencode(mirror)
    if text[:1] == tilde and text[1:2] in seps:
        return (mirror if isinstance(text, str) else os.fsencode(mirror)) + text[1:]
    return _real_expanduser(path)  # ``~other_user`` and paths without a tilde


def install() -> None:
    """Route ``os.path.expanduser`` through the mirror of the active run (once per process)."""
    global _done
    with _installed:
        if not _done:
            os.path.expanduser = _expanduser
            _done = True


@contextlib.contextmanager
def using(mirror: Path | None) -> Iterator[None]:
    """Engine code in this context sees ``mirror`` as its home (nothing changes for None)."""
    if mirror is None:
        yield
        return
    install()
    token = _user_home.set(str(mirror))
    try:
        yield
    finally:
        _user_home.reset(token)
