"""``context-inspector``: the window by default, headless subcommands for everything else.

Each subcommand lives in its own module exposing ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``; this file only dispatches, so adding a command never touches another's code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from typing import Any

COMMANDS: dict[str, str] = {
    "replay": "inspector.host.cli",
    "sessions": "inspector.sessions.cli",
    "engines": "inspector.engines.cli_engines",
    "doctor": "inspector.engines.cli_doctor",
    "compare": "inspector.compare.cli",
    "follow": "inspector.live.cli_follow",
    "batch": "inspector.batch.cli",
}


def _gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-inspector",
        description="Debugger for LLM agent context engines. With no arguments, opens the bundled demo. "
        f"Subcommands: {', '.join(COMMANDS)} (see `context-inspector <command> --help`).",
    )
    parser.add_argument("file", nargs="?", help="session, Hermes state.db[#session] or saved trace to open")
    parser.add_argument("--engine", action="append", default=[], help="engine to replay with (repeat to compare)")
    parser.add_argument("--config", help="config.yaml to use (Hermes keys + inspector section)")
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory")
    parser.add_argument("--screenshot", metavar="OUT.png", help="render the window offscreen to a PNG and exit")
    parser.add_argument("--cursor", type=int, default=None, help="event index to select (with --screenshot)")
    parser.add_argument("--panel", help="with --screenshot: grab only this panel")
    parser.add_argument("--size", default="1600x1000", help="window size WxH for --screenshot")
    return parser


def _exit_cleanly_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` runs (the sandbox HERMES_HOME, which may
    hold a copy of the user's config, is deleted rather than left in the temp folder)."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum: int, frame: Any) -> None:
    if _importing(frame):
        # An exception raised inside an import comes out mangled (even as a TypeError from a C
        # module's init): ask again in a moment, when the import is done.
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise KeyboardInterrupt


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _is_user_error(exc: BaseException) -> bool:
    """A setting that names a tokenizer or cache profile this machine does not have: said in one line."""
    from inspector.cache.rules import RulesError
    from inspector.tokens.encodings import TokenizerUnavailable

    return isinstance(exc, (RulesError, TokenizerUnavailable))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
        module = importlib.import_module(COMMANDS[name])
        parser = argparse.ArgumentParser(prog=f"context-inspector {name}", description=module.HELP)
        module.add_arguments(parser)
        args = parser.parse_args(argv)
        from inspector.host.guard import wake_main_thread_on_timeout

        wake_main_thread_on_timeout()  # headless: hooks run on this thread
        _exit_cleanly_on_sigterm()
        from inspector.terminal import safe_stderr

        try:
            with safe_stderr():  # data quoted in errors, faults and notes cannot drive the terminal
                return int(module.run(args) or 0)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # `... --json | head`: the reader left; say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except Exception as exc:
            if not _is_user_error(exc):
                raise
            print(f"error: {exc}", file=sys.stderr)
            return 2
    args = _gui_parser().parse_args(argv)
    from inspector.ui.app import run_gui

    return run_gui(args)


if __name__ == "__main__":
    sys.exit(main())
