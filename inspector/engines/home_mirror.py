"""``~`` for engine code: the user's home, except that ``~/.hermes`` is the run's sandbox.

Hermes' own code finds its home through ``get_hermes_home()``, and the stand-ins answer that
with each run's sandbox. Plugins often build the path themselves instead
(``os.path.expanduser("~/.hermes/…")``, ``Path.home() / ".hermes"``), and would write replayed
sessions into the user's real agent state. So each run gets a mirror of the home folder: a
private folder holding a link to every entry of the real home (an engine still reads
``~/.config`` or finds ``~/.bun``) except ``.hermes``, which is the run's sandbox itself.

``os.path.expanduser`` (which ``Path.home()`` and ``Path.expanduser()`` call) answers with the
run's mirror in a context where a run is active (:func:`using`): hook calls, including the
compress pool, which inherits the context. Plugin imports and threads an engine starts
itself get the process's mirror, whose ``.hermes`` is the folder ``$HERMES_HOME`` names.
The inspector's own code on the main thread, the window included, sees the real home. Code
that reads ``$HOME`` itself is not redirected.
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
_process_mirror: dict[str, str | None] = {"path": None}
_installed = threading.Lock()
_done = False


def real_home() -> Path:
    """The user's real home, whatever context the caller runs in."""
    return Path(_real_expanduser("~"))


def real_expanduser(path: str | os.PathLike[str]) -> Path:
    """``Path(path).expanduser()`` against the real home: for the inspector's own paths
    (plugin folders, caches), which must not depend on whether a run is active."""
    return Path(_real_expanduser(os.fspath(path)))


def make_mirror(hermes_home: Path | None = None, registry: set[Path] | None = None) -> Path:
    """A private folder standing in for the home folder.

    Its ``.hermes`` is a real folder inside it (the sandbox: ``~/.hermes/..`` stays in the
    mirror), or a link to ``hermes_home`` when the user chose a Hermes home of their own.
    ``registry`` (the folders removed at exit) gets it at once, so an interrupt while it is
    being filled cannot leave it behind.
    """
    mirror = Path(tempfile.mkdtemp(prefix="context-inspector-user-home-"))
    if registry is not None:
        registry.add(mirror)
    os.chmod(mirror, 0o700)
    if hermes_home is None:
        (mirror / ".hermes").mkdir(mode=0o700)
    else:
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


def set_process_mirror(mirror: Path) -> None:
    """The home for engine code outside any run's context: threads an engine starts itself
    (they do not inherit the run's context) and plugin imports, whose module-level paths are
    shared by every run of the process, as the module is."""
    _process_mirror["path"] = str(mirror)


def process_mirror() -> Path | None:
    path = _process_mirror["path"]
    return Path(path) if path else None


def _expanduser(path: Any) -> Any:
    mirror = _user_home.get()
    if mirror is None:
        mirror = _process_mirror["path"]
        if mirror is None or threading.current_thread() is threading.main_thread():
            return _real_expanduser(path)  # the inspector's own code: the real home
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
