"""Our ``agent.context_engine`` / ``agent.context_compressor`` / ``agent.error_classifier`` stand-ins
have Hermes 0.19.0's public API: the same names and signatures, except what ``inspector/engines/compat/api_additions.py``
lists (the seed contract's later names) — and that list is exact, so it cannot go stale."""

from __future__ import annotations

import pytest

from inspector.engines.compat import api_additions
from tests.differential import api_shape
from tests.differential.hermes_env import run_in_hermes

SCOPES = ("agent.context_engine", "agent.context_engine.ContextEngine",
          "agent.context_compressor", "agent.context_compressor.ContextCompressor",
          "agent.error_classifier", "agent.error_classifier.ClassifiedError")


@pytest.fixture(scope="module")
def hermes_shapes():
    answer = run_in_hermes("hermes_api_driver.py", {})
    assert answer["refused"] == []
    return answer["shapes"]


@pytest.fixture(scope="module")
def our_shapes(tmp_path_factory):
    import sys

    from inspector.engines.compat import install_compat, uninstall_compat

    saved = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in ("agent", "hermes_cli", "plugins")}
    for name in saved:
        del sys.modules[name]
    install_compat(None, tmp_path_factory.mktemp("home"))
    try:
        ce, cc = sys.modules["agent.context_engine"], sys.modules["agent.context_compressor"]
        ec = sys.modules["agent.error_classifier"]
        return {
            "agent.context_engine": api_shape.module_shape(ce),
            "agent.context_engine.ContextEngine": api_shape.class_shape(ce.ContextEngine),
            "agent.context_compressor": api_shape.module_shape(cc),
            "agent.context_compressor.ContextCompressor": api_shape.class_shape(cc.ContextCompressor),
            "agent.error_classifier": api_shape.module_shape(ec),
            "agent.error_classifier.ClassifiedError": api_shape.class_shape(ec.ClassifiedError),
        }
    finally:
        uninstall_compat()
        sys.modules.update(saved)


def _public(shape: dict) -> set[str]:
    return {n for n in shape if not n.startswith("_")}


@pytest.mark.parametrize("scope", SCOPES)
def test_public_names_are_hermes_plus_the_documented_additions(scope, hermes_shapes, our_shapes):
    ours, hermes = _public(our_shapes[scope]), _public(hermes_shapes[scope])
    assert ours - hermes == set(api_additions.ADDITIONS.get(scope, ()))
    assert hermes - ours == set(api_additions.OMISSIONS.get(scope, {}))


@pytest.mark.parametrize("scope", SCOPES)
def test_signatures_and_return_annotations_are_hermes(scope, hermes_shapes, our_shapes):
    ours, hermes = our_shapes[scope], hermes_shapes[scope]
    bad = []
    for name, expected in hermes.items():
        if name not in ours:
            continue
        got = ours[name]
        if f"{scope}.{name}" in api_additions.SIGNATURE_EXTRAS and isinstance(got, dict):
            extra = got["params"][len(expected["params"]):]
            if got["params"][: len(expected["params"])] == expected["params"] and got["returns"] == expected["returns"] \
                    and all(kind == "VAR_KEYWORD" or (kind == "KEYWORD_ONLY" and default != "<required>")
                            for _, kind, default in extra):
                continue
        if got != expected:
            bad.append(f"{name}: Hermes {expected}, ours {got}")
    assert not bad, "\n".join(bad)


def test_hermes_private_helpers_that_subclasses_call_exist(hermes_shapes, our_shapes):
    scope = "agent.context_compressor.ContextCompressor"
    missing = sorted(n for n in hermes_shapes[scope] if n.startswith("_") and n not in our_shapes[scope])
    assert missing == []
