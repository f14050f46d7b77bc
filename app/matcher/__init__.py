"""Paste in, ranked entries out: normalise, split into blocks, match signatures, rank root cause first."""

from app.matcher.rank import CONFIDENT, Diagnosis, Match, Matcher
from app.matcher.signatures import SignatureError, compile_signature

__all__ = ["CONFIDENT", "Diagnosis", "Match", "Matcher", "SignatureError", "compile_signature"]
