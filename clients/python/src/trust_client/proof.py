"""Offline verification of a proof bundle, by the node's own binary.

The check (certificates signed by more than 2/3 of the voting power walked from the
genesis file, the outcome's Merkle proof under the certified state root, and with a trace
the segment ids cut again from it) is ``trust-node proof verify``'s; this module runs it
and reads its ``--json`` report rather than reimplementing the cryptography."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import List, Optional, Union

from .errors import NotFinal, ProofRejected, TrustError
from .models import Verification

PathLike = Union[str, "os.PathLike[str]"]

#: ``proof verify``'s exit statuses.
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_NOT_FINAL = 3


def find_binary(binary: Optional[PathLike] = None) -> str:
    """``binary``, else ``$TRUST_NODE_BIN``, else ``trust-node`` on the ``PATH``."""
    if binary:
        return os.fspath(binary)
    found = os.environ.get("TRUST_NODE_BIN") or shutil.which("trust-node")
    if not found:
        raise TrustError("no trust-node binary: pass binary=, set TRUST_NODE_BIN, or put it on the PATH",
                         code="no_binary")
    return found


def verify_proof(
    bundle: PathLike,
    genesis: PathLike,
    *,
    binary: Optional[PathLike] = None,
    trace: Optional[PathLike] = None,
    session: Optional[str] = None,
    trust: Optional[str] = None,
    allow_non_final: bool = False,
    timeout: float = 120.0,
) -> Verification:
    """Runs ``trust-node proof verify BUNDLE --genesis GENESIS --json`` (with ``--trace``,
    ``--session``, ``--trust``, ``--allow-non-final`` when given) and returns its report.

    Raises ``ProofRejected`` when the bundle does not hold (exit 1, the binary's reason),
    ``NotFinal`` when it holds but an appeal may still change the outcome (exit 3; not
    with ``allow_non_final``), and ``TrustError`` for anything else (a file it cannot
    read, no binary, a timeout)."""
    args: List[str] = [find_binary(binary), "proof", "verify", os.fspath(bundle),
                       "--genesis", os.fspath(genesis), "--json"]
    if trace is not None:
        args += ["--trace", os.fspath(trace)]
    if session is not None:
        args += ["--session", session]
    if trust is not None:
        args += ["--trust", trust]
    if allow_non_final:
        args.append("--allow-non-final")
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TrustError(f"proof verify took more than {timeout:g} s", code="timeout") from None
    except OSError as e:
        raise TrustError(f"cannot run {args[0]}: {e}", code="no_binary") from None
    said = done.stderr.strip()
    if said.startswith("error: "):
        said = said[len("error: "):]
    if done.returncode == EXIT_REJECTED:
        raise ProofRejected(said or "proof REJECTED", code="rejected")
    if done.returncode not in (0, EXIT_NOT_FINAL):
        raise TrustError(said or f"proof verify exited with {done.returncode}", code="verify_failed")
    try:
        v = Verification.of(json.loads(done.stdout))
    except (ValueError, KeyError, TypeError) as e:
        raise TrustError(f"proof verify printed no report: {e}: {done.stdout[:200]!r}", code="malformed") from None
    if done.returncode == EXIT_NOT_FINAL:
        raise NotFinal(said, v)
    return v
