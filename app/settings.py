"""Typed settings, read from environment variables prefixed ``KB_``."""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent
RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day)\s*$")


class Settings(BaseSettings):
    """Every knob of the manual; the README's settings table documents each field."""

    model_config = SettingsConfigDict(env_prefix="KB_", extra="ignore")

    host: str = Field("127.0.0.1", description="Address `kb serve` and `make run` listen on.")
    port: int = Field(8000, ge=1, le=65535, description="Port `kb serve` and `make run` listen on.")
    data_dir: Path = Field(
        Path("data"), description="Holds the SQLite file, the search index, the verl wheel and the secret key."
    )
    releases_dir: Path | None = Field(
        None,
        description="Cached facts of every verl release (declared requirements, raise sites); "
        "empty means `<data_dir>/verl`. `kb index` fills it from the package registry.",
    )
    content_dir: Path = Field(ROOT / "content" / "errors", description="Folder of the Markdown error entries.")
    database_url: str = Field(
        "",
        description="SQLAlchemy URL; empty means SQLite at `<data_dir>/kb.sqlite3`. "
        "PostgreSQL: `postgresql+psycopg://user@host:5432/db`.",
    )
    max_paste_bytes: int = Field(
        2 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="Largest paste or request body accepted; larger ones get 413.",
    )
    vote_rate_limit: str = Field(
        "30/minute", description="Votes allowed per IP and per voter, as `N/second|minute|hour|day`."
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins allowed to call the JSON API from a browser (JSON list or comma list).",
    )
    embed_frame_ancestors: str = Field(
        "'self'",
        description="CSP `frame-ancestors` value sent with `/embed/*` pages (the wikis allowed to frame them).",
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        description="Host headers the MCP endpoint accepts (`host:port`, `host:*`); add your public hostname.",
    )
    public_url: str = Field(
        "",
        description="Base URL of the manual as users reach it (links in MCP answers, oEmbed and `kb match`); "
        "empty means `http://KB_HOST:KB_PORT`.",
    )
    secret_key: str = Field(
        "",
        description="Signs voter cookies and CSRF tokens; when empty one is generated and kept in `<data_dir>/secret_key`.",
    )
    search_cache_size: int = Field(
        2048, ge=0, le=1_000_000, description="Search results kept per index generation (0 turns the cache off)."
    )
    vote_counts_ttl: float = Field(
        1.0,
        ge=0,
        le=3600,
        description="Seconds a server reuses its snapshot of the vote counts shown beside matches, in lists "
        "and on entry pages (0 reads them for every answer); its own votes refresh it at once, other replicas' within "
        "this time.",
    )
    max_concurrent_requests: int = Field(
        4,
        ge=1,
        le=256,
        description="Requests worked on at once per server process (diagnoses, pages, votes); "
        "more wait in the queue. CPU-bound work gains nothing from more than a few per core.",
    )
    max_queued_requests: int = Field(
        256,
        ge=0,
        le=100_000,
        description="Requests allowed to wait for a free slot; one more is refused at once with 503 and `Retry-After`.",
    )
    queue_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds a request may wait for a free slot before it gets 503 with `Retry-After`.",
    )
    server: str = Field(
        "",
        description="URL of a running manual that `kb match` asks instead of this checkout (same as `--server`).",
    )
    keep_alive_timeout: int = Field(
        75,
        ge=1,
        le=3600,
        description="Seconds an idle HTTP connection stays open. Longer than the idle expiry of "
        "clients and proxies (httpx and requests 5 s, nginx upstream 60 s), so the server never closes a connection "
        "a client is reusing at that moment (which reaches the client as a reset, not an answer).",
    )
    max_image_bytes: int = Field(
        8 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="Largest screenshot accepted (PNG, JPEG or WebP); larger ones get 413.",
    )
    max_image_pixels: int = Field(
        25_000_000,
        ge=10_000,
        le=200_000_000,
        description="Most pixels a screenshot may have (width x height, read "
        "from its header before decoding); more get 413, so a small file declaring a huge image is never decoded.",
    )
    ocr_timeout: float = Field(
        30.0,
        gt=0,
        le=600,
        description="Seconds one screenshot may take to read; past them the answer is 422 and the work stops.",
    )
    ocr_concurrency: int = Field(
        1,
        ge=1,
        le=64,
        description="Screenshots read at once per server process; others wait up to "
        "`KB_QUEUE_TIMEOUT` seconds, then get 503.",
    )
    ocr_threads: int = Field(
        0,
        ge=0,
        le=256,
        description="CPU threads one screenshot's OCR uses (0: onnxruntime's default, every core).",
    )
    verl_version: str = Field(
        "0.9.1", description="The verl release whose config keys and modules `kb check` verifies against."
    )
    record_misses: bool = Field(
        True,
        description="Record what the manual could not answer for maintainers (`/insights`): fingerprints of "
        "unanswered errors, searches, 'this is not my error' reports. Never the paste itself. Off: nothing is recorded.",
    )
    insights_retention_days: int = Field(
        90,
        ge=1,
        le=3650,
        description="Days a recorded fingerprint, search or report is kept after it was last seen.",
    )
    insights_token: str = Field(
        "",
        description="Bearer token that opens `/insights` and `GET /api/v1/insights`; empty turns both off (404).",
    )

    @field_validator("cors_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            if value.strip().startswith("["):
                return json.loads(value)
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("cors_origins")
    @classmethod
    def _no_wildcard_origin(cls, value: list[str]) -> list[str]:
        if "*" in value:
            raise ValueError("a wildcard CORS origin would let any site drive votes; list origins explicitly")
        return value

    @field_validator("vote_rate_limit")
    @classmethod
    def _rate_parses(cls, value: str) -> str:
        if not RATE_RE.match(value):
            raise ValueError("write the rate as N/second, N/minute, N/hour or N/day")
        return value

    @field_validator("secret_key")
    @classmethod
    def _secret_long_enough(cls, value: str) -> str:
        if value and len(value) < 32:
            raise ValueError("a secret key needs at least 32 characters")
        return value

    @field_validator("insights_token")
    @classmethod
    def _insights_token_long_enough(cls, value: str) -> str:
        if value and len(value) < 16:
            raise ValueError("an insights token needs at least 16 characters")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url_scheme(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("the public URL starts with http:// or https://")
        return value.rstrip("/")

    @property
    def base_url(self) -> str:
        """The URL users reach the manual at."""
        return self.public_url or f"http://{self.host}:{self.port}"

    @property
    def sqlalchemy_url(self) -> str:
        """Return the database URL, defaulting to SQLite in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'kb.sqlite3').resolve()}"

    @property
    def verl_dir(self) -> Path:
        return self.releases_dir or self.data_dir / "verl"

    @property
    def max_body_bytes(self) -> int:
        """The largest request body a paste or a screenshot may need (base64 makes an image 4/3 larger)."""
        return max(self.max_paste_bytes, -(-self.max_image_bytes * 4 // 3))

    def vote_rate(self) -> tuple[int, int]:
        """Return the vote limit as (count, window in seconds)."""
        match = RATE_RE.match(self.vote_rate_limit)
        assert match  # the validator guarantees it
        seconds = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}[match.group(2)]
        return int(match.group(1)), seconds

    def resolved_secret(self) -> str:
        """Return the secret key, creating and persisting one in the data dir when unset."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(48)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(key)
        tmp.chmod(0o600)
        try:
            # link() fails if another process won the race; then its key is the one to use
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        return path.read_text().strip()
