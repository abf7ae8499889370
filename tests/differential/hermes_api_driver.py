"""Print the public shape of Hermes' ``agent.context_engine``, ``agent.context_compressor`` and
``agent.error_classifier``
(run by the Hermes interpreter; JSON out). No network: the same audit hook as the other driver."""

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
    import agent.context_compressor as cc  # noqa: E402
    import agent.context_engine as ce  # noqa: E402
    import agent.error_classifier as ec  # noqa: E402
    import api_shape  # noqa: E402

    json.load(sys.stdin)
    shapes = {
        "agent.context_engine": api_shape.module_shape(ce),
        "agent.context_engine.ContextEngine": api_shape.class_shape(ce.ContextEngine),
        "agent.context_compressor": api_shape.module_shape(cc),
        "agent.context_compressor.ContextCompressor": api_shape.class_shape(cc.ContextCompressor),
        "agent.error_classifier": api_shape.module_shape(ec),
        "agent.error_classifier.ClassifiedError": api_shape.class_shape(ec.ClassifiedError),
    }
    json.dump({"shapes": shapes, "refused": hermes_driver.refused}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
