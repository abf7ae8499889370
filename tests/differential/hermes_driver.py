"""Run the differential jobs against the real Hermes 0.19.0 (executed by the Hermes interpreter).

Usage: ``python hermes_driver.py < request.json > results.json`` with ``HERMES_HOME`` pointing at
a temporary folder. The request and the answer are JSON (never pickle). Before Hermes is
imported, an audit hook refuses every socket connection and name lookup that is not loopback,
so nothing here can reach the network whatever Hermes tries; refusals are counted and reported.
The summariser is Hermes' own ``call_llm`` as bound in ``agent.context_compressor``, replaced per
mode by the same three answers our side gets (see ``wire.py``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import types
from pathlib import Path

LOOPBACK = ("127.0.0.1", "::1", "localhost", "0.0.0.0")
refused: list[str] = []


def _loopback(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    return isinstance(host, str) and (host in LOOPBACK or host.startswith("127.") or host.startswith("/"))


def _no_egress(event: str, args: tuple) -> None:
    if event == "socket.getaddrinfo" and not _loopback(args[0]):
        refused.append(f"getaddrinfo {args[0]!r}")
        raise OSError(f"differential suite: name lookup of {args[0]!r} refused (no network)")
    if event == "socket.connect":
        address = args[1]
        host = address[0] if isinstance(address, tuple) and address else address
        if not _loopback(host):
            refused.append(f"connect {address!r}")
            raise OSError(f"differential suite: connection to {address!r} refused (no network)")


def main() -> int:
    sys.addaudithook(_no_egress)
    logging.disable(logging.WARNING)  # Hermes warns on every failed summary; the results say it
    if not os.environ.get("HERMES_HOME"):
        print("HERMES_HOME must point at a temporary folder", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import agent.context_compressor as cc  # noqa: E402
    import wire  # noqa: E402  (the shared jobs; stdlib only)
    from agent.model_metadata import estimate_messages_tokens_rough  # noqa: E402

    def answer(mode: str):
        def fixed(**_kwargs):
            message = types.SimpleNamespace(content=wire.FIXED_SUMMARY)
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)], model="fixed")

        def error(**_kwargs):
            raise RuntimeError(wire.ERROR_TEXT)

        def no_provider(**_kwargs):
            raise RuntimeError(wire.NO_PROVIDER_TEXT)

        return {"fixed": fixed, "error": error, "no_provider": no_provider}[mode]

    def set_mode(mode: str) -> None:
        cc.call_llm = answer(mode)

    side = wire.Side(make=cc.ContextCompressor, estimate=estimate_messages_tokens_rough, set_mode=set_mode)
    request = json.load(sys.stdin)
    results = wire.run_jobs(side, request)
    json.dump({"results": results, "refused": refused}, sys.stdout, ensure_ascii=False, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
