"""Voter identity: a random id in a signed cookie, and CSRF tokens derived from it."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import HTTPException, Request, Response

VOTER_COOKIE = "kb_voter"
COOKIE_MAX_AGE = 5 * 365 * 24 * 3600


def _mac(secret: str, purpose: str, value: str) -> str:
    return hmac.new(secret.encode(), f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()[:32]


def sign_voter(secret: str, voter: str) -> str:
    return f"{voter}.{_mac(secret, 'voter', voter)}"


def read_voter(secret: str, cookie: str | None) -> str | None:
    """Return the voter id of a cookie whose signature checks out, else None."""
    if not cookie or "." not in cookie:
        return None
    voter, _, mac = cookie.rpartition(".")
    if not voter or not hmac.compare_digest(mac, _mac(secret, "voter", voter)):
        return None
    return voter


def new_voter() -> str:
    return secrets.token_urlsafe(16)


def voter_of(request: Request) -> tuple[str, bool]:
    """Return (voter id, is_new): the cookie's voter, or a fresh one the response must set."""
    secret = request.app.state.kb.secret
    voter = read_voter(secret, request.cookies.get(VOTER_COOKIE))
    return (voter, False) if voter else (new_voter(), True)


def set_voter_cookie(request: Request, response: Response, voter: str) -> None:
    response.set_cookie(
        VOTER_COOKIE,
        sign_voter(request.app.state.kb.secret, voter),
        max_age=COOKIE_MAX_AGE,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def csrf_token(secret: str, voter: str) -> str:
    return _mac(secret, "csrf", voter)


def csrf_valid(secret: str, voter: str, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(token, csrf_token(secret, voter))


def form_voter(request: Request, csrf: str, expired: str) -> str:
    """The voter of a no-JavaScript form POST: a known cookie and its CSRF token, or 403 with ``expired``."""
    voter, is_new = voter_of(request)
    if is_new or not csrf_valid(request.app.state.kb.secret, voter, csrf):
        raise HTTPException(403, expired)
    return voter


def client_address(request: Request) -> str:
    """The peer address (uvicorn applies X-Forwarded-For only from trusted proxies)."""
    return request.client.host if request.client else "unknown"
