"""Shared fixtures: where the real sample transcripts live (never copied into the project)."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"sample corpus not found at {CORPUS} (it lives next to the repo, in ../shared/corpus)")
    return CORPUS
