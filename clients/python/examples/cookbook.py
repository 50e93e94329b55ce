#!/usr/bin/env python3
"""Submit a trace to a TRUST node, wait for its outcome, print each of the model's steps
with its text and verdict (in trace order; the honeypots the node planted apart), then
export the outcome's proof and verify it offline against the genesis file.

    python cookbook.py --api 127.0.0.1:26602 --token "$(cat node0/operator.token)" \
        --trace examples/traces/fraction-incorrect.txt --binary target/debug/trust-node \
        --genesis node0/genesis.json

Exits 0 when every step worked and the proof verified, 1 otherwise (see docs/python.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Set, Union

from trust_client import Client, Event, Step, TrustError, verify_proof

#: The events worth a line (seats drawn, commits and rewards are left out).
SHOWN = {"session_opened", "segment_decided", "session_decided", "session_failed",
         "session_final", "appeal_opened", "appeal_decided", "slash"}


def read_trace(path: str) -> Union[str, Dict[str, Any]]:
    """A JSON object file as a dict (``{"problem", "thinking", "output"}``), else text."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


class EventPrinter:
    """One line per event worth it, each once (the wait for final replays the earlier
    ones), segments named as ``submit`` named them (segment i of the outcome is the i-th)."""

    def __init__(self, names: List[str]) -> None:
        self.names = names
        self.seen: Set[str] = set()

    def __call__(self, e: Event) -> None:
        if e.kind not in SHOWN or e.id in self.seen:
            return
        self.seen.add(e.id)
        what = e.kind.replace("_", " ")
        if e.segment is not None:
            name = self.names[e.segment] if e.segment < len(self.names) else "?"
            what += f" {e.segment} ({name})"
        if e.verdict:
            what += f": {e.verdict}"
        print(f"event     #{e.height:<5} {what}", flush=True)


def show_steps(steps: List[Step], honeypots: List[Step]) -> None:
    """The model's own steps in trace order; then, apart, what the node planted."""
    width = max([len(s.name) for s in steps + honeypots] + [4])
    for label, rows in (("steps", steps), ("honeypots", honeypots)):
        if not rows:
            continue
        head = "text" if label == "steps" else "text (planted by the node: not the model's, never counted)"
        print(f"{label:<9} {'name':<{width}}  {'verdict':<10}  {'tier':<8}  {head}")
        for s in rows:
            note = " (left out)" if s.left_out else ""
            first, *rest = s.text.splitlines() or [""]
            print(f"          {s.name:<{width}}  {s.verdict or '-':<10}  {s.tier:<8}  {first}{note}")
            for line in rest:
                print(f"          {'':<{width}}  {'':<10}  {'':<8}  {line}")


def finality_text(f: Optional[Mapping[str, Any]]) -> str:
    f = f or {}
    if f.get("state") == "final":
        return f"final at block {f.get('at')}"
    if f.get("state") == "appealable":
        return f"appealable until block {f.get('until')}"
    return str(f.get("state", "unknown"))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--api", required=True, help="the node's API, http://HOST:PORT or HOST:PORT")
    p.add_argument("--token", default=os.environ.get("TRUST_API_TOKEN"),
                   help="the node's operator token (default: $TRUST_API_TOKEN)")
    p.add_argument("--trace", required=True, help="the trace file: ## headings, or a JSON object")
    p.add_argument("--binary", default=None, help="trust-node, for proof verify "
                   "(default: $TRUST_NODE_BIN, else trust-node on the PATH)")
    p.add_argument("--genesis", default="genesis.json", help="the network's genesis file (default: ./genesis.json)")
    p.add_argument("--out", default=None, help="directory for the proof bundle (default: a new temporary one)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each of decided and final")
    p.add_argument("--allow-plain-http", action="store_true",
                   help="send the token over plain http to a host that is not this machine (a network you trust)")
    a = p.parse_args(argv)
    if not a.token:
        print("error: --token (or TRUST_API_TOKEN) is required: submitting spends the node's funds", file=sys.stderr)
        return 2

    node = Client(a.api, token=a.token, allow_plain_http=a.allow_plain_http)
    try:
        sub = node.submit(read_trace(a.trace), labels={"example": "cookbook"})
        print(f"session   {sub.session}")
        print(f"fee       {sub.fee}")
        print(f"segments  {' '.join(n for n, _ in sub.segments)}")
        for name, tier, why in sub.left_out:
            print(f"left out  {name} ({tier}: {why})")

        show_event = EventPrinter([n for n, _ in sub.segments])
        s = node.wait(sub, timeout=a.timeout, on_event=show_event)
        if s.status != "decided":
            print(f"error: the session {s.status}: {s.raw.get('failure')}", file=sys.stderr)
            return 1
        print(f"verdict   {(s.verdict or '?').upper()}")
        if s.explanation:
            print(f"why       {s.explanation}")
        if s.failure_bound:
            print(f"bound     {s.failure_bound}")
        if not s.steps:
            print("error: the node showed no steps: is the token this node's, and did it open the session?",
                  file=sys.stderr)
            return 1
        show_steps(s.steps, s.honeypots)

        # A proof of an outcome an appeal may still change proves little: wait for final.
        s = node.wait(sub, final=True, timeout=a.timeout, on_event=show_event)
        print(f"finality  {finality_text(s.finality)}")

        out = a.out or tempfile.mkdtemp(prefix="trust-proof-")
        path = node.export_proof(sub, os.path.join(out, f"{sub.session}.proof"), force=True)
        print(f"proof     {path} ({os.path.getsize(path)} bytes)")

        v = verify_proof(path, a.genesis, binary=a.binary, trace=a.trace, session=sub.session)
        r = v.report
        print(f"verified  {v.verdict.upper()}, {finality_text(v.finality)}; block {r['height']} signed by "
              f"{r['signed_power']} of {r['total_power']} voting power; against genesis {r['chain']}")
        print("checked   " + ", ".join(f"{n} {vd}" + (" (left out)" if lo else "") for n, vd, lo in v.steps))
    except TrustError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    # The proven outcome must say what the node said, step by step.
    said = {x.name: x.verdict for x in s.steps}
    differ = [n for n, vd, _ in v.steps if said.get(n) != vd]
    if v.verdict != s.verdict or differ:
        print(f"error: the proof and the node disagree (verdict {v.verdict} vs {s.verdict}; steps {differ})",
              file=sys.stderr)
        return 1
    print("ok        the proof verified and agrees with the node, step by step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
