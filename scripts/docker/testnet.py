#!/usr/bin/env python3
"""Drives the docker testnet of docker-compose.yml (docs/operators.md "Docker testnet").

    scripts/testnet.sh up                 start it; wait until every node decides blocks
    scripts/testnet.sh down               stop it and remove its containers, network, volume
    scripts/testnet.sh status             one table: each node's height, tip, state root, peers
    scripts/testnet.sh submit FILE [ARG]  submit a trace through the provider node
                                          (ARG: `trust-node submit` flags, e.g. --wait)
    scripts/testnet.sh appeal ID SEGMENTS [ARG]
                                          appeal segments (e.g. 3,4) of a session from the
                                          provider node (ARG: `trust-node appeal` flags)
    scripts/testnet.sh query ID [NODE]    a session's outcome as NODE sees it (default validator1)
    scripts/testnet.sh human              the Human node's audit form address and operator token
    scripts/testnet.sh logs [NODE] [-f]   the last lines of one node's log, or of all
    scripts/testnet.sh chaos [--hold S] [--max-gap S]
                                          faults in turn with traces in flight, then a report
    scripts/testnet.sh wait-session ID live|decided [NODE]
                                          until NODE (default validator1) sees the session so
    scripts/testnet.sh wait-synced NODE   until NODE has caught up and holds the same block
                                          hash and state root as every other node

The host talks to the nodes only through their APIs published on 127.0.0.1 and through
`docker exec`; the faults are docker's own (kill -s KILL, pause, network disconnect,
restart). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API_PORT = "26602/tcp"
TRACES = ROOT / "examples" / "traces"
# Traces the chaos run cycles through: Computer-tier work, so a session decides in tens
# of seconds; the fraction chain also sends a step the checkers abstain on to the LLM seats.
CHAOS_TRACES = ["bakery-correct.txt", "rules-wrong.txt", "fraction-incorrect.txt"]


def project() -> str:
    if os.environ.get("COMPOSE_PROJECT_NAME"):
        return os.environ["COMPOSE_PROJECT_NAME"]
    env = ROOT / ".env"
    if env.exists():
        for line in env.read_text().splitlines():
            if line.startswith("COMPOSE_PROJECT_NAME="):
                return line.split("=", 1)[1].strip()
    return ROOT.name


PROJECT = project()


def log(msg: str) -> None:
    print(msg, flush=True)


def fail(msg: str, code: int = 1) -> None:
    print(f"testnet: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def run(cmd: list[str], check: bool = True, capture: bool = True, timeout: float | None = 120,
        stdin=None) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(cmd, cwd=ROOT, text=True, stdin=stdin, timeout=timeout,
                           stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.PIPE if capture else None)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(cmd)} did not finish within {timeout} s")
    except FileNotFoundError:
        fail(f"{cmd[0]} not found")
    if check and r.returncode != 0:
        err = (r.stderr or "").strip() if capture else ""
        fail(f"{' '.join(cmd)} failed (exit {r.returncode}){': ' + err if err else ''}")
    return r


def compose_cmd() -> list[str]:
    """`docker compose` where the plugin exists, else the standalone `docker-compose`."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    fail("neither `docker compose` nor `docker-compose` is installed")
    return []


def compose(*args: str, capture: bool = True, timeout: float | None = 600) -> subprocess.CompletedProcess:
    return run(compose_cmd() + ["-p", PROJECT, *args], capture=capture, timeout=timeout)


# ------------------------------------------------------------------ the nodes


@dataclass
class Node:
    service: str
    container: str
    state: str  # running, paused, exited, ...
    health: str
    port: int | None  # the API's port on 127.0.0.1, while it is published
    home: str | None = None  # the node's home inside its container (`run --home=...`)

    @property
    def role(self) -> str:
        for prefix, role in (("validator", "validator"), ("llm", "LLM seat"), ("human", "Human seat"),
                             ("provider", "provider")):
            if self.service.startswith(prefix):
                return role
        return "?"


def containers() -> list[dict]:
    ids = run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}"]).stdout.split()
    if not ids:
        return []
    return json.loads(run(["docker", "inspect", *ids]).stdout)


def nodes() -> list[Node]:
    """The trust-node containers that run a node (not `init`), in service order."""
    out = []
    for c in containers():
        svc = c["Config"]["Labels"].get("com.docker.compose.service", "?")
        if API_PORT not in (c["Config"].get("ExposedPorts") or {}) or svc == "init":
            continue
        port = None
        for b in (c["NetworkSettings"].get("Ports") or {}).get(API_PORT) or []:
            if b.get("HostIp") == "127.0.0.1":
                port = int(b["HostPort"])
        if port is None:  # not running: read the binding it was created with
            for b in (c["HostConfig"].get("PortBindings") or {}).get(API_PORT) or []:
                if b.get("HostIp") == "127.0.0.1":
                    port = int(b["HostPort"])
        health = (c["State"].get("Health") or {}).get("Status", "-")
        home = next((a.split("=", 1)[1] for a in (c.get("Args") or []) if a.startswith("--home=")), None)
        out.append(Node(svc, c["Name"].lstrip("/"), c["State"]["Status"], health, port, home))
    order = {"validator": 0, "llm": 1, "human": 2, "provider": 3}
    return sorted(out, key=lambda n: (order.get(re.sub(r"\d+$", "", n.service), 3), n.service))


def node(name: str) -> Node:
    for n in nodes():
        if n.service == name:
            return n
    fail(f"no node {name!r} in the testnet (is it up? `scripts/testnet.sh status` lists them)", 2)
    raise AssertionError


def http(port: int, path: str, body: dict | None = None, timeout: float = 3, token: str | None = None) -> dict:
    """GET (or POST `body` to) a node's API on 127.0.0.1; raises on any failure."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def status_of(n: Node, timeout: float = 2) -> dict | None:
    if n.port is None or n.state != "running":
        return None
    try:
        return http(n.port, "/v1/status", timeout=timeout)
    except (OSError, ValueError, urllib.error.URLError):
        return None


def block_at(n: Node, height: int) -> dict | None:
    try:
        return http(n.port, f"/v1/blocks/{height}") if n.port else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def print_table(ns: list[Node]) -> dict[str, dict | None]:
    seen = {n.service: status_of(n) for n in ns}
    log(f"{'node':<11} {'role':<10} {'state':<18} {'api':<16} {'height':>6}  {'tip':<16}  {'state root':<16}  {'peers':>5}")
    for n in ns:
        s = seen[n.service]
        api = f"127.0.0.1:{n.port}" if n.port else "-"
        state = n.state if n.health in ("-", "healthy") or n.state != "running" else f"{n.state} ({n.health})"
        if s is None:
            log(f"{n.service:<11} {n.role:<10} {state:<18} {api:<16} {'-':>6}  {'(no answer)':<16}")
        else:
            log(f"{n.service:<11} {n.role:<10} {state:<18} {api:<16} {s['height']:>6}  {s['tip_hash'][:16]:<16}  "
                f"{s['state_root'][:16]:<16}  {s['peers']:>5}")
    return seen


# ------------------------------------------------------------------ commands


def cmd_up(_: argparse.Namespace) -> None:
    t0 = time.monotonic()
    for image in (os.environ.get("TRUST_NODE_IMAGE", "trust-node:local"),
                  os.environ.get("TRUST_LLM_IMAGE", "trust-llm-server:local")):
        if run(["docker", "image", "inspect", image], check=False).returncode != 0:
            fail(f"image {image} is missing: build it first with scripts/build-image.sh")
    log(f"== {' '.join(compose_cmd())} -p {PROJECT} up -d")
    compose("up", "-d", capture=False)
    log("== waiting until every node decides blocks (height >= 2)")
    deadline = time.monotonic() + 240
    while True:
        ns = nodes()
        heights = {n.service: (status_of(n) or {}).get("height", -1) for n in ns}
        if ns and all(h >= 2 for h in heights.values()):
            break
        if time.monotonic() > deadline:
            print_table(ns)
            fail("not every node reached height 2 within 240 s; `scripts/testnet.sh logs NODE` tells why")
        time.sleep(1)
    print_table(ns)
    log(f"testnet up in {time.monotonic() - t0:.1f} s; submit with: scripts/testnet.sh submit examples/traces/bakery-correct.txt --wait")
    for n in ns:
        if n.service.startswith("human"):
            print_human(n)


def print_human(n: Node) -> None:
    """Where a person audits the Human node's seats, and the token that logs them in."""
    if n.port is None:
        fail(f"{n.service} publishes no API port")
    log(f"{n.service} is a Human auditor: judge its seats at http://127.0.0.1:{n.port}/audit")
    log(f"   operator token: {operator_token(n)}")


def cmd_human(_: argparse.Namespace) -> None:
    humans = [n for n in nodes() if n.service.startswith("human")]
    if not humans:
        fail(f"no Human node is running (project {PROJECT}); start the testnet with scripts/testnet.sh up")
    for n in humans:
        if n.state != "running":
            fail(f"{n.service} is {n.state}")
        print_human(n)


def cmd_down(_: argparse.Namespace) -> None:
    t0 = time.monotonic()
    compose("down", "-v", "--remove-orphans", "--timeout", "15", capture=False)
    label = f"label=com.docker.compose.project={PROJECT}"
    left = {
        "containers": run(["docker", "ps", "-aq", "--filter", label]).stdout.split(),
        "volumes": run(["docker", "volume", "ls", "-q", "--filter", label]).stdout.split(),
        "networks": run(["docker", "network", "ls", "-q", "--filter", label]).stdout.split(),
    }
    left = {k: v for k, v in left.items() if v}
    if left:
        fail(f"left behind after down: {left}")
    log(f"testnet down in {time.monotonic() - t0:.1f} s: no container, volume or network of {PROJECT} is left")


def cmd_status(_: argparse.Namespace) -> None:
    ns = nodes()
    if not ns:
        fail(f"no testnet is running (project {PROJECT}); start one with scripts/testnet.sh up")
    seen = print_table(ns)
    answered = {k: v for k, v in seen.items() if v}
    if answered:
        h = min(v["height"] for v in answered.values())
        blocks = {k: block_at(n, h) for n in ns for k in [n.service] if k in answered}
        roots = {(b["hash"], b["header"]["state_root"]) for b in blocks.values() if b}
        verdict = "agree" if len(roots) == 1 else f"DISAGREE ({len(roots)} different blocks)"
        log(f"at height {h}, the lowest tip, the {len(answered)} nodes that answer {verdict} on the block hash and state root")


def provider_container() -> str:
    n = node("provider")
    if n.state != "running":
        fail(f"the provider node is {n.state}")
    return n.container


def operator_token(n: Node) -> str:
    """The node's operator token (opening a session spends its funds, so the API asks for it)."""
    # The image holds the node binary and its libraries only (no shell tools).
    r = run(["docker", "exec", n.container, "trust-node", "keys", "show", "--api-token", f"--home={n.home}"])
    return r.stdout.strip()


def cmd_submit(a: argparse.Namespace) -> None:
    path = Path(a.file)
    if not path.is_file():
        fail(f"{a.file}: no such file", 2)
    with open(path, "rb") as f:
        r = subprocess.run(["docker", "exec", "-i", provider_container(), "trust-node", "submit", "/dev/stdin",
                            "--api", "127.0.0.1:26602", f"--home={node('provider').home}", *a.args],
                           cwd=ROOT, stdin=f)
    sys.exit(r.returncode)


def cmd_appeal(a: argparse.Namespace) -> None:
    r = subprocess.run(["docker", "exec", provider_container(), "trust-node", "appeal", a.id,
                        "--segments", a.segments, "--api", "127.0.0.1:26602",
                        f"--home={node('provider').home}", *a.args], cwd=ROOT)
    sys.exit(r.returncode)


def cmd_query(a: argparse.Namespace) -> None:
    n = node(a.node)
    r = subprocess.run(["docker", "exec", n.container, "trust-node", "query", a.id, "--api", "127.0.0.1:26602",
                        *a.args], cwd=ROOT)
    sys.exit(r.returncode)


def cmd_logs(a: argparse.Namespace) -> None:
    extra = ["-f"] if a.follow else []
    if a.node:
        r = subprocess.run(["docker", "logs", "--tail", str(a.tail), *extra, node(a.node).container], cwd=ROOT)
    else:
        r = subprocess.run(compose_cmd() + ["-p", PROJECT, "logs", "--no-color", f"--tail={a.tail}", *extra], cwd=ROOT)
    sys.exit(r.returncode)


def cmd_wait_session(a: argparse.Namespace) -> None:
    n = node(a.node)
    end = time.monotonic() + a.timeout
    last = None
    while time.monotonic() < end:
        try:
            s = http(n.port, f"/v1/sessions/{a.id}") if n.port else None
        except urllib.error.HTTPError as e:
            s = {"status": "pending"} if e.code == 404 else None
        except (OSError, ValueError, urllib.error.URLError):
            s = None
        st = (s or {}).get("status")
        if st != last and st:
            log(f"{a.node}: session {a.id[:16]} {st}")
            last = st
        if st == "failed":
            fail(f"session {a.id} failed: {s.get('failure')}")
        if st == "decided" or (st == "live" and a.phase == "live"):
            return
        time.sleep(0.3)
    fail(f"{a.node} did not see session {a.id} {a.phase} within {a.timeout} s")


def synced(service: str) -> tuple[bool, str]:
    """Whether `service` holds, at the lowest tip of all nodes, the block every node holds."""
    ns = nodes()
    st = {n.service: status_of(n) for n in ns}
    if not st.get(service):
        return False, f"{service} does not answer"
    others = [s["height"] for k, s in st.items() if s and k != service]
    if not others or st[service]["height"] < max(others) - 2:
        return False, f"{service} at height {st[service]['height']}, others up to {max(others, default=0)}"
    h = min(s["height"] for s in st.values() if s)
    blocks = {n.service: block_at(n, h) for n in ns if st.get(n.service)}
    kinds = {(b["hash"], b["header"]["state_root"]) if b else None for b in blocks.values()}
    if len(kinds) != 1 or None in kinds:
        return False, f"nodes disagree at height {h}"
    (bh, root), = kinds
    return True, f"{service} at height {st[service]['height']}; at height {h} all {len(blocks)} nodes that answer hold block {bh[:16]}, state root {root[:16]}"


def cmd_wait_synced(a: argparse.Namespace) -> None:
    end = time.monotonic() + a.timeout
    t0 = time.monotonic()
    while True:
        ok, why = synced(a.node)
        if ok:
            log(f"{why} (after {time.monotonic() - t0:.1f} s)")
            return
        if time.monotonic() > end:
            fail(f"{a.node} not in sync within {a.timeout} s: {why}")
        time.sleep(0.5)


# ------------------------------------------------------------------ chaos


def utc(ts: str) -> float:
    """Docker's RFC 3339 timestamp (nanoseconds) as seconds since the epoch."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", ts)
    if not m:
        raise ValueError(ts)
    t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + float("0." + (m.group(2) or "0"))


def commit_times(container: str, since: float, until: float) -> list[float]:
    """When `container` logged "block committed" between `since` and `until` (docker's clock)."""
    r = run(["docker", "logs", "--timestamps", "--since", f"{since - 1:.3f}", container], check=False)
    out = []
    for line in (r.stdout or "").splitlines() + (r.stderr or "").splitlines():
        if "block committed" not in line:
            continue
        try:
            t = utc(line.split(" ", 1)[0])
        except ValueError:
            continue
        if since <= t <= until:
            out.append(t)
    return sorted(out)


def longest_gap(times: list[float], since: float, until: float) -> float:
    edges = [since, *times, until]
    return max(b - a for a, b in zip(edges, edges[1:]))


@dataclass
class Phase:
    name: str
    target: str | None
    ref: str = ""
    start: float = 0.0
    end: float = 0.0
    h0: int = 0
    h1: int = 0
    blocks: int = 0
    gap: float = 0.0
    sessions: list[str] = field(default_factory=list)
    decided_ids: set[str] = field(default_factory=set)
    first: str | None = None
    decided: int = 0
    in_flight_at_fault: int = 0
    in_flight_decided: int = 0
    catch_up: float | None = None
    notes: list[str] = field(default_factory=list)
    ok: bool = True


class Chaos:
    def __init__(self, a: argparse.Namespace):
        self.hold = a.hold
        self.max_gap = a.max_gap
        self.decide_timeout = a.decide_timeout
        self.trace_i = 0
        self.net = f"{PROJECT}_trustnet"
        self.provider = node("provider")

    def height(self, service: str) -> int:
        s = status_of(node(service))
        return -1 if s is None else s["height"]

    def submit(self, ph: Phase) -> str | None:
        name = CHAOS_TRACES[self.trace_i % len(CHAOS_TRACES)]
        self.trace_i += 1
        try:
            r = http(self.provider.port, "/v1/sessions", {"trace": (TRACES / name).read_text(), "hdag": None},
                     timeout=30, token=operator_token(self.provider))
        except (OSError, ValueError, urllib.error.URLError) as e:
            ph.notes.append(f"submit {name} failed: {e}")
            ph.ok = False
            return None
        sid = r["session"]
        ph.sessions.append(sid)
        log(f"   submitted {name}: session {sid[:16]}")
        return sid

    def session(self, sid: str, via: str) -> dict | None:
        n = node(via)
        try:
            return http(n.port, f"/v1/sessions/{sid}") if n.port else None
        except urllib.error.HTTPError as e:
            return {"status": "pending"} if e.code == 404 else None
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def wait_live(self, sid: str, via: str, deadline_s: float = 60) -> bool:
        """Until the session is on the ledger with its seats drawn (in flight)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            s = self.session(sid, via)
            if s and s.get("status") in ("live", "decided"):
                return s["status"] == "live"
            time.sleep(0.3)
        return False

    def wait_catch_up(self, service: str, ref: str, deadline_s: float = 180) -> float | None:
        """Seconds until `service` reaches the height `ref` had when this was called."""
        t0 = time.monotonic()
        target = self.height(ref)
        while time.monotonic() - t0 < deadline_s:
            if self.height(service) >= target:
                return time.monotonic() - t0
            time.sleep(0.3)
        return None

    def wait_decided(self, phases: list[Phase], via: str) -> None:
        """Until every session of the run has an outcome (or --decide-timeout passes)."""
        end = time.monotonic() + self.decide_timeout
        pending = {sid: ph for ph in phases for sid in ph.sessions}
        log(f"== waiting for the {len(pending)} sessions to decide (as {via} sees them)")
        while pending and time.monotonic() < end:
            for sid, ph in list(pending.items()):
                s = self.session(sid, via)
                if s and s.get("status") in ("decided", "failed"):
                    del pending[sid]
                    if s["status"] == "decided":
                        ph.decided += 1
                        ph.decided_ids.add(sid)
                        o = s.get("outcome", {})
                        log(f"   session {sid[:16]} ({ph.name}) decided at block {s.get('block_height')}, "
                            f"{o.get('decided_at', 0) - o.get('opened_at', 0)} blocks after it opened: {o.get('trace', '?')}")
                    else:
                        ph.notes.append(f"session {sid[:16]} failed: {s.get('failure')}")
            time.sleep(1)
        for sid, ph in pending.items():
            ph.notes.append(f"session {sid[:16]} undecided after {self.decide_timeout:.0f} s")
        for ph in phases:
            ph.in_flight_decided = int(ph.in_flight_at_fault == 1 and ph.first in ph.decided_ids)
            if ph.decided < len(ph.sessions):
                ph.ok = False

    def reconnect(self, container: str, service: str) -> None:
        r = run(["docker", "network", "connect", "--alias", service, self.net, container], check=False)
        if r.returncode != 0 and "already exists" not in (r.stderr or ""):
            fail(f"cannot reconnect {service} to {self.net}: {r.stderr.strip()}")

    def phase(self, name: str, target: str | None, inject, heal) -> Phase:
        """One fault: a trace submitted and in flight (seats drawn), the fault, another
        trace, `hold` seconds, the cure, and the faulted node caught up (a restart, with
        no cure, is caught up right after it). The block gaps are read from a validator
        that is not faulted, over the whole phase."""
        ref = next(f"validator{i}" for i in range(4) if f"validator{i}" != target)
        ph = Phase(name, target, ref)
        log(f"== {name}")
        ph.h0 = self.height(ref)
        ph.start = time.time()
        sid = ph.first = self.submit(ph)
        if target and sid:
            if self.wait_live(sid, ref):
                ph.in_flight_at_fault = 1
            else:
                ph.notes.append("the first session was not live when the fault came")
        def catch_up() -> None:
            ph.catch_up = self.wait_catch_up(target, ref)
            if ph.catch_up is None:
                ph.notes.append(f"{target} did not catch up within 180 s")
                ph.ok = False

        if inject:
            inject()
            if heal is None:  # a restart: the fault and its cure in one
                catch_up()
        time.sleep(2)
        self.submit(ph)
        time.sleep(self.hold)
        if heal:
            heal()
            catch_up()
        ph.end = time.time()
        ph.h1 = self.height(ref)
        times = commit_times(node(ref).container, ph.start, ph.end)
        ph.blocks = len(times)
        ph.gap = longest_gap(times, ph.start, ph.end)
        if ph.gap > self.max_gap:
            ph.ok = False
            ph.notes.append(f"longest gap {ph.gap:.2f} s is over --max-gap {self.max_gap} s")
        log(f"   heights {ph.h0} -> {ph.h1} on {ref} in {ph.end - ph.start:.0f} s, {ph.blocks} blocks, "
            f"longest gap {ph.gap:.2f} s" + (f", {target} caught up in {ph.catch_up:.1f} s" if ph.catch_up is not None else ""))
        return ph

    def run(self) -> int:
        t0 = time.monotonic()

        def cid(service: str) -> str:
            return node(service).container

        phases = [self.phase("all up (baseline)", None, None, None)]
        v3, v2, v1, v0 = (cid(f"validator{i}") for i in (3, 2, 1, 0))
        phases.append(self.phase("kill -9 validator3", "validator3",
                                 lambda: run(["docker", "kill", "-s", "KILL", v3]),
                                 lambda: run(["docker", "start", v3])))
        phases.append(self.phase("pause validator2", "validator2",
                                 lambda: run(["docker", "pause", v2]),
                                 lambda: run(["docker", "unpause", v2])))
        phases.append(self.phase("partition validator1", "validator1",
                                 lambda: run(["docker", "network", "disconnect", self.net, v1]),
                                 lambda: self.reconnect(v1, "validator1")))
        phases.append(self.phase("restart validator0 mid-session", "validator0",
                                 lambda: run(["docker", "restart", "-t", "10", v0], timeout=60),
                                 None))
        self.wait_decided(phases, "validator1")
        safe, final = self.agreement()
        self.report(phases, safe, final, time.monotonic() - t0)
        return 0 if safe and all(p.ok for p in phases) else 1

    def agreement(self) -> tuple[bool, str]:
        """Every node holds the same block, hash and state root, at a height all have."""
        end = time.monotonic() + 120
        while True:
            ns = nodes()
            st = {n.service: status_of(n) for n in ns}
            if all(st.values()):
                break
            if time.monotonic() > end:
                down = [k for k, v in st.items() if not v]
                return False, f"nodes not answering after the run: {', '.join(down)}"
            time.sleep(1)
        h = min(s["height"] for s in st.values())
        blocks = {n.service: block_at(n, h) for n in ns}
        kinds = {(b["hash"], b["header"]["state_root"]) if b else None for b in blocks.values()}
        if len(kinds) == 1 and None not in kinds:
            (bh, root), = kinds
            return True, f"all {len(ns)} nodes hold block {h}: hash {bh}, state root {root}"
        return False, f"nodes disagree at height {h}: " + "; ".join(
            f"{k} {b['hash'][:16] + '/' + b['header']['state_root'][:16] if b else 'missing'}"
            for k, b in blocks.items())

    def report(self, phases: list[Phase], safe: bool, final: str, secs: float) -> None:
        log("")
        log(f"chaos report ({len(nodes())} nodes, 4 validators, block time 500 ms, {os.cpu_count()} cores, "
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)")
        log(f"{'fault':<32} {'gap (s)':>7} {'blocks':>6} {'heights':>11} {'catch-up (s)':>12} "
            f"{'sessions decided':>16} {'in flight at fault':>18}  ok")
        for p in phases:
            cu = "-" if p.catch_up is None else f"{p.catch_up:.1f}"
            inflight = "-" if p.target is None else f"{p.in_flight_decided}/{p.in_flight_at_fault} decided"
            log(f"{p.name:<32} {p.gap:>7.2f} {p.blocks:>6} {f'{p.h0}-{p.h1}':>11} {cu:>12} "
                f"{f'{p.decided}/{len(p.sessions)}':>16} {inflight:>18}  {'yes' if p.ok else 'NO'}")
            for note in p.notes:
                log(f"    {note}")
        log(f"safety: {final}")
        print_table(nodes())
        live = all(p.ok for p in phases)
        log(f"liveness {'held' if live else 'BROKE'}, safety {'held' if safe else 'BROKE'} "
            f"(chaos run of {secs:.0f} s, {self.hold:.0f} s per fault)")


def cmd_chaos(a: argparse.Namespace) -> None:
    ns = nodes()
    if not ns or any(n.state != "running" for n in ns):
        fail("the testnet must be up with every node running (scripts/testnet.sh up)")
    sys.exit(Chaos(a).run())


def main() -> None:
    ap = argparse.ArgumentParser(prog="scripts/testnet.sh", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n\n")[1:]))
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    sub.add_parser("up", help="start the testnet and wait until every node decides blocks").set_defaults(f=cmd_up)
    sub.add_parser("down", help="stop it; remove its containers, network and volume").set_defaults(f=cmd_down)
    sub.add_parser("status", help="each node's height, tip, state root and peers").set_defaults(f=cmd_status)
    p = sub.add_parser("submit", help="submit a trace file through the provider node")
    p.add_argument("file")
    p.add_argument("args", nargs=argparse.REMAINDER, help="more `trust-node submit` flags, e.g. --wait")
    p.set_defaults(f=cmd_submit)
    p = sub.add_parser("appeal", help="appeal decided segments of a session from the provider node")
    p.add_argument("id")
    p.add_argument("segments", help="segment indices as `query` numbers them, comma-separated")
    p.add_argument("args", nargs=argparse.REMAINDER, help="more `trust-node appeal` flags, e.g. --wait")
    p.set_defaults(f=cmd_appeal)
    p = sub.add_parser("query", help="a session's outcome as one node sees it")
    p.add_argument("id")
    p.add_argument("node", nargs="?", default="validator1")
    p.add_argument("args", nargs=argparse.REMAINDER, help="more `trust-node query` flags, e.g. --json")
    p.set_defaults(f=cmd_query)
    sub.add_parser("human", help="the Human node's audit form address and operator token").set_defaults(f=cmd_human)
    p = sub.add_parser("logs", help="the last lines of one node's log (or of every service)")
    p.add_argument("node", nargs="?")
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("--tail", type=int, default=100)
    p.set_defaults(f=cmd_logs)
    p = sub.add_parser("chaos", help="kill -9, pause, partition and restart validators with traces in flight")
    p.add_argument("--hold", type=float, default=20, help="seconds each fault lasts (default 20)")
    p.add_argument("--max-gap", type=float, default=10,
                   help="longest time without a block that still counts as live, in seconds (default 10)")
    p.add_argument("--decide-timeout", type=float, default=300,
                   help="how long each phase's sessions may take to decide, in seconds (default 300)")
    p.set_defaults(f=cmd_chaos)
    p = sub.add_parser("wait-session", help="wait until a node sees a session live (seats drawn) or decided")
    p.add_argument("id")
    p.add_argument("phase", choices=["live", "decided"])
    p.add_argument("node", nargs="?", default="validator1")
    p.add_argument("--timeout", type=float, default=300)
    p.set_defaults(f=cmd_wait_session)
    p = sub.add_parser("wait-synced", help="wait until a node caught up and agrees with every other")
    p.add_argument("node")
    p.add_argument("--timeout", type=float, default=180)
    p.set_defaults(f=cmd_wait_synced)
    a = ap.parse_args()
    if shutil.which("docker") is None:
        fail("docker not found")
    a.f(a)


if __name__ == "__main__":
    main()
