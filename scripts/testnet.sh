#!/usr/bin/env bash
# The docker testnet of docker-compose.yml (docs/operators.md "Docker testnet"); the local
# network of processes without docker is scripts/localnet.sh.
#   scripts/testnet.sh up | down | status | submit FILE [--wait] | query ID [NODE] | human |
#                      logs [NODE] [-f] | chaos [--hold S] [--max-gap S]
# `scripts/testnet.sh --help` explains each; the work is done by scripts/docker/testnet.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v python3 > /dev/null || { echo "testnet.sh: python3 not found" >&2; exit 1; }
exec python3 "$here/docker/testnet.py" "$@"
