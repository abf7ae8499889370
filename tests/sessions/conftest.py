"""Shared fixtures: where the real sample transcripts live (never copied into the project)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Next to the repo (../shared/corpus); a git worktree under <repo's folder>/wt/NAME looks two levels up.
_CANDIDATES = [REPO.parent / "shared" / "corpus", REPO.parent.parent / "shared" / "corpus"]
CORPUS = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[0])


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"sample corpus not found at {CORPUS} (it lives next to the repo, in ../shared/corpus)")
    return CORPUS
