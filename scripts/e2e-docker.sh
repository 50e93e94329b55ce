#!/usr/bin/env bash
# The docker testnet end to end (docs/operators.md "Docker testnet"), run by .ci/run after
# the tests when a Docker engine answers; without one it says so and exits 0. In order:
#   1. build the images (scripts/build-image.sh: no registry, Debian root filesystem cached);
#   2. testnet up (scripts/testnet.sh up: every node decides blocks);
#   3. submit a sample trace through the provider node (its worded steps go to the LLM
#      seats, whose SmolLM2 abstains, and on to the Human node);
#   4. kill -9 one validator while that session is in flight (its seats drawn);
#   5. query the verdict from a node other than the provider, and check that the Human
#      node, whose seats nobody answers, abstained at its deadline and was not slashed;
#   6. start the killed validator again and wait until it holds the same block hash and
#      state root as the others;
#   7. the chaos sequence once, 10 s per fault (scripts/testnet.sh chaos; non-zero if
#      liveness or safety broke);
#   8. testnet down with its volume, and check that no container, volume or network of
#      the project is left.
# The testnet is taken down on any failure too, after its last log lines are shown.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker > /dev/null 2>&1; then
  echo "e2e-docker: skipped: docker is not installed, so the docker testnet was not tested"
  exit 0
fi
if ! docker info > /dev/null 2>&1; then
  echo "e2e-docker: skipped: no Docker engine answers (docker info failed), so the docker testnet was not tested"
  exit 0
fi

tn=scripts/testnet.sh
project=${COMPOSE_PROJECT_NAME:-$(sed -n "s/^COMPOSE_PROJECT_NAME=//p" .env)}
t_all=$(date +%s)
passed=0
step_t=0
step() {
  step_t=$(date +%s)
  echo
  echo "== e2e-docker: $*"
}
done_step() {
  passed=$((passed + 1))
  echo "-- ok ($(($(date +%s) - step_t)) s)"
}
cleanup() {
  rc=$?
  if [ "$rc" != 0 ]; then
    echo
    echo "== e2e-docker: FAILED (exit $rc) after $passed steps; the last log lines of every service:"
    python3 scripts/docker/testnet.py logs --tail 40 2>&1 | tail -400 || true
    python3 scripts/docker/testnet.py status || true
  fi
  python3 scripts/docker/testnet.py down > /dev/null 2>&1 || true
  exit "$rc"
}

step "1. build the images"
scripts/build-image.sh
done_step

# A testnet left over from an interrupted run would be reused with its old chain.
python3 scripts/docker/testnet.py down > /dev/null 2>&1 || true
trap cleanup EXIT

step "2. testnet up"
$tn up
done_step

step "3. submit examples/traces/fraction-correct.txt through the provider"
out=$($tn submit examples/traces/fraction-correct.txt)
echo "$out"
session=$(echo "$out" | sed -n 's/^session *\([0-9a-f]\{64\}\)$/\1/p')
[ -n "$session" ] || { echo "no session id in the submit output"; exit 1; }
done_step

step "4. kill -9 validator2 while the session is in flight"
$tn wait-session "$session" live validator1 --timeout 120
v2=$(docker ps -q --filter label=com.docker.compose.project=$project --filter label=com.docker.compose.service=validator2)
[ -n "$v2" ] || { echo "validator2 is not running"; exit 1; }
docker kill -s KILL "$v2" > /dev/null
echo "validator2 killed (SIGKILL)"
done_step

step "5. the verdict, queried from validator1 (not the provider)"
$tn wait-session "$session" decided validator1 --timeout 420
q=$($tn query "$session" validator1)
echo "$q"
echo "$q" | grep -Eq '^verdict +(PASS|FAIL|INCONCLUSIVE)' || { echo "validator1 shows no verdict"; exit 1; }
$tn human
python3 - <<'PY'
import sys
sys.path.insert(0, "scripts/docker")
import testnet as t
h = t.node("human0")
me = t.http(h.port, "/v1/status")["node_id"]
a = t.http(h.port, f"/v1/auditors/{me}")
print(f"human0 ({a['tier']}): {a['votes']} votes revealed, {a['abstentions']} abstentions, slashed {a['slashed']}")
if a["abstentions"] < 1:
    sys.exit("human0 has no abstention on record: its seat did not abstain at its deadline")
if a["slashed"] != 0:
    sys.exit("human0 was slashed although it abstained in time")
PY
done_step

step "6. validator2 back, until it holds the same block and state root as the others"
docker start "$v2" > /dev/null
$tn wait-synced validator2 --timeout 240
done_step

step "7. chaos (10 s per fault)"
$tn chaos --hold 10
done_step

step "8. testnet down, volume removed"
trap - EXIT
$tn down
done_step

echo
echo "e2e-docker: docker testnet end to end in $(($(date +%s) - t_all)) s"
echo "e2e-docker: $passed passed, 0 failed"
