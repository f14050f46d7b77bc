"""Record what the manual could not answer without ever slowing or breaking an answer.

Requests hand their observation to a queue and go on; one writer thread adds up what is queued and
writes it in one transaction, in its own session opened and closed there. A failed write is logged and
dropped, a full queue drops the observation: recording is best effort, answers are not.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from datetime import timedelta

from sqlalchemy.engine import Engine

from app.insights.fingerprint import observe, search_key
from app.insights.store import Tally, purge_expired, write_tally
from app.matcher import Diagnosis
from app.store.db import session_scope
from app.store.tables import utcnow

log = logging.getLogger("kb.insights")
QUEUE_SIZE = 10_000
BATCH = 500  # observations written in one transaction at most
GATHER_S = 0.5  # how long the writer waits for more observations before it writes
PURGE_EVERY_S = 3600.0


class Recorder:
    """The one way observations reach the database; does nothing when recording is off."""

    def __init__(self, engine: Engine, *, enabled: bool, retention_days: int):
        self.engine = engine
        self.enabled = enabled
        self.retention = timedelta(days=retention_days)
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._purged_at = float("-inf")
        self.dropped = 0

    def diagnosed(self, diagnosis: Diagnosis) -> None:
        """A paste was diagnosed: keep its fingerprint, and whether the manual missed it."""
        if not self.enabled:
            return
        try:
            observation = observe(diagnosis)
        except Exception:  # a fingerprint that cannot be made is not the user's problem
            log.exception("could not fingerprint a diagnosis")
            return
        if observation is not None:
            self._put(("fingerprint", observation.fingerprint, observation.missed))

    def searched(self, query: str, hits: int, *, on_page: bool) -> None:
        """A search was submitted (on the search page, ``on_page``, it can be followed by an open)."""
        key = search_key(query) if self.enabled else ""
        if key:
            self._put(("search", key, hits, on_page))

    def opened(self, query: str) -> None:
        """A result of the search page's ``query`` was opened."""
        key = search_key(query) if self.enabled else ""
        if key:
            self._put(("open", key))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is written (tests, shutdown); False on timeout."""
        if not self.enabled or self._thread is None:
            return True
        done = threading.Event()
        self._put(("flush", done), block=True)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued and stop the writer."""
        if self._thread is not None:
            self.flush(timeout)
            self._queue.put(None)
            self._thread.join(timeout)
            self._thread = None

    def start(self) -> None:
        """Start the writer before the first request needs it (it also starts on first use)."""
        if self.enabled:
            self._ensure_writer()

    def _put(self, item: tuple, block: bool = False) -> None:
        self._ensure_writer()
        try:
            self._queue.put(item, block=block, timeout=10 if block else None)
        except queue.Full:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("insights queue full: %d observations dropped so far", self.dropped)

    def _ensure_writer(self) -> None:
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="kb-insights", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            # gather what comes within a moment: one transaction for a burst, not one per request
            deadline = time.monotonic() + GATHER_S
            while len(items) < BATCH and items[-1] is not None and items[-1][0] != "flush":
                try:
                    items.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            stop = None in items
            self._write([item for item in items if item is not None])
            if stop:
                return

    def _write(self, items: list[tuple]) -> None:
        tally, waiting = Tally(), []
        for kind, *rest in items:
            if kind == "fingerprint":
                tally.fingerprint(*rest)
            elif kind == "search":
                tally.search(rest[0], rest[1], rest[2])
            elif kind == "open":
                tally.open(rest[0])
            else:
                waiting.append(rest[0])
        try:
            with session_scope(self.engine) as session:
                if tally:
                    write_tally(session=session, tally=tally)
                if time.monotonic() - self._purged_at > PURGE_EVERY_S:
                    purge_expired(session=session, before=utcnow() - self.retention)
                    self._purged_at = time.monotonic()
        except Exception:  # the database is down or busy: these observations are lost, answers are not
            log.exception("could not record %d insights observations", len(items) - len(waiting))
        for event in waiting:
            event.set()
