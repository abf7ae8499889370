"""Our ``classify_api_error`` (``agent.error_classifier``, re-exported by ``agent.context_compressor``)
answers as Hermes 0.19.0's does on the provider errors engines meet: context overflow, rate limits
and overload, auth and billing, timeouts and dropped connections, server errors — every field of
the result, case by case (``error_cases.py``)."""

from __future__ import annotations

import pytest

from inspector.engines.compat.mod_error_classifier import classify_api_error
from tests.differential import error_cases
from tests.differential.hermes_env import FIGURES, run_in_hermes


@pytest.fixture(scope="module")
def hermes_verdicts():
    answer = run_in_hermes("hermes_classifier_driver.py", {"cases": sorted(error_cases.CASES)})
    assert answer["refused"] == []
    return answer["verdicts"]


def test_every_case_gets_hermes_verdict(hermes_verdicts):
    differ = []
    for name, case in error_cases.CASES.items():
        ours = error_cases.verdict(classify_api_error(error_cases.build(case), **case.get("kwargs", {})))
        if ours != hermes_verdicts[name]:
            fields = sorted(k for k in ours if ours[k] != hermes_verdicts[name][k])
            differ.append(f"{name}: " + ", ".join(f"{k} Hermes {hermes_verdicts[name][k]!r} ours {ours[k]!r}"
                                                  for k in fields))
    reasons = sorted({v["reason"] for v in hermes_verdicts.values()})
    FIGURES["error classifier"] = f"{len(error_cases.CASES) - len(differ)}/{len(error_cases.CASES)} cases identical " \
                                  f"({len(reasons)} reasons: {', '.join(reasons)})"
    assert not differ, "\n".join(differ)
