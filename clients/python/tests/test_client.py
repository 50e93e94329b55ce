"""The client against a stand-in node (http.server on loopback) and a stand-in binary: the
requests it sends, the errors it raises, the event stream it reads (keep-alives, a
``dropped`` event, a stream the node ends), and how it reads ``proof verify``.

Run: python -m unittest discover -s clients/python/tests (with the package installed)."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import urllib.error
import urllib.request

from trust_client import BUNDLE_FORMAT, Client, NotFinal, ProofRejected, Session, TrustError, verify_proof

SID = "ab" * 32
TOKEN = "t0ken"
STEP = {"index": 0, "name": "O2", "tier": "computer", "text": "Therefore, 5x = 9x − 20",
        "span": {"part": "thinking", "start": 87, "end": 112, "line": 4},
        "verdict": "invalid", "honeypot": False, "left_out": False}
HONEYPOT = {"index": 1, "name": "honeypot:ST1", "tier": "computer", "text": "Subtract 6 from both sides: 20x = 8.",
            "verdict": "invalid", "honeypot": True, "left_out": False}


class Node:
    """What the stand-in answers; ``state`` moves on as the test says."""

    def __init__(self) -> None:
        self.state = "live"
        self.requests: List[Tuple[str, str, Dict[str, str], Optional[Any]]] = []
        self.streams = 0
        #: Where ``/away`` redirects to (another origin), and ``/home`` (this one).
        self.away = ""

    def session(self, authorized: bool) -> Dict[str, Any]:
        s: Dict[str, Any] = {"session": SID, "status": self.state}
        if self.state == "live":
            s["phase"] = {"name": "commit", "round": 0, "until": 12}
        else:
            s["outcome"] = {"trace": "fail"}
            s["finality"] = {"state": "final", "at": 30} if self.state == "final" else {"state": "appealable", "until": 30}
            s["status"] = "decided"
        if authorized:
            s["steps"] = [STEP]
            s["honeypots"] = [HONEYPOT]
        if self.state != "live":
            s["verdict"] = "fail"
        return s


def handler(node: Node) -> type:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def authorized(self) -> bool:
            return self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            node.requests.append(("POST", self.path, dict(self.headers), body))
            if not self.authorized():
                return self.reply(401, {"code": "unauthorized", "message": "needs its operator token"})
            if body["trace"] == "":
                return self.reply(422, {"code": "rejected", "message": "trace: empty"})
            replayed = self.headers.get("Idempotency-Key") == "again"
            self.reply(200 if replayed else 202,
                       {"session": SID, "tx": "cd" * 32, "segments": [["O2", "computer"]],
                        "left_out": [["F1", "llm", "no LLM auditors"]], "fee": 126, "honeypots": 0},
                       {"Idempotent-Replayed": "true"} if replayed else None)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            q = parse_qs(url.query)
            node.requests.append(("GET", self.path, dict(self.headers), None))
            if url.path == "/v1/status":
                return self.reply(200, {"height": 7, "chain_id": "ee" * 32})
            if url.path == f"/v1/sessions/{SID}":
                return self.reply(200, node.session(self.authorized()))
            if url.path == f"/v1/sessions/{SID}/proof":
                return self.reply(200, {"session": SID, "trust": q.get("trust", [None])[0]})
            if url.path == f"/v1/sessions/{SID}/opening":
                if not self.authorized():
                    return self.reply(401, {"code": "unauthorized", "message": "token"})
                return self.reply(200, {"session": SID, "opening": {"mapping": []}})
            if url.path == "/v1/events":
                return self.stream(q)
            if url.path in ("/away", "/home"):
                to = node.away if url.path == "/away" else f"/v1/sessions/{SID}"
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_response(500)  # not JSON: the client says what it got
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"oops")

        def stream(self, q: Dict[str, List[str]]) -> None:
            """First stream: a keep-alive, an event, then `dropped`; the second (after the
            resume id) decides the session and ends."""
            node.streams += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            if node.streams == 1:
                frames = [": keep-alive\n\n",
                          _frame({"id": "8:0", "height": 8, "kind": "seat_drawn", "session": SID, "segment": 0}),
                          _frame({"id": "", "height": 0, "kind": "dropped", "resume_after": "8:0"})]
            else:
                assert q["after"] == ["8:0"], q
                node.state = "final"
                frames = [_frame({"id": "9:3", "height": 9, "kind": "session_decided", "session": SID,
                                  "verdict": "fail"}),
                          _frame({"id": "9:4", "height": 9, "kind": "session_final", "session": SID})]
            for f in frames:
                self.wfile.write(f.encode())
                self.wfile.flush()
            self.close_connection = True

    return H


def _frame(data: Dict[str, Any]) -> str:
    return f"event: {data['kind']}\ndata: {json.dumps(data)}\nid: {data['id']}\n\n"


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.node = Node()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self.node))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.api = f"127.0.0.1:{self.server.server_address[1]}"
        self.client = Client(self.api, token=TOKEN + "\n", timeout=5)

    def tearDown(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def test_submit_sends_the_trace_labels_token_and_key(self) -> None:
        sub = self.client.submit({"problem": "p", "thinking": "t", "output": "o"}, labels={"run": "7"},
                                 options={"seats": 5}, idempotency_key="k1")
        self.assertEqual(sub.session, SID)
        self.assertEqual(sub.segments, [("O2", "computer")])
        self.assertEqual(sub.left_out, [("F1", "llm", "no LLM auditors")])
        self.assertEqual((sub.fee, sub.height, sub.replayed), (126, 7, False))
        _, path, headers, body = self.node.requests[-1]
        self.assertEqual(path, "/v1/sessions")
        self.assertEqual(headers["Authorization"], f"Bearer {TOKEN}")
        self.assertEqual(headers["Idempotency-Key"], "k1")
        self.assertEqual(body, {"trace": {"problem": "p", "thinking": "t", "output": "o"},
                                "labels": {"run": "7"}, "session": {"seats": 5}})
        self.assertTrue(self.client.submit("## Problem", idempotency_key="again").replayed)

    def test_an_agent_transcript_goes_as_its_message_list(self) -> None:
        messages = [{"role": "user", "content": "What is 2 + 3?"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "python", "arguments": "{\"code\": \"print(2 + 3)\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "5"},
                    {"role": "assistant", "content": "It prints 5, so the answer is 5."}]
        self.client.submit(messages)
        _, path, _, body = self.node.requests[-1]
        self.assertEqual(path, "/v1/sessions")
        self.assertEqual(body, {"trace": messages})
        self.client.submit(tuple(messages))
        self.assertEqual(self.node.requests[-1][3], {"trace": messages})
        sent = len(self.node.requests)
        with self.assertRaises(TypeError):
            self.client.submit(["not a message"])  # type: ignore[list-item]
        self.assertEqual(len(self.node.requests), sent, "nothing is sent for a refused trace")

    def test_errors_carry_the_status_code_and_message(self) -> None:
        with self.assertRaises(TrustError) as e:
            self.client.submit("")
        self.assertEqual((e.exception.status, e.exception.code), (422, "rejected"))
        self.assertEqual(e.exception.message, "trace: empty")
        self.assertEqual(str(e.exception), "HTTP 422 rejected: trace: empty")
        with self.assertRaises(TrustError) as e:
            Client(self.api, token="wrong").submit("x")
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(TrustError) as e:
            Client(self.api).submit("x")  # no token: said before anything is sent
        self.assertEqual((e.exception.status, e.exception.code), (None, "unauthorized"))
        with self.assertRaises(TrustError) as e:
            self.client.get("/nowhere")
        self.assertEqual((e.exception.status, e.exception.message), (500, "oops"))
        self.server.shutdown()
        self.server.server_close()
        with self.assertRaises(TrustError) as e:
            self.client.status()
        self.assertEqual(e.exception.code, "unreachable")

    def test_session_steps_need_the_token(self) -> None:
        s = self.client.session(SID)
        self.assertEqual((s.status, s.phase), ("live", {"name": "commit", "round": 0, "until": 12}))
        self.assertEqual(s.steps[0].text, "Therefore, 5x = 9x − 20")
        self.assertEqual(s.steps[0].span.start if s.steps[0].span else None, 87)
        self.assertEqual(Client(self.api).session(SID).steps, [])
        self.assertEqual(self.client.session(SID, steps=False).steps, [])

    def test_steps_are_the_models_own_and_the_honeypots_apart(self) -> None:
        s = self.client.session(SID)
        self.assertEqual([x.name for x in s.steps], ["O2"])
        self.assertEqual([x.name for x in s.honeypots], ["honeypot:ST1"])
        # A node from before `honeypots` listed them among the steps, in session order.
        old = {"session": SID, "status": "decided", "outcome": {"trace": "fail"},
               "steps": [dict(STEP, index=0), dict(HONEYPOT, index=1),
                         dict(STEP, index=2, name="calculation-of-honeypot:ST1", honeypot=False),
                         dict(STEP, index=3, name="O3")]}
        s = Session.of(old)
        self.assertEqual([x.name for x in s.steps], ["O2", "O3"])
        self.assertEqual([x.name for x in s.honeypots], ["honeypot:ST1", "calculation-of-honeypot:ST1"])
        self.assertEqual(s.verdict, "fail")  # from outcome.trace when the node gives no `verdict`
        self.assertEqual(Session.of(dict(old, verdict="pass")).verdict, "pass")

    def test_the_token_never_follows_a_redirect_to_another_origin(self) -> None:
        elsewhere = Node()
        other = ThreadingHTTPServer(("127.0.0.1", 0), handler(elsewhere))
        threading.Thread(target=other.serve_forever, daemon=True).start()
        try:
            # Same host, another port: another origin.
            self.node.away = f"http://127.0.0.1:{other.server_address[1]}/v1/sessions/{SID}"
            with self.assertRaises(TrustError) as e:
                self.client.get("/away", auth=True)
            self.assertEqual((e.exception.code, e.exception.status), ("redirect", 302))
            self.assertEqual(elsewhere.requests, [], "not followed at all")
            # Without the token the redirect is followed, and carries none.
            self.assertEqual(self.client.get("/away")["session"], SID)
            self.assertEqual(len(elsewhere.requests), 1)
            self.assertNotIn("Authorization", elsewhere.requests[0][2])
            # Within the node's own origin the token goes along.
            self.assertEqual(self.client.get("/home", auth=True)["steps"][0]["name"], "O2")
            self.assertEqual(self.node.requests[-1][2].get("Authorization"), f"Bearer {TOKEN}")
        finally:
            other.shutdown()
            other.server_close()

    def test_no_token_over_plain_http_to_another_host_unless_asked(self) -> None:
        sent: List[urllib.request.Request] = []

        class Opener:
            def open(self, req: urllib.request.Request, timeout: float) -> Any:
                sent.append(req)
                raise urllib.error.URLError("not connected (test)")

        def ask(api: str, **kw: Any) -> TrustError:
            c = Client(api, token=TOKEN, **kw)
            c._opener = Opener()  # type: ignore[assignment]
            with self.assertRaises(TrustError) as e:
                c.session(SID)
            return e.exception

        for api in ("http://192.0.2.7:26602", "node.example:26602", "http://[2001:db8::1]:26602"):
            self.assertEqual(ask(api).code, "insecure", api)
            self.assertEqual(sent, [], f"{api}: nothing sent")
        # Loopback, https, or plain http by explicit choice: sent, with the token.
        for api, kw in (("http://127.0.0.1:26602", {}), ("http://localhost:1", {}), ("http://[::1]:1", {}),
                        ("http://127.0.0.2:1", {}), ("https://node.example", {}),
                        ("http://192.0.2.7:26602", {"allow_plain_http": True})):
            self.assertEqual(ask(api, **kw).code, "unreachable", api)
            self.assertEqual(sent.pop().get_header("Authorization"), f"Bearer {TOKEN}", api)
        # No token asked for: a read goes anywhere.
        c = Client("http://192.0.2.7:26602", token=TOKEN)
        c._opener = Opener()  # type: ignore[assignment]
        with self.assertRaises(TrustError) as e:
            c.status()
        self.assertEqual(e.exception.code, "unreachable")
        self.assertIsNone(sent.pop().get_header("Authorization"))

    def test_wait_follows_the_stream_through_keep_alives_and_a_drop(self) -> None:
        seen: List[str] = []
        sub = self.client.submit("## Problem")
        s = self.client.wait(sub, final=True, timeout=10, on_event=lambda e: seen.append(e.kind))
        self.assertTrue(s.final)
        self.assertEqual((s.verdict, s.steps[0].name), ("fail", "O2"))
        self.assertEqual(seen, ["seat_drawn", "session_decided", "session_final"])
        first = next(p for m, p, _, _ in self.node.requests if p.startswith("/v1/events"))
        self.assertIn(f"session={SID}", first)
        self.assertIn("after=7", first)  # the height before the submission
        self.assertEqual(self.node.streams, 2)
        # Already there: no stream opened.
        self.assertTrue(self.client.wait(SID, final=True, timeout=5).final)
        self.assertEqual(self.node.streams, 2)

    def test_events_resume_after_a_drop_and_end_with_the_stream(self) -> None:
        ids = [e.id for e in self.client.events(session=SID, kinds=["seat_drawn", "session_final"], after="7")]
        self.assertEqual(ids, ["8:0", "9:3", "9:4"])
        first = next(p for m, p, _, _ in self.node.requests if p.startswith("/v1/events"))
        self.assertIn("kind=seat_drawn%2Csession_final", first)

    def test_export_proof_writes_a_bundle_and_keeps_an_existing_file(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "outcome.proof")
            self.client.export_proof(SID, path, trust="5:" + "aa" * 32)
            with open(path, encoding="utf-8") as f:
                b = json.load(f)
            self.assertEqual(b["format"], BUNDLE_FORMAT)
            self.assertEqual(b["chain"], "ee" * 32)
            self.assertEqual(b["proof"]["trust"], "5:" + "aa" * 32)
            self.assertEqual(b["opening"], {"mapping": []})
            with self.assertRaises(TrustError):
                self.client.export_proof(SID, path)
            self.client.export_proof(SID, path, opening=False, force=True)
            with open(path, encoding="utf-8") as f:
                self.assertNotIn("opening", json.load(f))


class VerifyTest(unittest.TestCase):
    """``verify_proof`` reads the binary's exit status and JSON, with a stand-in binary."""

    def binary(self, code: int, stdout: str, stderr: str = "") -> str:
        path = os.path.join(self.dir.name, f"trust-node-{code}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!{sys.executable}\nimport sys\n"
                    f"open(sys.argv[0] + '.args', 'w').write(' '.join(sys.argv[1:]))\n"
                    f"sys.stdout.write({stdout!r}); sys.stderr.write({stderr!r}); sys.exit({code})\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.report = {"verified": True, "session": SID, "verdict": "fail", "final": True,
                       "finality": {"state": "final", "at": 30},
                       "trace": {"steps": [{"step": "O2", "verdict": "invalid", "left_out": False}]}}

    def tearDown(self) -> None:
        self.dir.cleanup()

    def test_a_final_proof(self) -> None:
        b = self.binary(0, json.dumps(self.report))
        v = verify_proof("x.proof", "genesis.json", binary=b, trace="t.txt", session=SID)
        self.assertEqual((v.verdict, v.final, v.steps), ("fail", True, [("O2", "invalid", False)]))
        with open(b + ".args", encoding="utf-8") as f:
            self.assertEqual(f.read(), f"proof verify x.proof --genesis genesis.json --json --trace t.txt --session {SID}")

    def test_not_final_and_rejected(self) -> None:
        self.report["final"] = False
        b = self.binary(3, json.dumps(self.report), "error: NOT FINAL: appealable until block 30\n")
        with self.assertRaises(NotFinal) as e:
            verify_proof("x.proof", "g.json", binary=b)
        self.assertFalse(e.exception.verification.final)
        self.assertIn("NOT FINAL", e.exception.message)
        b = self.binary(1, "", "error: proof REJECTED: certificate signature of ab does not verify\n")
        with self.assertRaises(ProofRejected) as r:
            verify_proof("x.proof", "g.json", binary=b)
        self.assertEqual(r.exception.message, "proof REJECTED: certificate signature of ab does not verify")
        with self.assertRaises(TrustError) as t:
            verify_proof("x.proof", "g.json", binary=os.path.join(self.dir.name, "missing"))
        self.assertEqual(t.exception.code, "no_binary")


if __name__ == "__main__":
    unittest.main()
