"""Print Hermes 0.19.0's plugin hook names (``hermes_cli.plugins.VALID_HOOKS``; run by the Hermes
interpreter, JSON out). No network: the same audit hook as the other drivers."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hermes_driver  # noqa: E402  (its no-egress audit hook)

    sys.addaudithook(hermes_driver._no_egress)
    logging.disable(logging.WARNING)
    from hermes_cli.plugins import VALID_HOOKS  # noqa: E402

    json.load(sys.stdin)
    json.dump({"valid_hooks": sorted(VALID_HOOKS), "refused": hermes_driver.refused}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
