"""What the node answers, as plain dataclasses. Each keeps the node's whole JSON in ``raw``
so that a field this client does not name is still at hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

Json = Dict[str, Any]


@dataclass(frozen=True)
class Submitted:
    """The answer to ``POST /v1/sessions``."""

    session: str
    """The session id (64 hex characters)."""
    tx: str
    """The ``OpenSession`` transaction id."""
    segments: List[Tuple[str, str]]
    """(step name, tier) of each segment in the session, in outcome order."""
    left_out: List[Tuple[str, str, str]]
    """(step name, tier, why) of each step left out of the session."""
    fee: int
    honeypots: int
    replayed: bool
    """True when an ``Idempotency-Key`` repeated an earlier request (nothing charged)."""
    height: int
    """The node's height just before the request: the session's events come after it."""
    raw: Json = field(repr=False)

    @classmethod
    def of(cls, raw: Json, replayed: bool, height: int) -> "Submitted":
        return cls(
            session=raw["session"],
            tx=raw["tx"],
            segments=[(s[0], s[1]) for s in raw.get("segments", [])],
            left_out=[(s[0], s[1], s[2]) for s in raw.get("left_out", [])],
            fee=raw.get("fee", 0),
            honeypots=raw.get("honeypots", 0),
            replayed=replayed,
            height=height,
            raw=raw,
        )


@dataclass(frozen=True)
class Span:
    """Where a step's text sits in the trace: bytes ``start:end`` of the UTF-8 text of one
    part (``problem``, ``thinking`` or ``output``), starting on 1-based ``line``."""

    part: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class Step:
    """One step of the provider's own trace, as its node shows it to its operator."""

    index: int
    name: str
    """The stable name: the HDAG node id (``ST1``, ``O2``), ``honeypot:<node>`` for a
    honeypot the node planted."""
    tier: str
    text: str
    """The step's text, verbatim."""
    verdict: Optional[str]
    """``valid``, ``invalid``, ``ungrounded``, ``propagated`` or ``undecided``; ``None``
    before the session is decided."""
    span: Optional[Span]
    honeypot: bool
    left_out: bool

    @classmethod
    def of(cls, raw: Json) -> "Step":
        span = raw.get("span")
        return cls(
            index=raw["index"],
            name=raw["name"],
            tier=raw["tier"],
            text=raw["text"],
            verdict=raw.get("verdict"),
            span=Span(span["part"], span["start"], span["end"], span["line"]) if span else None,
            honeypot=bool(raw.get("honeypot")),
            left_out=bool(raw.get("left_out")),
        )


def _planted(step: "Step") -> bool:
    """Whether the node planted ``step``: a honeypot, or the calculation beside one."""
    return step.honeypot or step.name.startswith(("honeypot:", "calculation-of-honeypot:"))


@dataclass(frozen=True)
class Session:
    """The answer to ``GET /v1/sessions/{id}``."""

    id: str
    status: str
    """``pending`` (opened by this node, not in a block yet), ``live``, ``decided`` or
    ``failed``."""
    verdict: Optional[str]
    """The trace verdict once decided: ``pass``, ``fail`` or ``inconclusive``."""
    explanation: Optional[str]
    failure_bound: Optional[str]
    phase: Optional[Json]
    """A live session's phase: ``{"name": "commit", "round": 0, "until": 12}``."""
    finality: Optional[Json]
    """A decided session's ``{"state": "final", "at": H}``, ``{"state": "appealable",
    "until": H}`` or ``{"state": "appealing", "round": r}``."""
    steps: List[Step]
    """The model's own steps, in trace order, each under its name with its text and
    verdict: only on the node that opened the session, asked with its operator token
    (empty otherwise). No honeypot is among them (see ``honeypots``)."""
    honeypots: List[Step] = field(default_factory=list)
    """What the node planted among the steps to test the seats (honeypots, and the
    calculations beside them): not the model's, never counted in the verdict."""
    raw: Json = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, raw: Json) -> "Session":
        outcome = raw.get("outcome") or {}
        listed = [Step.of(s) for s in raw.get("steps") or []]
        # A node from before `honeypots` listed them among the steps: apart here too.
        steps = [s for s in listed if not _planted(s)]
        honeypots = [Step.of(s) for s in raw.get("honeypots") or []] + [s for s in listed if _planted(s)]
        return cls(
            id=raw["session"],
            status=raw["status"],
            verdict=raw.get("verdict") or outcome.get("trace"),
            explanation=raw.get("explanation"),
            failure_bound=raw.get("failure_bound"),
            phase=raw.get("phase"),
            finality=raw.get("finality"),
            steps=steps,
            honeypots=sorted(honeypots, key=lambda s: s.index),
            raw=raw,
        )

    @property
    def outcome(self) -> Optional[Json]:
        """The contract's outcome (per-segment verdicts and votes) once decided."""
        return self.raw.get("outcome")

    @property
    def decided(self) -> bool:
        return self.status == "decided"

    @property
    def final(self) -> bool:
        """Decided, and its appeal window passed with no appeal open."""
        return self.decided and (self.finality or {}).get("state") == "final"


@dataclass(frozen=True)
class Listed:
    """One entry of ``GET /v1/sessions?provider=me``."""

    session: str
    opened_ms: int
    labels: Dict[str, str]
    fee: int
    status: str
    verdict: Optional[str]
    raw: Json = field(repr=False)

    @classmethod
    def of(cls, raw: Json) -> "Listed":
        return cls(
            session=raw["session"],
            opened_ms=raw["opened_ms"],
            labels=dict(raw.get("labels") or {}),
            fee=raw.get("fee", 0),
            status=raw["status"],
            verdict=raw.get("verdict"),
            raw=raw,
        )


@dataclass(frozen=True)
class Event:
    """One event of ``GET /v1/events``: ``id`` is ``H:I`` (block height, index)."""

    id: str
    kind: str
    height: int
    session: Optional[str]
    segment: Optional[int]
    verdict: Optional[str]
    raw: Json = field(repr=False)

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> "Event":
        return cls(
            id=raw.get("id", ""),
            kind=raw["kind"],
            height=raw.get("height", 0),
            session=raw.get("session"),
            segment=raw.get("segment"),
            verdict=raw.get("verdict"),
            raw=dict(raw),
        )


@dataclass(frozen=True)
class Verification:
    """What ``trust-node proof verify --json`` established about a bundle."""

    session: str
    verdict: str
    final: bool
    finality: Json
    steps: List[Tuple[str, str, bool]]
    """(step name, verdict, left out) of each step of the trace, when checked against it
    (``trace=``); empty otherwise."""
    report: Json = field(repr=False)
    """The binary's whole JSON report (signed and total power, block, state root, ...)."""

    @classmethod
    def of(cls, report: Json) -> "Verification":
        trace = report.get("trace") or {}
        return cls(
            session=report["session"],
            verdict=report["verdict"],
            final=bool(report.get("final")),
            finality=report.get("finality") or {},
            steps=[(s["step"], s["verdict"], bool(s["left_out"])) for s in trace.get("steps", [])],
            report=report,
        )
