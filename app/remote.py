"""`kb match --server URL`: ask a running manual instead of this checkout, with the same answer."""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from app.answers import MatchResponse
from app.manual import Manual

TIMEOUT_S = 60.0


class RemoteError(Exception):
    """The server could not answer: ``exit_code`` 2 when the input was refused, 3 otherwise."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class RemoteManual:
    """The `/api/v1/match` of a running manual (a GPU node with the CLI but no checkout or index)."""

    notice: str | None = None
    rebuilt = False

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def match(self, text: str | bytes, *, limit: int = 5) -> MatchResponse:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        try:
            response = httpx.post(f"{self.url}/api/v1/match", json={"text": text, "limit": limit}, timeout=TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise RemoteError(f"cannot reach {self.url}: {exc}", 3) from None
        if response.status_code == 200:
            try:
                return MatchResponse.model_validate(response.json())
            except (ValueError, ValidationError) as exc:  # another program, or another version of the contract
                raise RemoteError(
                    f"{self.url} answered something that is not a match answer: {str(exc).splitlines()[0]}", 3
                ) from None
        message = _error_message(response)
        exit_code = 2 if 400 <= response.status_code < 500 and response.status_code != 429 else 3
        raise RemoteError(f"{self.url} answered {response.status_code}: {message}", exit_code)

    is_confident = staticmethod(Manual.is_confident)


def _error_message(response: httpx.Response) -> str:
    try:
        return response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response.text[:200]
