"""The HTTP client: one method per route of the node's API that a provider uses."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import TrustError
from .models import Event, Json, Listed, Session, Submitted

#: The bundle format ``trust-node proof export`` writes and ``proof verify`` reads.
BUNDLE_FORMAT = "trust-outcome-proof/3"

#: Kinds after which a waited-for session may have changed state.
_DECIDING = {"session_decided", "session_failed", "appeal_decided"}
_FINALIZING = {"session_final", "session_failed"}
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}

# A trace: the paper's ``##`` text, a ``{"problem", "thinking", "output"}`` dict, or an agent
# transcript as the provider's API gave it (an OpenAI or Anthropic message list, or a dict
# such as ``{"messages": [...], "tools": [...]}``); the node reads every form (docs/transcripts.md).
Trace = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def _origin(url: str) -> Tuple[str, str, int]:
    """Scheme, host (lower case) and port of ``url``: what a browser calls its origin."""
    u = urllib.parse.urlsplit(url)
    scheme = u.scheme.lower()
    try:
        port = u.port
    except ValueError:
        port = None
    return scheme, (u.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` or a loopback address."""
    if host.lower() in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect with the operator token only within the node's own origin: the
    token rides as an unredirected header (urllib copies none of those to the next
    request), is put back on a redirect to the same origin, and a redirect elsewhere of a
    request that carried it is refused rather than followed."""

    def __init__(self, origin: Tuple[str, str, int]) -> None:
        super().__init__()
        self.origin = origin

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> Optional[urllib.request.Request]:
        token = req.unredirected_hdrs.get("Authorization")
        if token is not None and _origin(newurl) != self.origin:
            fp.close()
            scheme, host, port = _origin(newurl)
            raise TrustError(f"the node redirected a request that carries the operator token to another "
                             f"origin ({scheme}://{host}:{port}): not followed, the token stays here",
                             status=code, code="redirect")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and token is not None:
            new.add_unredirected_header("Authorization", token)
        return new


class Client:
    """A TRUST node's HTTP API at ``api`` (``http://127.0.0.1:26602``, or ``HOST:PORT``).

    ``token`` is the node's operator token (``<home>/operator.token``): it is needed to open
    sessions, to list them, to read a session's steps with their text, and to export a
    proof with the session's opening. ``timeout`` (seconds) bounds every request, and each
    read of the event stream.

    The token goes to ``api``'s origin (scheme, host, port) and nowhere else: a redirect
    of a request that carries it to another origin is refused (``TrustError``, code
    ``redirect``). Over plain ``http`` it goes only to a loopback address (anyone on the
    path could read it otherwise); ``allow_plain_http=True`` sends it to another host over
    ``http`` all the same, for a network you trust (a private link, an SSH tunnel's far
    end). Without it such a call raises ``TrustError`` (code ``insecure``) before
    anything is sent.
    """

    def __init__(self, api: str, token: Optional[str] = None, *, timeout: float = 30.0,
                 allow_plain_http: bool = False) -> None:
        self.api = (api if "://" in api else "http://" + api).rstrip("/")
        self.token = token.strip() if token else None
        self.timeout = timeout
        self.allow_plain_http = allow_plain_http
        self._origin = _origin(self.api)
        host = self._origin[1]
        # Loopback is never sent through a proxy the environment names.
        handlers: List[urllib.request.BaseHandler] = [_Redirects(self._origin)]
        if _loopback(host):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    # --- HTTP -------------------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        *,
        body: Optional[Any] = None,
        auth: bool = False,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Any:
        """The response to ``method path`` (a file-like object), or ``TrustError``."""
        h = {"Accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        if auth:
            if not self.token:
                raise TrustError(f"{method} {path} needs the node's operator token", code="unauthorized")
            scheme, host, _ = self._origin
            if scheme != "https" and not _loopback(host) and not self.allow_plain_http:
                raise TrustError(f"{method} {path}: not sending the operator token over plain {scheme} to "
                                 f"{host}, which is not this machine (use https, or pass "
                                 f"allow_plain_http=True for a network you trust)", code="insecure")
        req = urllib.request.Request(self.api + path, data=data, headers=h, method=method)
        if auth:
            # Unredirected: urllib never copies it to a redirect's request (see _Redirects).
            req.add_unredirected_header("Authorization", f"Bearer {self.token}")
        try:
            return self._opener.open(req, timeout=self.timeout if timeout is None else timeout)
        except urllib.error.HTTPError as e:
            raise _http_error(e) from None
        except (socket.timeout, TimeoutError) as e:
            raise TrustError(f"{method} {path}: no answer within the timeout ({e})", code="timeout") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise TrustError(f"{method} {path}: no answer within the timeout", code="timeout") from None
            raise TrustError(f"cannot reach {self.api}: {e.reason}", code="unreachable") from None

    def _json(self, method: str, path: str, **kw: Any) -> Tuple[Any, Mapping[str, str]]:
        with self._open(method, path, **kw) as r:
            try:
                text = r.read()
            except (socket.timeout, TimeoutError):
                raise TrustError(f"{method} {path}: the answer did not arrive in time", code="timeout") from None
            try:
                return json.loads(text), r.headers
            except ValueError as e:
                raise TrustError(f"{method} {path}: the answer is not JSON: {e}", code="malformed") from None

    def get(self, path: str, *, auth: bool = False) -> Any:
        """``GET path`` as JSON (any route; ``auth`` sends the operator token)."""
        return self._json("GET", path, auth=auth)[0]

    # --- routes -----------------------------------------------------------------------

    def status(self) -> Json:
        """``GET /v1/status``: node id, chain id, height, tip, peers, validators."""
        status: Json = self.get("/v1/status")
        return status

    def submit(
        self,
        trace: Trace,
        *,
        labels: Optional[Mapping[str, str]] = None,
        options: Optional[Mapping[str, Any]] = None,
        hdag: Optional[Union[str, Mapping[str, Any]]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Submitted:
        """``POST /v1/sessions``: open a session on ``trace``, the paper's ``##`` text, a
        ``{"problem", "thinking", "output"}`` dict, or an agent transcript as its API gave it
        (an OpenAI or Anthropic message list, or ``{"messages": [...], "tools": [...]}``). ``options`` is the session's assurance
        (``seats``, ``tau``, ``beta``, ``fee``, ... as docs/providers.md names them);
        ``labels`` stay on the node; a repeat with the same ``idempotency_key`` opens
        nothing new."""
        body = self._body(trace, labels, options, hdag)
        height = int(self.status()["height"])
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        raw, h = self._json("POST", "/v1/sessions", body=body, auth=True, headers=headers)
        return Submitted.of(raw, replayed=h.get("Idempotent-Replayed") == "true", height=height)

    def plan(self, trace: Trace, *, options: Optional[Mapping[str, Any]] = None,
             hdag: Optional[Union[str, Mapping[str, Any]]] = None) -> Json:
        """``POST /v1/sessions/plan``: what ``submit`` would open; nothing stored or paid."""
        plan: Json = self._json("POST", "/v1/sessions/plan", body=self._body(trace, None, options, hdag), auth=True)[0]
        return plan

    @staticmethod
    def _body(trace: Trace, labels: Optional[Mapping[str, str]], options: Optional[Mapping[str, Any]],
              hdag: Optional[Union[str, Mapping[str, Any]]]) -> Json:
        body: Json = {"trace": _trace_json(trace)}
        if labels:
            body["labels"] = dict(labels)
        if options:
            body["session"] = dict(options)
        if hdag is not None:
            body["hdag"] = hdag if isinstance(hdag, str) else dict(hdag)
        return body

    def session(self, session: Union[str, Submitted], *, steps: bool = True) -> Session:
        """``GET /v1/sessions/{id}``. With a token and ``steps``, the token goes along and
        the node that opened the session adds each step with its text (any other node
        refuses a token not its own: 401; pass ``steps=False`` there)."""
        sid = _sid(session)
        return Session.of(self.get(f"/v1/sessions/{sid}", auth=steps and self.token is not None))

    def sessions(self, labels: Union[Mapping[str, str], Iterable[str]] = (), *,
                 before: Optional[int] = None, limit: Optional[int] = None) -> List[Listed]:
        """``GET /v1/sessions?provider=me``: the sessions this node opened, newest first,
        filtered by labels (``{"run": "7"}``, or ``["run=7", "model"]``)."""
        q: List[Tuple[str, str]] = [("provider", "me")]
        items = [f"{k}={v}" for k, v in labels.items()] if isinstance(labels, Mapping) else list(labels)
        q += [("label", x) for x in items]
        if before is not None:
            q.append(("before", str(before)))
        if limit is not None:
            q.append(("limit", str(limit)))
        return [Listed.of(x) for x in self.get("/v1/sessions?" + urllib.parse.urlencode(q), auth=True)]

    def proof(self, session: Union[str, Submitted], *, trust: Optional[str] = None) -> Json:
        """``GET /v1/sessions/{id}/proof``: the decided outcome with its Merkle proof and the
        certificates behind it, walked from genesis or from the block ``trust``
        (``HEIGHT:HASH``) names."""
        q = "?" + urllib.parse.urlencode({"trust": trust}) if trust else ""
        proof: Json = self.get(f"/v1/sessions/{_sid(session)}/proof{q}")
        return proof

    def opening(self, session: Union[str, Submitted]) -> Json:
        """``GET /v1/sessions/{id}/opening`` (token): each segment's step and salt."""
        opening: Json = self.get(f"/v1/sessions/{_sid(session)}/opening", auth=True)["opening"]
        return opening

    def export_proof(self, session: Union[str, Submitted], path: Union[str, "os.PathLike[str]"], *,
                     opening: bool = True, trust: Optional[str] = None, force: bool = False) -> str:
        """Writes the session's proof bundle to ``path``, as ``trust-node proof export``
        does: ``{"format", "chain", "proof", "opening"?}``, the chain id from
        ``/v1/status``. With ``opening`` (needs the token, on the node that opened the
        session) ``verify_proof(..., trace=FILE)`` can check it is about that trace.
        Refuses to replace an existing file unless ``force``. Returns the path."""
        target = os.fspath(path)
        if not force and os.path.exists(target):
            raise TrustError(f"{target} already exists (pass force=True to replace it)", code="exists")
        bundle: Json = {"format": BUNDLE_FORMAT, "chain": self.status()["chain_id"],
                        "proof": self.proof(session, trust=trust)}
        if opening:
            bundle["opening"] = self.opening(session)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(bundle, indent=2) + "\n")
        os.replace(tmp, target)
        return target

    # --- the event stream -------------------------------------------------------------

    def events(self, *, session: Optional[str] = None, account: Optional[str] = None,
               kinds: Iterable[str] = (), after: Optional[str] = None, follow: bool = True) -> Iterator[Event]:
        """``GET /v1/events`` (Server-Sent Events): the events of finalized blocks, after
        the event id (``H:I``) or block (``H``) ``after`` (else from the next block on).
        ``follow=False`` ends at the tip. A ``dropped`` event (this client fell behind)
        is not passed on: the stream is opened again after the last event sent."""
        for e in self._stream(session=session, account=account, kinds=kinds, after=after, follow=follow):
            if e is not None:
                yield e

    def _stream(self, *, session: Optional[str], account: Optional[str], kinds: Iterable[str],
                after: Optional[str], follow: bool, timeout: Optional[float] = None) -> Iterator[Optional[Event]]:
        """The events, and ``None`` for each keep-alive (so that a caller can look at its
        clock); ends when the node ends the stream."""
        kinds = list(kinds)
        while True:
            q: Dict[str, str] = {}
            for k, v in (("session", session), ("account", account), ("after", after)):
                if v is not None:
                    q[k] = v
            if kinds:
                q["kind"] = ",".join(kinds)
            if not follow:
                q["follow"] = "false"
            path = "/v1/events?" + urllib.parse.urlencode(q)
            resume = None
            with self._open("GET", path, headers={"Accept": "text/event-stream"}, timeout=timeout) as r:
                for raw in _sse(r, path):
                    if raw is None:
                        yield None
                    elif raw.get("kind") == "dropped":
                        resume = raw.get("resume_after") or after
                        break
                    else:
                        after = raw.get("id") or after
                        yield Event.of(raw)
            if resume is None:
                return
            after = resume

    def wait(self, session: Union[str, Submitted], *, final: bool = False, timeout: float = 300.0,
             on_event: Optional[Callable[[Event], None]] = None, steps: bool = True) -> Session:
        """Follows the session's events until it is decided (or failed), or with ``final``
        until its appeal window has passed; returns the session as the node then shows
        it. Events come from the block before a ``Submitted``'s request on (else from the
        node's height now), so none is missed. ``on_event`` sees each; ``steps`` is as for
        ``session()``. ``TrustError`` (code ``timeout``) after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        sid = _sid(session)
        after = str(session.height) if isinstance(session, Submitted) else str(self.status()["height"])
        triggers = _FINALIZING if final else _DECIDING

        def done() -> Optional[Session]:
            try:
                s = self.session(sid, steps=steps)
            except TrustError as e:
                if e.status == 404:  # not in a block this node holds yet
                    return None
                raise
            over = s.final if final else s.decided
            return s if over or s.status == "failed" else None

        s = done()
        while s is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TrustError(f"session {sid} not {'final' if final else 'decided'} within {timeout:g} s", code="timeout")
            kinds = () if on_event else sorted(triggers)
            try:
                for e in self._stream(session=sid, account=None, kinds=kinds, after=after, follow=True,
                                      timeout=max(1.0, min(left, self.timeout))):
                    if e is not None:
                        after = e.id or after
                        if on_event:
                            on_event(e)
                        if e.kind in triggers and (s := done()) is not None:
                            break
                    if time.monotonic() > deadline:
                        break
            except TrustError as e:
                if e.code != "timeout":
                    raise
            else:
                if s is None and time.monotonic() < deadline:
                    time.sleep(0.5)  # the node ended the stream: open it again
        return s



def _trace_json(trace: Trace) -> Any:
    """The trace as the node's ``trace`` field takes it: text as it is, a dict or a message
    list as JSON (a list of anything but messages is refused here, before anything is sent)."""
    if isinstance(trace, str):
        return trace
    if isinstance(trace, Mapping):
        return dict(trace)
    if isinstance(trace, (list, tuple)):
        messages = list(trace)
        if not all(isinstance(m, Mapping) for m in messages):
            raise TypeError("a transcript given as a list must be a list of message dicts")
        return [dict(m) for m in messages]
    raise TypeError(f"a trace is text, a dict or a list of messages, not {type(trace).__name__}")

def _sid(session: Union[str, Submitted]) -> str:
    return session.session if isinstance(session, Submitted) else session


def _http_error(e: urllib.error.HTTPError) -> TrustError:
    """The node's ``{"code", "message"}`` error body as a ``TrustError``."""
    try:
        text = e.read().decode("utf-8", "replace")
    except (OSError, socket.timeout):
        text = ""
    finally:
        e.close()
    try:
        body = json.loads(text)
        return TrustError(str(body["message"]), status=e.code, code=str(body.get("code", "error")))
    except (ValueError, KeyError, TypeError):
        return TrustError(text.strip() or str(e.reason), status=e.code, code="error")


def _sse(r: Any, path: str) -> Iterator[Optional[Json]]:
    """The ``data`` of each Server-Sent Event read from ``r``, parsed as JSON; ``None`` for
    each comment (the node's keep-alive)."""
    data: List[str] = []
    while True:
        try:
            line = r.readline()
        except (socket.timeout, TimeoutError):
            raise TrustError(f"GET {path}: nothing on the event stream within the timeout", code="timeout") from None
        except OSError as e:
            raise TrustError(f"GET {path}: the event stream broke: {e}", code="unreachable") from None
        if not line:
            return
        text = line.decode("utf-8").rstrip("\r\n")
        if text.startswith(":"):
            yield None
        elif text == "":
            if data:
                try:
                    yield json.loads("\n".join(data))
                except ValueError as e:
                    raise TrustError(f"GET {path}: an event is not JSON: {e}", code="malformed") from None
                data = []
        else:
            name, _, value = text.partition(":")
            if name == "data":
                data.append(value[1:] if value.startswith(" ") else value)
