"""The error lines the seed handbook quotes each lead to their entry, by paste and by search.

The handbook (../shared/seed/) is where many users first read about verl errors; several of its lines are not
verl's own wording, so the entries carry that wording as a signature and say so. A line losing its entry
here means a user who pastes or types what the handbook told them gets no answer.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.ingest import ingest
from app.settings import ROOT, Settings
from app.web.app import create_app

SEED_LINES = [
    ("ImportError: No module named 'verl'", "ENV-020"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "ENV-007"),
    ("AttributeError: module 'verl' has no attribute 'version'", "ENV-001"),
    ("ImportError: cannot import name 'AutoTokenizer'", "ENV-490"),
    ("ValueError: tokenizer.pad_token_id is None", "CFG-015"),
    ("RuntimeError: Expected all tensors to be on the same device", "CFG-013"),
    ("AssertionError: Number of devices (8) does not match world_size (1)", "ENV-021"),
    ("RuntimeError: Expected isfinite(tensor).all() to be true, but received false", "TRAIN-001"),
    ("RuntimeError: NCCL timeout exceeded", "DIST-002"),
    ("ValueError: Input length must be less than or equal to max_position_embeddings", "CFG-011"),
    ("RuntimeError: Default process group is not initialized", "DIST-012"),
    ("OSError: [Errno 98] Address already in use", "DIST-005"),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    data = tmp_path_factory.mktemp("seed")
    settings = Settings(
        data_dir=data / "data",
        content_dir=ROOT / "content" / "errors",
        secret_key="s" * 40,
        vote_rate_limit="1000/minute",
    )
    ingest(settings)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.mark.parametrize(("line", "code"), SEED_LINES, ids=[code for _, code in SEED_LINES])
def test_pasting_a_seed_line_names_its_entry_confidently(client, line, code):
    answer = client.post("/api/v1/match", json={"text": line}).json()
    assert answer["matches"], answer
    first = answer["matches"][0]
    assert (first["code"], first["confidence"] in ("high", "medium")) == (code, True), first


@pytest.mark.parametrize(("line", "code"), SEED_LINES, ids=[code for _, code in SEED_LINES])
def test_searching_a_seed_line_finds_its_entry_in_the_first_three(client, line, code):
    hits = client.get("/api/v1/search", params={"q": line, "limit": 10}).json()["hits"]
    assert code in [hit["code"] for hit in hits[:3]], [hit["code"] for hit in hits]
