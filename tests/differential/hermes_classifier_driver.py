"""Classify the cases of ``error_cases.py`` with Hermes' own ``classify_api_error`` (run by the
Hermes interpreter; JSON out). No network: the same audit hook as the other drivers."""

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
    import error_cases  # noqa: E402
    from agent.context_compressor import classify_api_error  # noqa: E402  (the name engines import)

    names = json.load(sys.stdin)["cases"]
    verdicts = {}
    for name in names:
        case = error_cases.CASES[name]
        verdicts[name] = error_cases.verdict(classify_api_error(error_cases.build(case), **case.get("kwargs", {})))
    json.dump({"verdicts": verdicts, "refused": hermes_driver.refused}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
