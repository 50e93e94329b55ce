"""The exceptions the client raises."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .models import Verification


class TrustError(Exception):
    """A request the node refused, or one that did not reach it.

    ``status`` is the HTTP status (``None`` when no answer came: the node is unreachable,
    too slow, or a local step failed), ``code`` the node's stable error code (``rejected``,
    ``unauthorized``, ...; or ``unreachable``, ``timeout``, ``malformed`` for failures on
    this side) and ``message`` what the node said.
    """

    def __init__(self, message: str, status: Optional[int] = None, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self) -> str:
        if self.status is None:
            return self.message
        return f"HTTP {self.status} {self.code or 'error'}: {self.message}"


class ProofRejected(TrustError):
    """``trust-node proof verify`` refused the bundle (exit 1): ``message`` says why."""


class NotFinal(TrustError):
    """The proof holds but the outcome is not final yet: an appeal may still change it
    (``proof verify`` exit 3). ``verification`` is what the check established."""

    def __init__(self, message: str, verification: "Verification") -> None:
        super().__init__(message, code="not_final")
        self.verification = verification
