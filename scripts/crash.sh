#!/usr/bin/env bash
# Crash consistency at scale (issue 13, item 3). Starts a 4-validator loopback network of
# real `trust-node run` processes, keeps submitting the sample traces through node0's API
# (node0 is the provider), and kills one node with SIGKILL at random moments, restarting
# it after 0.2-4 s (or, for a fifth of the kills, 5-15 s: longer than a session's commit
# and reveal windows) and waiting for it to catch up before the next kill; a fifth of the
# restarted nodes are killed again within a second, while they replay and catch up. The
# victim of each kill is, at random: the provider (node0), the proposer of the moment (the
# round-0 proposer of the next height, computed from the validators' stakes as the
# consensus context draws it), or a seat between commit and reveal (a seat node whose
# /metrics show more votes committed than revealed).
# At the end it waits for every session to end by the contract's own rules, compares the
# nodes' blocks at a common height, stops them, runs `ledger verify` on every home and
# prints a summary. Exits 1 when a session is stuck or never opened, a ledger does not
# verify, or the nodes disagree (2 on a usage or setup error).
#
#   scripts/crash.sh [--kills N] [--seed S] [--dir DIR] [--base-port P]
#                    [--submit-every SECONDS] [--long-down SHARE] [--rekill SHARE]
#
# Builds and uses the debug binary (under $CARGO_TARGET_DIR or ./target); TRUST_BIN names
# another binary and skips the build. All traffic stays on 127.0.0.1; every wait has a
# deadline, so the script always stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TRUST_BIN:-}" ]; then
  cargo build --locked -p trust-node >&2
  TRUST_BIN="${CARGO_TARGET_DIR:-target}/debug/trust-node"
fi
export TRUST_BIN
exec python3 -u - "$@" <<'PY'
import argparse, atexit, collections, hashlib, json, os, random, re, signal, subprocess, sys
import threading, time, urllib.request, urllib.error

p = argparse.ArgumentParser(prog="scripts/crash.sh")
p.add_argument("--kills", type=int, default=50, help="how many SIGKILLs (default 50)")
p.add_argument("--seed", type=int, default=1, help="seed of the victims and moments")
p.add_argument("--dir", default="out/crash", help="homes and logs (wiped first)")
p.add_argument("--base-port", type=int, default=28600)
p.add_argument("--submit-every", type=float, default=2.0, help="seconds between sessions")
p.add_argument("--long-down", type=float, default=0.2,
               help="share of kills whose node stays down 5-15 s instead of 0.2-4 s")
p.add_argument("--rekill", type=float, default=0.2,
               help="share of restarts killed again within a second, while recovering")
p.add_argument("--end-timeout", type=float, default=240.0,
               help="seconds the sessions in flight get to end after the last kill")
args = p.parse_args()
BIN = os.environ["TRUST_BIN"]
N = 4
rng = random.Random(args.seed)
T0 = time.monotonic()


def now():
    return time.monotonic() - T0


def log(msg):
    print(f"[{now():7.1f}s] {msg}", flush=True)


def api(i):
    return f"127.0.0.1:{args.base_port + 10 * i + 2}"


def get(i, path, timeout=3.0):
    """GET on node i's API: the JSON (or text for /metrics), None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{api(i)}{path}", timeout=timeout) as r:
            body = r.read().decode()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {"status": "unknown", "http": 404}
        return None
    except Exception:
        return None
    return body if path == "/metrics" else json.loads(body)


def wait(what, cond, deadline_s, step=0.2):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


# ---- the network ------------------------------------------------------------------------
home = args.dir
subprocess.run(["rm", "-rf", home], check=True)
os.makedirs(home)
out = subprocess.run([BIN, "testnet", "init", "--nodes", str(N), "--auditor-nodes", "0", "--home", home,
                      "--base-port", str(args.base_port)], capture_output=True, text=True)
if out.returncode != 0:
    print(out.stderr, file=sys.stderr)
    sys.exit(2)
accounts = [json.load(open(f"{home}/node{i}/genesis.json"))["validators"][i] for i in range(N)]
procs = [None] * N


def start(i):
    logf = open(f"{home}/node{i}.log", "a")
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info,libp2p=warn,malachitebft=warn"))
    procs[i] = subprocess.Popen([BIN, "run", "--home", f"{home}/node{i}", "--block-time-ms", "300"],
                                stdout=subprocess.DEVNULL, stderr=logf, env=env)


def kill9(i):
    procs[i].send_signal(signal.SIGKILL)
    procs[i].wait(timeout=30)
    procs[i] = None


def stop_all():
    for i in range(N):
        if procs[i] is not None:
            procs[i].terminate()
    for i in range(N):
        if procs[i] is not None:
            try:
                procs[i].wait(timeout=30)
            except subprocess.TimeoutExpired:
                procs[i].kill()
                procs[i].wait()
            procs[i] = None


# Whatever ends the script (an error, Ctrl-C, SIGTERM), no node outlives it.
atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))


def height(i):
    s = get(i, "/v1/status", timeout=1.0)
    return s.get("height") if isinstance(s, dict) and "height" in s else None


def heights():
    return [height(i) if procs[i] is not None else None for i in range(N)]


# ---- who proposes next: context.rs `proposer_of`, round 0 ------------------------------
def of_parts(tag, parts):
    h = hashlib.sha256()
    h.update(len(tag).to_bytes(8, "little"))
    h.update(tag.encode())
    for x in parts:
        h.update(len(x).to_bytes(8, "little"))
        h.update(x)
    return h.digest()


def proposer_at(h, stakes):
    """Index of the node drawn to propose height h in round 0, given each node's stake."""
    order = sorted((a, s, i) for i, (a, s) in enumerate(zip(accounts, stakes)) if s > 0)
    total = sum(s for _, s, _ in order)
    slot = int.from_bytes(of_parts("trust/v1/proposer", [h.to_bytes(8, "little"),
                                                         (0).to_bytes(8, "little")])[:8], "little") % total
    for _, s, i in order:
        if slot < s:
            return i
        slot -= s
    return order[-1][2]


def stakes_via(j):
    st = []
    for a in accounts:
        acct = get(j, f"/v1/accounts/{a}")
        if not isinstance(acct, dict) or "stake" not in acct:
            return None
        st.append(acct["stake"])
    return st


# ---- background: block gaps and the session feed ----------------------------------------
stop_feed = threading.Event()
stop_watch = threading.Event()
gaps = {"longest": 0.0, "at_height": 0, "last_change": None, "max_height": 0}
sessions = []            # (id, trace, submitted at)
refused = collections.Counter()
traces = sorted(f"examples/traces/{f}" for f in os.listdir("examples/traces") if f.endswith(".txt"))


def watch():
    while not stop_watch.is_set():
        hs = [h for h in heights() if h is not None]
        t = now()
        if hs and max(hs) > gaps["max_height"]:
            if gaps["last_change"] is not None and t - gaps["last_change"] > gaps["longest"]:
                gaps["longest"] = t - gaps["last_change"]
                gaps["at_height"] = max(hs)
            gaps["max_height"] = max(hs)
            gaps["last_change"] = t
        time.sleep(0.1)


def feed():
    k = 0
    while not stop_feed.is_set():
        trace = traces[k % len(traces)]
        k += 1
        try:
            r = subprocess.run([BIN, "submit", trace, "--api", api(0), "--home", f"{home}/node0"], capture_output=True,
                               text=True, timeout=30)
            m = re.search(r"^session\s+([0-9a-f]{64})", r.stdout, re.M)
            if r.returncode == 0 and m:
                sessions.append((m.group(1), os.path.basename(trace), now()))
            else:
                reason = (r.stderr.strip().splitlines() or ["?"])[0]
                refused["node0 down" if "is `trust-node run` up?" in reason else reason[:100]] += 1
        except subprocess.TimeoutExpired:
            refused["submit timed out (30 s)"] += 1
        stop_feed.wait(args.submit_every * rng.uniform(0.5, 1.5))


for i in range(N):
    start(i)
if not wait("every node past height 12", lambda: all((h or 0) >= 12 for h in heights()), 120):
    log(f"the network did not start; see {home}/node*.log")
    stop_all()
    sys.exit(2)
log(f"4 validators up: heights {heights()}; binary {BIN}")

# Check the proposer formula on the first blocks (all decided with genesis stakes, almost
# all in round 0), so "the proposer of the moment" below is what consensus draws.
genesis_stakes = stakes_via(0)
first = [get(0, f"/v1/blocks/{h}") for h in range(1, (height(0) or 1) + 1)]
predicted_ok = sum(1 for h, b in enumerate(first, 1)
                   if b and b.get("header", {}).get("proposer") == accounts[proposer_at(h, genesis_stakes)])
log(f"proposer formula matches {predicted_ok}/{len(first)} of the first blocks' proposers "
    "(any other was likely decided after round 0)")

watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
feeder = threading.Thread(target=feed, daemon=True)
feeder.start()
time.sleep(3)

# ---- the kills --------------------------------------------------------------------------
kinds = collections.Counter()
kill_log = []
catch_up = []
seat_fallbacks = 0
long_downs = 0
rekills = 0
for k in range(args.kills):
    time.sleep(rng.uniform(0.5, 5.0))
    kind = rng.choice(["provider", "proposer", "seat"])
    victim, note = None, ""
    if kind == "provider":
        victim = 0
    elif kind == "proposer":
        j = rng.randrange(N)
        tip = height(j)
        st = stakes_via(j) if tip is not None else None
        if st:
            victim = proposer_at(tip + 1, st)
            note = f"proposer of height {tip + 1}"
        else:
            victim = rng.randrange(N)
            note = "random (no status read)"
    else:
        # A seat between commit and reveal: a node with more votes committed than revealed.
        def pending():
            c = []
            for i in range(1, N):
                m = get(i, "/metrics")
                if isinstance(m, str):
                    vals = dict(l.split(" ", 1) for l in m.splitlines() if l.startswith("trust_seat_votes_"))
                    com = float(vals.get("trust_seat_votes_committed_total", 0))
                    rev = float(vals.get("trust_seat_votes_revealed_total", 0))
                    if com > rev:
                        c.append(i)
            return c
        c = wait("a seat between commit and reveal", pending, 5.0, step=0.05)
        if c:
            victim = rng.choice(c)
            note = "committed > revealed"
        else:
            victim = rng.randrange(1, N)
            seat_fallbacks += 1
            note = "no seat between commit and reveal within 5 s; random seat"
    kinds[kind] += 1
    hs = heights()
    kill9(victim)
    # Mostly short outages; one in five outlasts a session's commit and reveal windows
    # (10 blocks each at 300 ms), so the contract's expiry paths run too.
    long_down = rng.random() < args.long_down
    down = rng.uniform(5.0, 15.0) if long_down else rng.uniform(0.2, 4.0)
    long_downs += int(long_down)
    log(f"kill {k + 1}/{args.kills}: node{victim} ({kind}: {note}) at heights {hs}, down {down:.1f} s")
    kill_log.append((k + 1, kind, victim, note))
    time.sleep(down)
    start(victim)
    if rng.random() < args.rekill:
        # Again while it replays its ledger and catches up: a crash during recovery.
        time.sleep(rng.uniform(0.05, 1.0))
        hv = height(victim)
        kill9(victim)
        rekills += 1
        log(f"  node{victim} killed again while restarting (its API said height {hv})")
        time.sleep(rng.uniform(0.2, 2.0))
        start(victim)
    t = time.monotonic()
    ok = wait(f"node{victim} to catch up", lambda: (
        (lambda hs: hs[victim] is not None and hs[victim] + 2 >= max(h or 0 for h in hs))(heights())), 120)
    if not ok:
        log(f"node{victim} did not catch up within 120 s; see {home}/node{victim}.log")
        break
    catch_up.append(time.monotonic() - t)
    log(f"  node{victim} back at height {heights()[victim]} {catch_up[-1]:.1f} s after its restart")

# ---- the end: every session ends, the nodes agree, the ledgers verify -------------------
stop_feed.set()
feeder.join(timeout=60)
log(f"kills done; {len(sessions)} sessions submitted; waiting up to {args.end_timeout:.0f} s for them to end")
final = {}


def all_ended():
    for sid, _, _ in sessions:
        if final.get(sid, {}).get("status") in ("decided", "failed"):
            continue
        s = get(1, f"/v1/sessions/{sid}")
        if isinstance(s, dict):
            final[sid] = s
        if final.get(sid, {}).get("status") not in ("decided", "failed"):
            return False
    return True


t_end = time.monotonic()
wait("every session to end", all_ended, args.end_timeout, step=1.0)
all_ended()
ended_in = time.monotonic() - t_end
stop_watch.set()
watcher.join(timeout=10)

# Every node's blocks at a common height (hashes chain, so equal hashes mean one history).
hs = heights()
common = min(h or 0 for h in hs)
at_common = [get(i, f"/v1/blocks/{common}") for i in range(N)]
views = [(b["hash"], b["header"]["state_root"]) if isinstance(b, dict) and "hash" in b else None
         for b in at_common]
agree = common > 0 and all(v is not None and v == views[0] for v in views)
status = []
for i in range(N):
    r = subprocess.run([BIN, "status", "--api", api(i), "--json"], capture_output=True, text=True, timeout=30)
    status.append(json.loads(r.stdout) if r.returncode == 0 else None)
stop_all()
verify = []
for i in range(N):
    r = subprocess.run([BIN, "ledger", "verify", "--home", f"{home}/node{i}"], capture_output=True,
                       text=True, timeout=600)
    verify.append((r.returncode == 0, (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]))
# The stopped ledgers: equal hashes at the lowest tip among them.
tips = []
for ok, line in verify:
    m = re.search(r"(\d+) blocks.*tip ([0-9a-f]+), state root ([0-9a-f]+)", line[0])
    tips.append((int(m.group(1)), m.group(2), m.group(3)) if m else None)

# ---- summary ----------------------------------------------------------------------------
by_status = collections.Counter(final.get(s, {}).get("status", "unknown") for s, _, _ in sessions)
failures = collections.Counter(json.dumps(final[s].get("failure"), sort_keys=True)
                               for s, _, _ in sessions if final.get(s, {}).get("status") == "failed")
stuck = [s for s, _, _ in sessions if final.get(s, {}).get("status") == "live"]
never = [s for s, _, _ in sessions if final.get(s, {}).get("status") not in ("live", "decided", "failed")]
print()
print("== crash consistency summary")
print(f"seed {args.seed}; kills {len(kill_log)}/{args.kills}: " +
      ", ".join(f"{k} {kinds[k]}" for k in ("provider", "proposer", "seat")) +
      f" (seat kills without a pending reveal seen: {seat_fallbacks}); down 5-15 s: {long_downs}; "
      f"killed again while restarting: {rekills}")
print("victims: " + ", ".join(f"node{i} {sum(1 for x in kill_log if x[2] == i)}" for i in range(N)))
if catch_up:
    print(f"restart to caught up (within 2 blocks): median {sorted(catch_up)[len(catch_up) // 2]:.1f} s, "
          f"max {max(catch_up):.1f} s")
print(f"sessions submitted {len(sessions)}: decided {by_status['decided']}, failed {by_status['failed']}, "
      f"stuck (still live) {len(stuck)}, never opened on the ledger {len(never)}")
print(f"  every session ended {ended_in:.1f} s after the last restart" if all(
    final.get(x, {}).get("status") in ("decided", "failed") for x, _, _ in sessions) else
    f"  not every session ended within {args.end_timeout:.0f} s")
verdicts = collections.Counter((t, final[s]["outcome"].get("trace")) for s, t, _ in sessions
                               if final.get(s, {}).get("status") == "decided")
print("  trace outcomes: " + ", ".join(f"{t} {o} x{c}" for (t, o), c in sorted(verdicts.items())))
for f, c in failures.most_common():
    print(f"  failed {c}: {f}")
if refused:
    print("submits refused: " + ", ".join(f"{c} {r}" for r, c in refused.most_common()))
print(f"blocks: {gaps['max_height']} by the end; longest gap without a new block "
      f"{gaps['longest']:.2f} s (before height {gaps['at_height']}, 100 ms polling)")
print(f"nodes at heights {hs}; block {common} on every node: "
      f"{'same hash and state root' if agree else 'DIFFERS: ' + repr(views)}")
for i, s in enumerate(status):
    if s:
        print(f"  node{i} status: height {s['height']} tip {s['tip_hash'][:16]} state root {s['state_root'][:16]}")
for i, (ok, line) in enumerate(verify):
    print(f"  node{i} ledger verify: {'ok' if ok else 'FAILED'}: {line[0]}")
for sid in stuck:
    print(f"  stuck: {sid} {final[sid]}")
for sid in never:
    print(f"  never opened: {sid} {final.get(sid)}")
# An acknowledged session that never opened was lost: its opening transaction is journaled
# before the provider answers, so not even a kill right after may lose it.
bad = bool(stuck) or bool(never) or not all(ok for ok, _ in verify) or not agree
print("RESULT: " + ("FAIL" if bad else "ok"))
sys.exit(1 if bad else 0)
PY
