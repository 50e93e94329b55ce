"""A client for the TRUST audit network node's HTTP API, on the standard library alone.

    from trust_client import Client, verify_proof

    node = Client("http://127.0.0.1:26602", token=open("node0/operator.token").read())
    sub = node.submit(open("trace.txt").read(), labels={"run": "7"})
    s = node.wait(sub)                      # follows GET /v1/events until decided
    for step in s.steps:                    # the model's own steps, in trace order
        print(step.name, step.verdict, step.text)
    node.wait(sub, final=True)              # until the appeal window has passed
    node.export_proof(sub, "outcome.proof")
    v = verify_proof("outcome.proof", "genesis.json", trace="trace.txt")

See docs/python.md in the repository.
"""

from .client import BUNDLE_FORMAT, Client
from .errors import NotFinal, ProofRejected, TrustError
from .models import Event, Listed, Session, Span, Step, Submitted, Verification
from .proof import find_binary, verify_proof

__version__ = "0.1.0"

__all__ = [
    "BUNDLE_FORMAT",
    "Client",
    "Event",
    "Listed",
    "NotFinal",
    "ProofRejected",
    "Session",
    "Span",
    "Step",
    "Submitted",
    "TrustError",
    "Verification",
    "find_binary",
    "verify_proof",
]
