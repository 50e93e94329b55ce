#!/usr/bin/env bash
# The project's test command (README "Run the tests"): every unit, property and
# integration test of the workspace, with the lock file as committed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-nextest >/dev/null 2>&1; then
  echo "cargo-nextest missing: installing it from crates.io"
  cargo install cargo-nextest --locked
fi
exec cargo nextest run --workspace --locked --no-fail-fast "$@"
