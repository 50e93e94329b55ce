#!/usr/bin/env bash
# Coverage-guided fuzzing of the node's decoders (cargo fuzz, libFuzzer): see fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: scripts/fuzz.sh [--seeds] [SECONDS_PER_TARGET] [TARGET...]

Builds the fuzz targets under fuzz/ (installing cargo-fuzz with `cargo install` if it is
missing) and runs each target for SECONDS_PER_TARGET seconds (default 600), one after the
other, with one libFuzzer job. Then prints, per target: the seconds run, the executions,
the executions per second, the corpus size (inputs) and the crashes.

  TARGET...   some of: wire_tx_block consensus_msgs segment_docs trace_hdag expr
              config_toml (default: all of them)
  --seeds     first rewrite the committed seed corpora fuzz/corpus/<target>/ with the
              seed generator (fuzz/seeds/make_seeds.rs)
  -h, --help  this text

Each run reads the committed seeds (fuzz/corpus/<target>/, never written) and keeps what
it learns in fuzz/target/corpus/<target>/ (not committed), so a later run resumes from it.
Logs go to fuzz/target/logs/<target>.log; a crashing input is saved by libFuzzer under
fuzz/artifacts/<target>/ (reproduce it with `cargo fuzz run <target> <file>`, see
fuzz/README.md for turning it into a regression test).

The stable toolchain runs cargo fuzz with RUSTC_BOOTSTRAP=1 (it needs nightly flags).
Exits non-zero when a target crashes, hangs or runs out of memory.
EOF
}

ALL_TARGETS=(wire_tx_block consensus_msgs segment_docs trace_hdag expr config_toml)
seconds=600
seeds=0
targets=()
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --seeds) seeds=1 ;;
    ''|*[!0-9]*)
      if [[ " ${ALL_TARGETS[*]} " == *" $arg "* ]]; then
        targets+=("$arg")
      else
        echo "unknown target or option: $arg (try --help)" >&2
        exit 2
      fi
      ;;
    *) seconds="$arg" ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "cargo-fuzz missing: installing it with cargo install"
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
# No sanitizer: the node's crates forbid unsafe code, and what fuzzing finds in safe Rust
# (panics, overflows, hangs, memory blow-ups) needs none; it runs about twice as fast.
# The same flags for build and run, so `cargo fuzz run` does not rebuild.
FLAGS=(-s none --codegen-units 16)

echo "== fuzz: build (cargo fuzz build ${FLAGS[*]})"
# The lock file is committed; refuse to change it (cargo fuzz has no --locked of its own).
cargo fetch --locked --manifest-path fuzz/Cargo.toml
build_start=$(date +%s)
(cd fuzz && cargo fuzz build "${FLAGS[@]}")
echo "built in $(( $(date +%s) - build_start )) s"

if [ "$seeds" = 1 ]; then
  bin=$(find fuzz/target -path '*/release/make_seeds' -type f | head -1)
  "$bin" "$PWD"
fi

mkdir -p fuzz/target/logs
rows=()
failed=0
for t in "${targets[@]}"; do
  work="fuzz/target/corpus/$t"
  seed="fuzz/corpus/$t"
  log="fuzz/target/logs/$t.log"
  mkdir -p "$work" "$seed" "fuzz/artifacts/$t"
  before=$(find "fuzz/artifacts/$t" -type f | wc -l)
  echo "== fuzz: $t for $seconds s (log: $log)"
  start=$(date +%s)
  set +e
  # One libFuzzer process (no -jobs/-fork: they add processes and fuzz-N.log files).
  # libFuzzer writes new inputs to the first corpus directory only. `-timeout`: an input
  # taking longer than this is a hang and is reported as a crash.
  (cd fuzz && cargo fuzz run "${FLAGS[@]}" "$t" "../$work" "../$seed" -- \
      -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1) \
      >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=${execs:-0}
  persec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  persec=${persec:-0}
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  corpus=${corpus:-$(find "$work" -type f | wc -l)}
  crashes=$(( $(find "fuzz/artifacts/$t" -type f | wc -l) - before ))
  if [ "$rc" != 0 ] || [ "$crashes" -gt 0 ]; then
    failed=1
    [ "$crashes" -gt 0 ] || crashes=1
    echo "!! $t failed (exit $rc); the end of its log:"
    tail -n 30 "$log"
    echo "!! newest artifacts of $t:"
    ls -t "fuzz/artifacts/$t" | head -n 3
  fi
  rows+=("$(printf '%-16s %8s %12s %10s %8s %8s' "$t" "$took" "$execs" "$persec" "$corpus" "$crashes")")
  tail -n 3 "$log" | sed 's/^/   /'
done

echo "== fuzz: summary ($seconds s per target)"
printf '%-16s %8s %12s %10s %8s %8s\n' target seconds execs exec/s corpus crashes
printf '%s\n' "${rows[@]}"
exit "$failed"
