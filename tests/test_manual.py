"""The Manual: one generation asked by every front door; what one door stores, every other door answers."""

from __future__ import annotations

import pytest

from app.ingest import ingest
from app.manual import Manual, Refused, Resources
from app.store.db import make_engine

KV = "(WorkerDict pid=1, ip=10.0.0.1) ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
FIX = "raise-gpu-memory-utilization"
NCCL_WORDS = "the job is stuck in a collective operation and the watchdog never fires; nccl allreduce hangs"


@pytest.fixture
def served(settings):
    ingest(settings)
    engine = make_engine(settings)
    resources = Resources.for_server(settings, engine)
    yield Manual.open(settings, resources=resources)
    resources.recorder.close()
    engine.dispose()


def test_a_vote_through_the_manual_shows_in_every_answer(served):
    before = served.entry("ROLL-901")
    answer = served.vote("ROLL-901", FIX, voter="v1", client="127.0.0.1", worked=True)
    assert answer.fix.votes_up == 1 and answer.your_vote is True
    entry = served.entry("ROLL-901")
    assert entry is not before and entry.cache_key != before.cache_key  # new votes, a new answer
    assert next(fix for fix in entry.fixes if fix.id == FIX).votes_up == 1
    assert next(row for row in served.browse().errors if row.code == "ROLL-901").votes == 1
    match = served.match(KV).matches[0]
    assert match.code == "ROLL-901" and next(fix for fix in match.fixes if fix.id == FIX).votes_up == 1
    assert served.home().most_voted[0].fix_id == FIX
    assert served.entry("ROLL-901") is entry  # unchanged votes: the answer built once


def test_what_the_manual_declines_says_why(served):
    with pytest.raises(Refused) as unknown:
        served.entry("CFG-999")
    assert unknown.value.status == 404
    with pytest.raises(Refused) as no_fix:
        served.vote("ROLL-901", "no-such-fix", voter="v1", client="127.0.0.1", worked=True)
    assert no_fix.value.status == 404 and "no fix" in no_fix.value.message


def test_a_command_manual_takes_no_votes(settings):
    ingest(settings)
    manual = Manual.open(settings, fresh=True)
    with pytest.raises(Refused) as refused:
        manual.vote("ROLL-901", FIX, voter="v1", client="cli", worked=True)
    assert refused.value.status == 503


def test_a_fresh_manual_reads_one_generation(settings):
    ingest(settings)
    for name in ("DIST-901.md", "DIST-901.zh.md"):
        (settings.content_dir / name).unlink()  # gone from the checkout, still in the index built before
    manual = Manual.open(settings, fresh=True)
    assert manual.rebuilt and manual.notice is None
    hits = manual.search("watchdog timeout nccl").hits
    assert all(hit.code in manual.catalog for hit in hits)
    assert "DIST-901" not in [match.code for match in manual.match(NCCL_WORDS).matches]
    served = Manual.open(settings)  # what a server opens: the same generation
    assert served.content_hash == manual.content_hash and len(served.catalog) == len(manual.catalog)
