# The driver the sandbox runs inside bubblewrap (trust-sandbox, issue 54). It reads one
# request on standard input, runs the cells in a namespace of their own, and writes ONE
# record to file descriptor 3, which the node reads:
#
#     <token> ran <0|1 raised> <pretty|repr|none> <hex of the output>
#     <token> abstain <kind> <hex of what>
#
# The token is random per run and comes with the request. The code's own prints never reach
# descriptor 3: they go to an in-process buffer (the result) and standard output and error
# are read, capped and discarded by the node.
#
# The hooks below (an import guard and an audit hook) only detect code that reaches a clock,
# randomness, the environment, files, the network or processes, so that a seat abstains
# rather than votes on a value that may differ between runs. They are not the security
# boundary: code that escapes them is still inside the namespaces, the seccomp filter and
# the resource limits (docs/security.md).
import sys

# The working directory (/tmp, writable by the code) is never on the import path.
sys.path[:] = [p for p in sys.path if p not in ("", ".", "/tmp")]

import ast
import builtins
import importlib.util
import io
import os
import tokenize
import traceback
import types


def _read_request():
    chunks = []
    while True:
        b = os.read(0, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(0)
    lines = b"".join(chunks).decode("ascii").split("\n")
    token, mode, cap, hooks, n = lines[0], lines[1], int(lines[2]), lines[3] == "1", int(lines[4])
    cells = [bytes.fromhex(lines[5 + i]).decode("utf-8") for i in range(n)]
    return token, mode, cap, hooks, cells


_TOKEN, _MODE, _CAP, _HOOKS, _CELLS = _read_request()
_OUT = 3
_write = os.write
_exit = os._exit


def _record(*fields):
    line = (_TOKEN + " " + " ".join(fields) + "\n").encode("ascii")
    while line:
        line = line[_write(_OUT, line):]
    _exit(0)


def _abstain(kind, what):
    _record("abstain", kind, what.encode("utf-8").hex())


def _ran(output, raised, display):
    _record("ran", "1" if raised else "0", display, output.encode("utf-8", "replace").hex())


if _MODE == "probe":
    import platform

    _pretty_ok = importlib.util.find_spec("IPython") is not None
    _record(
        "probe",
        (platform.python_implementation() + " " + platform.python_version()).encode().hex(),
        "1" if _pretty_ok else "0",
    )

# --- plain-text display: IPython's pretty printer when the interpreter has IPython ----------
# Only IPython/lib/pretty.py and its two small helpers are loaded (IPython's package
# __init__ would load the whole terminal application): a bare package object stands in for
# `IPython` while they load.
_pretty = None
if _MODE == "cell":
    try:
        _spec = importlib.util.find_spec("IPython")
        if _spec is not None and _spec.submodule_search_locations:
            _pkg = types.ModuleType("IPython")
            _pkg.__path__ = list(_spec.submodule_search_locations)
            sys.modules["IPython"] = _pkg
            from IPython.lib.pretty import pretty as _pretty
            for _k in [k for k in sys.modules if k == "IPython" or k.startswith("IPython.")]:
                del sys.modules[_k]
    except Exception:
        _pretty = None


def _display(value):
    if _pretty is not None:
        return _pretty(value, max_width=79, newline="\n", max_seq_length=1000), "pretty"
    return repr(value), "repr"


# --- what the code did that makes a run unrepeatable or is refused --------------------------
_event = []


class _Stop(BaseException):
    """Raised into the code when it reaches something the seat will not vote on."""


def _stop(kind, what):
    if not _event:
        _event.append((kind, what))
    raise _Stop(what)


# Modules the code may not import itself (libraries may: sympy's own imports are theirs).
_NONDET = {}
for _names, _what in (
    (("time", "datetime", "zoneinfo", "timeit", "sched", "cProfile", "profile"), "a clock"),
    (("random", "secrets", "uuid", "numpy.random"), "randomness"),
    (("os", "posix", "nt", "platform", "getpass", "pwd", "grp", "resource", "sysconfig", "site"),
     "the environment"),
    (("pathlib", "shutil", "tempfile", "glob", "fileinput", "filecmp", "sqlite3", "dbm", "shelve",
      "mmap", "fcntl"), "files"),
    (("threading", "_thread", "asyncio", "concurrent", "signal", "faulthandler"), "concurrency or signals"),
):
    for _n in _names:
        _NONDET[_n] = _what
_REFUSED = {}
for _names, _what in (
    (("socket", "_socket", "ssl", "select", "selectors", "socketserver", "urllib", "http",
      "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "xmlrpc", "webbrowser", "requests",
      "httpx", "aiohttp"), "the network"),
    (("subprocess", "_posixsubprocess", "multiprocessing", "pty"), "another process"),
    (("ctypes", "_ctypes", "cffi", "builtins", "importlib", "runpy", "code", "codeop", "gc",
      "_imp", "marshal"), "reaching into the interpreter"),
):
    for _n in _names:
        _REFUSED[_n] = _what


def _from_code(globals_):
    """True when an import or a call comes from the provider's code rather than a library."""
    if not isinstance(globals_, dict):
        return False
    mod = sys.modules.get(globals_.get("__name__"))
    return mod is None or getattr(mod, "__dict__", None) is not globals_


_real_import = builtins.__import__


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    g = globals if globals is not None else sys._getframe(1).f_globals
    if not _from_code(g) or level != 0:
        return _real_import(name, globals, locals, fromlist, level)
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        prefix = ".".join(parts[:k])
        if prefix in _REFUSED:
            _stop("refused", _REFUSED[prefix] + " (" + prefix + ")")
        if prefix in _NONDET:
            _stop("nondet", _NONDET[prefix] + " (" + prefix + ")")
    for item in fromlist or ():
        full = name + "." + str(item)
        if full in _NONDET:
            _stop("nondet", _NONDET[full] + " (" + full + ")")
    try:
        return _real_import(name, globals, locals, fromlist, level)
    except ModuleNotFoundError as e:
        if not _event:
            _event.append(("unavailable", e.name or name))
        raise


def _guarded_input(*args):
    _stop("nondet", "standard input")


def _code_frame(depth):
    """The frame `depth` levels above the caller, when it runs the provider's code."""
    try:
        f = sys._getframe(depth + 1)
    except ValueError:
        return None
    return f if _from_code(f.f_globals) else None


_written = set()
_PROCESS = ("os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
            "os.kill", "os.killpg", "subprocess.Popen", "pty.spawn")
_FILES = ("os.listdir", "os.scandir", "os.chdir", "os.remove", "os.rename", "os.rmdir", "os.mkdir",
          "os.putenv", "os.unsetenv", "os.chmod", "os.chown", "os.link", "os.symlink",
          "os.truncate", "os.utime", "glob.glob", "shutil.")


def _audit(event, args):
    if _event:
        return
    if event.startswith("socket.") or event.startswith("urllib."):
        _stop("refused", "the network (a socket)")
    if event.startswith(_PROCESS):
        _stop("refused", "another process (" + event + ")")
    if event == "builtins.input" or event == "builtins.input/result":
        _stop("nondet", "standard input")
    if event == "time.sleep":
        _stop("nondet", "a clock (sleep)")
    if event == "open" and _code_frame(1) is not None:
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if isinstance(path, int):
            _stop("refused", "a file descriptor")
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            _stop("refused", "a file")
        full = os.path.normpath(os.path.join("/tmp", path))
        if full == "/tmp" or not full.startswith("/tmp/") or os.path.realpath(full) != full:
            _stop("refused", "a file outside the working directory")
        if isinstance(mode, str):
            writes = any(c in mode for c in "wax+")
        else:
            writes = isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writes:
            _written.add(full)
        elif full not in _written:
            # Not written by this run: on the provider's machine it may have held anything.
            _stop("nondet", "a file the code did not write")
        return
    if event.startswith(_FILES) and _code_frame(1) is not None:
        _stop("nondet", "files (" + event + ")")


# --- output -----------------------------------------------------------------------------------
class _Capture(io.TextIOBase):
    """What the code prints: kept up to the cap (the cap ends the run), or counted and dropped."""

    def __init__(self, keep):
        self.keep = keep
        self.parts = []
        self.size = 0

    def writable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        if self.keep:
            self.size += len(s.encode("utf-8", "replace"))
            if self.size > _CAP:
                _abstain("limit", "output")
            self.parts.append(s)
        return len(s)

    def flush(self):
        pass

    def text(self):
        return "".join(self.parts)


def _last_line(e):
    lines = traceback.format_exception_only(type(e), e)
    return lines[-1].strip() if lines else type(e).__name__


def _silenced(src):
    """IPython shows no value when the cell's last token is a semicolon."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                  tokenize.DEDENT, tokenize.ENDMARKER)]
    except Exception:
        return False
    return bool(toks) and toks[-1].string == ";"


def _is_magic(src):
    return any(l.lstrip().startswith(("%", "!")) or l.rstrip().endswith("?") for l in src.splitlines())


def _run_cell(src, ns, shown):
    """Runs one cell as IPython does: a last bare expression is displayed. Returns
    (display text or None, display kind, raised exception or None)."""
    try:
        tree = ast.parse(src, filename="<cell>", mode="exec")
    except SyntaxError as e:
        if _is_magic(src):
            _stop("refused", "an IPython magic or shell escape")
        return None, "none", e
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    try:
        exec(compile(tree, "<cell>", "exec"), ns)
        if last is None:
            return None, "none", None
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
    except _Stop:
        raise
    except MemoryError:
        _abstain("limit", "memory")
    except BaseException as e:
        return None, "none", e
    if value is None or _silenced(src):
        return None, "none", None
    ns["___"], ns["__"], ns["_"] = ns.get("__"), ns.get("_"), value
    if shown:
        try:
            text, kind = _display(value)
        except _Stop:
            raise
        except MemoryError:
            _abstain("limit", "memory")
        except BaseException as e:
            # A value whose repr raises: IPython shows the error.
            return None, "none", e
        return text, kind, None
    return None, "none", None


def _main():
    ns = {"__name__": "__main__", "__builtins__": builtins}
    if _MODE == "cell":
        # An IPython kernel gives every cell `display`: each object's plain text on a line.
        def display(*objs, **_kw):
            for o in objs:
                print(_display(o)[0])

        ns["display"] = display
    if _HOOKS:
        builtins.__import__ = _guarded_import
        builtins.input = _guarded_input
        sys.addaudithook(_audit)
    sys.stdin = io.StringIO("")
    if _MODE == "script":
        cap = _Capture(True)
        sys.stdout, sys.stderr = cap, _Capture(False)
        raised = None
        try:
            exec(compile(_CELLS[-1], "<cell>", "exec"), ns)
        except _Stop:
            pass
        except MemoryError:
            _abstain("limit", "memory")
        except BaseException as e:
            raised = e
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        _finish()
        if raised is not None:
            _ran(_last_line(raised), True, "none")
        _ran(cap.text().strip(), False, "none")
    # A persistent kernel: earlier cells first, their output dropped, their errors ignored
    # (a notebook carries on after an error).
    for cell in _CELLS[:-1]:
        sys.stdout = sys.stderr = _Capture(False)
        try:
            _run_cell(cell, ns, False)
        except _Stop:
            pass
        _finish()
    cap = _Capture(True)
    sys.stdout = sys.stderr = cap
    try:
        text, kind, raised = _run_cell(_CELLS[-1], ns, True)
    except _Stop:
        text, kind, raised = None, "none", None
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    _finish()
    out = cap.text()
    if raised is not None:
        out = out + ("" if out.endswith("\n") or not out else "\n") + _last_line(raised)
    elif text is not None:
        out = out + ("" if out.endswith("\n") or not out else "\n") + text
        if kind == "pretty" and len(out.encode("utf-8", "replace")) > _CAP:
            _abstain("limit", "output")
    out = out.strip()
    if raised is None and not out:
        out = "<empty_execution>"
    _ran(out, raised is not None, kind if raised is None else "none")


def _finish():
    """Reports what the hooks saw, if anything, before any result."""
    if _event:
        kind, what = _event[0]
        _abstain(kind, what)


try:
    _main()
except MemoryError:
    _abstain("limit", "memory")
except RecursionError:
    _abstain("failed", "the driver ran out of stack")
