//! The sandbox: the host's CPython under bubblewrap, a seccomp filter and resource limits.
//!
//! Each run is one `bwrap` process tree (docs/security.md, "Running a provider's code"):
//!
//! - namespaces: all of them (user where the kernel allows, pid, net, ipc, uts, cgroup), so
//!   the code sees only its own processes, no network but a down loopback, and a root file
//!   system of read-only binds of `/usr` and the interpreter's prefix plus a fresh, size-capped
//!   tmpfs `/tmp` as its working directory: the node's files (its keys) are not there;
//! - `--die-with-parent`, `--new-session`, `--cap-drop ALL`; the pid namespace dies with its
//!   first process, so killing `bwrap` ends everything the code started;
//! - a seccomp filter that kills the process on a new process (fork, vfork, clone without
//!   `CLONE_THREAD`; clone3 answers ENOSYS so threads fall back to clone), a socket, ptrace,
//!   mounts, namespaces, keyrings, BPF, module loading and the like, and the x32 and
//!   32-bit system call tables: this is what stops a fork bomb when the node is root, whom
//!   `RLIMIT_NPROC` does not bind;
//! - resource limits set between fork and exec: CPU seconds, address space, file size, open
//!   files, processes, no core dumps;
//! - a wall-clock deadline after which the whole tree is killed, and caps on everything read
//!   back.
//!
//! The driver (`driver.py`, embedded) reads the request on standard input and writes its
//! single result record, marked with a random per-run token, to descriptor 3; what the
//! code writes to standard output and error is read, capped and dropped.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::{Abstain, Config, Display, Execute, LimitKind, Limits, Mode, Outcome, Ran, Request};

/// The embedded driver program (see its header).
const DRIVER: &str = include_str!("driver.py");
/// The size of the code's writable `/tmp` (a tmpfs, so it is memory) and the largest file.
const TMP_BYTES: u64 = 64 << 20;
/// Open files the code may hold.
const MAX_FILES: u64 = 64;
/// Processes the user id may have inside the sandbox's user namespace (bwrap's init, the
/// interpreter, its threads); the seccomp filter refuses new processes anyway.
const MAX_PROCS: u64 = 16;
/// What the code may write to its real standard output and error before the run is
/// stopped (it is dropped; only the first part of standard error is kept for diagnosis).
const STREAM_CAP: usize = 1 << 20;
/// The descriptors the child sees: the result channel and the two seccomp programs.
const RESULT_FD: RawFd = 3;
const SECCOMP_FD: RawFd = 4;
const GUARD_FD: RawFd = 5;

/// Why a [`Sandbox`] could not start. The node says so at start-up and its seats abstain
/// on tool segments; it never runs code outside the sandbox.
#[derive(Debug)]
pub enum StartError {
    /// bubblewrap (`bwrap`) is not installed or not runnable.
    Bwrap(String),
    /// The interpreter is missing or could not be resolved.
    Interpreter(String),
    /// The probe program did not run as expected inside the sandbox.
    Probe(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Bwrap(m) => write!(f, "the sandbox needs bubblewrap (bwrap): {m}"),
            StartError::Interpreter(m) => write!(f, "the sandbox's Python interpreter: {m}"),
            StartError::Probe(m) => write!(f, "the sandbox's probe run failed: {m}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Runs tool calls inside the sandbox. Built once at start-up by [`Sandbox::start`].
#[derive(Debug)]
pub struct Sandbox {
    inner: Option<Inner>,
    interpreter: String,
}

#[derive(Debug)]
struct Inner {
    bwrap: PathBuf,
    python: PathBuf,
    /// Host directories bound read-only at the same path (the interpreter's prefixes).
    binds: Vec<PathBuf>,
    /// `/lib`-style top-level entries: a symlink into `/usr` on merged-/usr systems.
    tops: Vec<(String, Top)>,
    limits: Limits,
    seccomp: Vec<u8>,
    guard: Vec<u8>,
    /// Whether the interpreter has IPython (the probe's answer).
    pretty: bool,
}

#[derive(Debug, Clone)]
enum Top {
    Symlink(PathBuf),
    Dir,
}

impl Sandbox {
    /// Checks bubblewrap and the interpreter and runs a probe program inside the sandbox.
    /// With `cfg.enabled == false` nothing is checked and every run abstains with
    /// [`Abstain::Off`].
    pub fn start(cfg: &Config) -> Result<Sandbox, StartError> {
        if !cfg.enabled {
            return Ok(Sandbox {
                inner: None,
                interpreter: "none (execution off)".into(),
            });
        }
        // The node's PATH may be minimal (a service manager's): Debian's place is known.
        let bwrap = find_on_path("bwrap")
            .or_else(|| Some(PathBuf::from("/usr/bin/bwrap")).filter(|p| p.is_file()))
            .ok_or_else(|| {
                StartError::Bwrap(
                    "bwrap is not on PATH (Debian: apt-get install bubblewrap)".into(),
                )
            })?;
        let asked = match &cfg.python {
            Some(p) => p.clone(),
            None => find_on_path("python3")
                .ok_or_else(|| StartError::Interpreter("python3 is not on PATH".into()))?,
        };
        let host = HostPython::resolve(&asked)?;
        let mut tops = Vec::new();
        for name in ["lib", "lib64", "lib32", "bin", "sbin"] {
            let p = Path::new("/").join(name);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(t) = std::fs::read_link(&p) {
                        tops.push((name.to_string(), Top::Symlink(t)));
                    }
                }
                Ok(m) if m.is_dir() => tops.push((name.to_string(), Top::Dir)),
                _ => {}
            }
        }
        let inner = Inner {
            bwrap,
            python: host.executable,
            binds: host.prefixes,
            tops,
            limits: cfg.limits.clone(),
            seccomp: seccomp::deny_filter().map_err(StartError::Probe)?,
            guard: seccomp::guard_filter(),
            pretty: false,
        };
        let mut sandbox = Sandbox {
            inner: Some(inner),
            interpreter: String::new(),
        };
        let (name, pretty) = sandbox.probe()?;
        if let Some(inner) = sandbox.inner.as_mut() {
            inner.pretty = pretty;
        }
        sandbox.interpreter = name;
        Ok(sandbox)
    }

    /// Runs the probe program: it names the interpreter and says whether IPython is there.
    fn probe(&self) -> Result<(String, bool), StartError> {
        let Some(inner) = &self.inner else {
            return Err(StartError::Probe("execution is off".into()));
        };
        let run = inner.run("probe", &[], true);
        match run {
            Raw::Record(fields) => match fields.as_slice() {
                [kind, name, pretty] if kind == "probe" => {
                    let name = unhex(name)
                        .ok_or_else(|| StartError::Probe("a malformed probe record".into()))?;
                    Ok((name, pretty == "1"))
                }
                _ => Err(StartError::Probe(format!(
                    "an unexpected probe record: {fields:?}"
                ))),
            },
            Raw::Abstain(a) => Err(StartError::Probe(a.to_string())),
        }
    }

    /// Whether display uses IPython's pretty printer (the interpreter has IPython).
    pub fn has_ipython(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.pretty)
    }

    /// Runs a request with the driver's in-process hooks (the import guard and the audit
    /// hook) turned off, leaving only the operating-system layer: namespaces, seccomp and
    /// the limits. For tests that show that layer holds against code that escaped the
    /// hooks; the node never calls it.
    #[doc(hidden)]
    pub fn execute_without_hooks(&self, req: &Request) -> Outcome {
        self.run_request(req, false)
    }

    fn run_request(&self, req: &Request, hooks: bool) -> Outcome {
        let Some(inner) = &self.inner else {
            return Outcome::Abstain(Abstain::Off);
        };
        let (mode, cells): (&str, Vec<&str>) = match req.mode {
            Mode::Script => ("script", vec![req.code.as_str()]),
            Mode::Cell => (
                "cell",
                req.earlier
                    .iter()
                    .map(String::as_str)
                    .chain([req.code.as_str()])
                    .collect(),
            ),
        };
        match inner.run(mode, &cells, hooks) {
            Raw::Abstain(a) => Outcome::Abstain(a),
            Raw::Record(fields) => parse_record(&fields),
        }
    }
}

impl Execute for Sandbox {
    fn execute(&self, req: &Request) -> Outcome {
        self.run_request(req, true)
    }

    fn interpreter(&self) -> &str {
        &self.interpreter
    }
}

/// What a run gave back before interpretation.
enum Raw {
    /// The driver's record, token removed, split at spaces.
    Record(Vec<String>),
    /// The run ended without a usable record.
    Abstain(Abstain),
}

fn parse_record(fields: &[String]) -> Outcome {
    let bad = || {
        Outcome::Abstain(Abstain::Failed {
            reason: "the driver wrote a malformed record".into(),
        })
    };
    match fields {
        [kind, raised, display, out] if kind == "ran" => {
            let Some(output) = unhex(out) else {
                return bad();
            };
            let display = match display.as_str() {
                "pretty" => Display::Pretty,
                "repr" => Display::Repr,
                _ => Display::None,
            };
            Outcome::Ran(Ran {
                output,
                raised: raised == "1",
                display,
            })
        }
        [kind, which, what] if kind == "abstain" => {
            let Some(what) = unhex(what) else {
                return bad();
            };
            Outcome::Abstain(match which.as_str() {
                "unavailable" => Abstain::Unavailable { module: what },
                "nondet" => Abstain::NonDeterministic { what },
                "refused" => Abstain::Refused { what },
                "limit" => Abstain::Limit {
                    which: match what.as_str() {
                        "output" => LimitKind::Output,
                        "memory" => LimitKind::Memory,
                        "cpu" => LimitKind::Cpu,
                        _ => LimitKind::Wall,
                    },
                },
                _ => Abstain::Failed { reason: what },
            })
        }
        _ => bad(),
    }
}

fn unhex(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16);
    let bytes: Option<Vec<u8>> = b
        .chunks(2)
        .map(|p| match p {
            [h, l] => Some(u8::try_from(nib(*h)? * 16 + nib(*l)?).ok()?),
            _ => None,
        })
        .collect();
    String::from_utf8(bytes?).ok()
}

fn hex(s: &str) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A random token for one run (the kernel's generator, through `/dev/urandom`).
fn token() -> io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Inner {
    fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
        push(&[
            "--unshare-all",
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
        ]);
        push(&["--cap-drop", "ALL", "--clearenv"]);
        push(&["--ro-bind", "/usr", "/usr"]);
        for (name, top) in &self.tops {
            let at = format!("/{name}");
            match top {
                Top::Symlink(t) => push(&["--symlink", &t.to_string_lossy(), &at]),
                Top::Dir => push(&["--ro-bind", &at, &at]),
            }
        }
        for b in &self.binds {
            let b = b.to_string_lossy();
            push(&["--ro-bind", &b, &b]);
        }
        let size = TMP_BYTES.to_string();
        push(&[
            "--dev", "/dev", "--size", &size, "--tmpfs", "/tmp", "--chdir", "/tmp",
        ]);
        // bwrap's root and /dev are tmpfs mounts without a size: read-only, or the code
        // could fill the host's memory through them (/dev/shm, a directory at the root).
        // Device nodes stay usable on a read-only mount; /tmp is a mount of its own.
        push(&["--remount-ro", "/dev", "--remount-ro", "/"]);
        for (k, v) in [
            ("PYTHONHASHSEED", "0"),
            ("PYTHONDONTWRITEBYTECODE", "1"),
            ("PYTHONIOENCODING", "utf-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TZ", "UTC"),
            ("HOME", "/tmp"),
            ("PATH", "/usr/bin:/bin"),
        ] {
            push(&["--setenv", k, v]);
        }
        let (s, g) = (SECCOMP_FD.to_string(), GUARD_FD.to_string());
        push(&["--add-seccomp-fd", &s, "--add-seccomp-fd", &g]);
        let python = self.python.to_string_lossy();
        push(&["--", &python]);
        // No -I: it implies -E, which would ignore PYTHONHASHSEED; the environment is ours
        // alone anyway (--clearenv). -s: no user site; the driver drops the working
        // directory from the import path itself.
        push(&["-s", "-B", "-c", DRIVER]);
        a
    }

    /// One sandboxed run of the driver.
    fn run(&self, mode: &str, cells: &[&str], hooks: bool) -> Raw {
        match self.run_inner(mode, cells, hooks) {
            Ok(r) => r,
            Err(e) => Raw::Abstain(Abstain::Failed {
                reason: format!("could not run bwrap ({e})"),
            }),
        }
    }

    fn run_inner(&self, mode: &str, cells: &[&str], hooks: bool) -> io::Result<Raw> {
        let token = token()?;
        let mut request = format!(
            "{token}\n{mode}\n{}\n{}\n{}\n",
            self.limits.output_bytes,
            u8::from(hooks),
            cells.len()
        );
        for c in cells {
            request.push_str(&hex(c));
            request.push('\n');
        }
        let (result_r, result_w) = io::pipe()?;
        let (seccomp_r, mut seccomp_w) = io::pipe()?;
        let (guard_r, mut guard_w) = io::pipe()?;
        // The programs are small (a few hundred bytes): they fit in the pipes' buffers.
        seccomp_w.write_all(&self.seccomp)?;
        guard_w.write_all(&self.guard)?;
        drop((seccomp_w, guard_w));

        let mut cmd = Command::new(&self.bwrap);
        cmd.args(self.args())
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let fds = [
            (result_w.as_raw_fd(), RESULT_FD),
            (seccomp_r.as_raw_fd(), SECCOMP_FD),
            (guard_r.as_raw_fd(), GUARD_FD),
        ];
        let rl = limits_of(&self.limits);
        child_setup::install(&mut cmd, fds, rl);
        let started = Instant::now();
        let mut child = cmd.spawn()?;
        drop((result_w, seccomp_r, guard_r));

        let flood = Arc::new(AtomicBool::new(false));
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let result = reader(
            result_r,
            4 * self.limits.output_bytes + 4096,
            usize::MAX,
            flood.clone(),
            done_tx.clone(),
        );
        let stdout = child
            .stdout
            .take()
            .map(|s| reader(s, 0, STREAM_CAP, flood.clone(), done_tx.clone()));
        let stderr = child
            .stderr
            .take()
            .map(|s| reader(s, 4096, STREAM_CAP, flood.clone(), done_tx.clone()));
        drop(done_tx);
        if let Some(mut stdin) = child.stdin.take() {
            // The driver reads all of it before it runs anything; a broken pipe means it died.
            let _ = stdin.write_all(request.as_bytes());
        }

        let deadline = started + self.limits.wall;
        let mut killed = None;
        let status = wait(&mut child, deadline, &flood, &done_rx, &mut killed)?;
        let result = result.join().unwrap_or_default();
        let _ = stdout.map(|h| h.join());
        let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();

        if let Some(k) = killed {
            return Ok(Raw::Abstain(Abstain::Limit { which: k }));
        }
        let text = String::from_utf8_lossy(&result.kept);
        let lines: Vec<&str> = text.lines().collect();
        let prefix = format!("{token} ");
        match lines.as_slice() {
            [one] if !result.overflow => {
                if let Some(rest) = one.strip_prefix(&prefix) {
                    return Ok(Raw::Record(rest.split(' ').map(String::from).collect()));
                }
                Ok(Raw::Abstain(Abstain::Refused {
                    what: "writing to the sandbox's result channel".into(),
                }))
            }
            [] => Ok(Raw::Abstain(no_record(status, &stderr.kept))),
            _ => Ok(Raw::Abstain(Abstain::Refused {
                what: "writing to the sandbox's result channel".into(),
            })),
        }
    }
}

/// Why a run that wrote no record ended.
fn no_record(status: ExitStatus, stderr: &[u8]) -> Abstain {
    let sig = status
        .signal()
        .or_else(|| status.code().filter(|c| *c > 128).map(|c| c - 128));
    let err = String::from_utf8_lossy(stderr);
    match sig {
        Some(libc::SIGXCPU) | Some(libc::SIGKILL) => Abstain::Limit {
            which: LimitKind::Cpu,
        },
        Some(libc::SIGSYS) => Abstain::Refused {
            what: "a system call the sandbox forbids (a new process, a socket, tracing or a mount)"
                .into(),
        },
        Some(libc::SIGXFSZ) => Abstain::Limit {
            which: LimitKind::Output,
        },
        _ if err.contains("MemoryError") || err.contains("Cannot allocate memory") => {
            Abstain::Limit {
                which: LimitKind::Memory,
            }
        }
        Some(s) => Abstain::Failed {
            reason: format!("the interpreter was ended by signal {s}"),
        },
        None if err.contains("bwrap:") => Abstain::Failed {
            reason: format!(
                "bubblewrap could not set up the sandbox ({})",
                err.lines().next().unwrap_or_default().trim()
            ),
        },
        None => Abstain::Failed {
            reason: format!(
                "the interpreter ended without a result (exit status {})",
                status.code().unwrap_or(-1)
            ),
        },
    }
}

/// Waits for the child until the deadline; kills the tree on the deadline or a flood.
fn wait(
    child: &mut Child,
    deadline: Instant,
    flood: &AtomicBool,
    done: &mpsc::Receiver<()>,
    killed: &mut Option<LimitKind>,
) -> io::Result<ExitStatus> {
    let mut open_readers = true;
    loop {
        if flood.load(Ordering::SeqCst) {
            *killed = Some(LimitKind::Output);
            return kill(child);
        }
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        let now = Instant::now();
        if now >= deadline {
            *killed = Some(LimitKind::Wall);
            return kill(child);
        }
        let left = deadline - now;
        if open_readers {
            // Wakes when a reader ends (the process closed its pipes, usually by exiting)
            // or reports a flood; otherwise re-checks every 50 ms.
            if let Err(mpsc::RecvTimeoutError::Disconnected) =
                done.recv_timeout(left.min(Duration::from_millis(50)))
            {
                open_readers = false;
            }
        } else {
            thread::sleep(left.min(Duration::from_millis(2)));
        }
    }
}

/// Ends the sandbox and returns only when all of it is gone. bwrap's child is the first
/// process of the sandbox's pid namespace: killing it makes the kernel kill every process
/// in the namespace, and it is reaped (by bwrap, which then exits) only once they all are.
/// So that child is killed, not bwrap: when bwrap's exit is seen, nothing of the run is
/// left. Killing bwrap itself (the fallback) would also end everything (`--die-with-parent`)
/// but without that ordering.
fn kill(child: &mut Child) -> io::Result<ExitStatus> {
    let bwrap = child.id();
    let mut signalled = false;
    for pid in children_of(bwrap) {
        signalled |= child_setup::kill_child(bwrap, pid);
    }
    if signalled {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Some(st) = child.try_wait()? {
                return Ok(st);
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
    let _ = child.kill();
    child.wait()
}

/// The children of `pid` (the kernel's list, or a scan of /proc where it lacks one).
fn children_of(pid: u32) -> Vec<u32> {
    if let Ok(list) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| parent_of(p) == Some(pid))
        .collect()
}

/// The parent of `pid`, from /proc (`pid (comm) state ppid ...`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[derive(Default)]
struct Read0 {
    kept: Vec<u8>,
    overflow: bool,
}

/// Reads a pipe to its end, keeping the first `keep` bytes; past `cap` bytes it raises the
/// flood flag (the run is then killed) and stops.
fn reader<R: Read + Send + 'static>(
    mut r: R,
    keep: usize,
    cap: usize,
    flood: Arc<AtomicBool>,
    done: mpsc::Sender<()>,
) -> thread::JoinHandle<Read0> {
    thread::spawn(move || {
        let mut out = Read0::default();
        let mut total = 0usize;
        let mut buf = [0u8; 16384];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total = total.saturating_add(n);
                    let room = keep.saturating_sub(out.kept.len());
                    out.kept
                        .extend_from_slice(buf.get(..n.min(room)).unwrap_or_default());
                    if n > room {
                        out.overflow = true;
                    }
                    if total > cap {
                        flood.store(true, Ordering::SeqCst);
                        let _ = done.send(());
                        break;
                    }
                }
            }
        }
        let _ = done.send(());
        out
    })
}

/// The resource limits of one run, as (resource, soft, hard).
fn limits_of(l: &Limits) -> Vec<(u32, u64, u64)> {
    vec![
        // SIGXCPU at the limit, SIGKILL a second later.
        (
            libc::RLIMIT_CPU,
            l.cpu_seconds,
            l.cpu_seconds.saturating_add(1),
        ),
        (libc::RLIMIT_AS, l.memory_bytes, l.memory_bytes),
        (libc::RLIMIT_FSIZE, TMP_BYTES, TMP_BYTES),
        (libc::RLIMIT_NOFILE, MAX_FILES, MAX_FILES),
        (libc::RLIMIT_NPROC, MAX_PROCS, MAX_PROCS),
        (libc::RLIMIT_CORE, 0, 0),
    ]
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The host interpreter, resolved: pyenv's `python3` is a shell shim, so we ask the
/// interpreter itself (outside the sandbox, running our own fixed program) where it lives.
struct HostPython {
    executable: PathBuf,
    prefixes: Vec<PathBuf>,
}

impl HostPython {
    fn resolve(asked: &Path) -> Result<HostPython, StartError> {
        const PROBE: &str = "import os, sys\nfor p in (sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix): print(os.path.realpath(p))";
        let out = Command::new(asked)
            .args(["-E", "-s", "-c", PROBE])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                StartError::Interpreter(format!("{} could not be run: {e}", asked.display()))
            })?;
        if !out.status.success() {
            return Err(StartError::Interpreter(format!(
                "{} failed to start ({})",
                asked.display(),
                out.status
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines().map(PathBuf::from);
        let executable = lines
            .next()
            .filter(|p| p.is_absolute() && p.is_file())
            .ok_or_else(|| {
                StartError::Interpreter(format!("{} did not name its executable", asked.display()))
            })?;
        let mut prefixes: Vec<PathBuf> = Vec::new();
        for p in lines.chain(executable.parent().map(Path::to_path_buf)) {
            // /usr is bound anyway; never bind the root or a home directory as a whole.
            let inside_usr = p.starts_with("/usr");
            let too_wide = p.components().count() < 3 && !inside_usr;
            if !inside_usr
                && !p.as_os_str().is_empty()
                && p.is_absolute()
                && !too_wide
                && !prefixes.iter().any(|q| p.starts_with(q))
            {
                prefixes.retain(|q| !q.starts_with(&p));
                prefixes.push(p);
            } else if too_wide {
                return Err(StartError::Interpreter(format!(
                    "{} lives in {}, too wide a directory to expose to the code",
                    asked.display(),
                    p.display()
                )));
            }
        }
        Ok(HostPython {
            executable,
            prefixes,
        })
    }
}

/// The seccomp programs, built once at start-up and handed to bwrap as raw BPF.
mod seccomp {
    use super::BTreeMap;
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };

    /// System calls that kill the process (SIGSYS, read back as [`Abstain::Refused`]): new
    /// processes, sockets, tracing, mounts and namespaces, keyrings, BPF, kernel modules,
    /// clocks and other host-wide state. Killing rather than failing the call means code
    /// that escaped the driver's hooks cannot turn a refusal into an ordinary error message
    /// that a seat would then compare as a result.
    const DENIED: &[i64] = &[
        libc::SYS_fork,
        libc::SYS_vfork,
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_getfd,
        libc::SYS_kcmp,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_syslog,
        libc::SYS_acct,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_personality,
        libc::SYS_mknod,
        libc::SYS_mknodat,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_quotactl,
        libc::SYS_iopl,
        libc::SYS_ioperm,
        libc::SYS_fanotify_init,
        libc::SYS_lookup_dcookie,
        libc::SYS_vhangup,
        libc::SYS_uselib,
        libc::SYS_ustat,
        libc::SYS_sysfs,
        libc::SYS_execveat,
    ];

    /// The main filter: the list above, and `clone` unless it makes a thread.
    pub(super) fn deny_filter() -> Result<Vec<u8>, String> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|&n| (n, vec![])).collect();
        // clone(flags, ...) without CLONE_THREAD is a new process.
        let no_thread = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
            0,
        )
        .map_err(|e| e.to_string())?;
        rules.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![no_thread]).map_err(|e| e.to_string())?],
        );
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::KillProcess,
            std::env::consts::ARCH
                .try_into()
                .map_err(|_| format!("no seccomp support for {}", std::env::consts::ARCH))?,
        )
        .map_err(|e| e.to_string())?;
        let prog: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?;
        Ok(prog
            .iter()
            .flat_map(|i| raw(i.code, i.jt, i.jf, i.k))
            .collect())
    }

    /// One `struct sock_filter` as the kernel reads it (native byte order).
    fn raw(code: u16, jt: u8, jf: u8, k: u32) -> [u8; 8] {
        let [c0, c1] = code.to_ne_bytes();
        let [k0, k1, k2, k3] = k.to_ne_bytes();
        [c0, c1, jt, jf, k0, k1, k2, k3]
    }

    /// The second filter, written out by hand because it compares ranges: the x32 system
    /// call table (numbers with bit 30 set, which the main filter's numbers would not
    /// match) answers ENOSYS, and so does `clone3` (its flags sit in memory a filter cannot
    /// read, so it is refused outright; C libraries then fall back to `clone` for threads).
    /// A foreign architecture (the 32-bit table) kills the process.
    pub(super) fn guard_filter() -> Vec<u8> {
        // BPF_LD | BPF_W | BPF_ABS
        const LD_W_ABS: u16 = 0x20;
        const JEQ_K: u16 = 0x05 | 0x10;
        const JGE_K: u16 = 0x05 | 0x30;
        const RET_K: u16 = 0x06;
        const ARCH_OFFSET: u32 = 4;
        const NR_OFFSET: u32 = 0;
        const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
        const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
        const X32_BIT: u32 = 0x4000_0000;
        let arch = if cfg!(target_arch = "aarch64") {
            AUDIT_ARCH_AARCH64
        } else {
            AUDIT_ARCH_X86_64
        };
        let errno = libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32);
        let prog: [[u8; 8]; 8] = [
            raw(LD_W_ABS, 0, 0, ARCH_OFFSET),
            raw(JEQ_K, 1, 0, arch),
            raw(RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
            raw(LD_W_ABS, 0, 0, NR_OFFSET),
            raw(JGE_K, 2, 0, X32_BIT),
            raw(JEQ_K, 1, 0, libc::SYS_clone3 as u32),
            raw(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
            raw(RET_K, 0, 0, errno),
        ];
        prog.concat()
    }
}

/// What runs in the child between fork and exec: the only unsafe code of the crate.
#[allow(unsafe_code)]
mod child_setup {
    use super::parent_of;
    use std::io;
    use std::os::fd::RawFd;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// Sets the resource limits and moves the three pipes to their fixed descriptors.
    pub(super) fn install(
        cmd: &mut Command,
        fds: [(RawFd, RawFd); 3],
        limits: Vec<(u32, u64, u64)>,
    ) {
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (setrlimit, fcntl, dup2, close) on plain values
        // captured by move; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                for &(res, soft, hard) in &limits {
                    let rl = libc::rlimit {
                        rlim_cur: soft,
                        rlim_max: hard,
                    };
                    if libc::setrlimit(res, &rl) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                // First out of the way (above 9), then into place: a source may already
                // sit on a target number.
                let mut high = [0 as RawFd; 3];
                for (h, &(src, _)) in high.iter_mut().zip(fds.iter()) {
                    *h = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, 10);
                    if *h < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                for (&h, &(_, dst)) in high.iter().zip(fds.iter()) {
                    // dup2 leaves the new descriptor without close-on-exec.
                    if libc::dup2(h, dst) < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    libc::close(h);
                }
                Ok(())
            });
        }
    }

    /// Sends SIGKILL to `pid` if it is still a child of `parent`, through a pidfd so that
    /// a recycled pid can never be hit: the pidfd pins one process, and its parent is
    /// checked after it is opened.
    pub(super) fn kill_child(parent: u32, pid: u32) -> bool {
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: plain system calls on integers; the descriptor is closed below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        let Ok(fd) = libc::c_int::try_from(fd) else {
            return false;
        };
        if fd < 0 {
            return false;
        }
        let ok = parent_of(pid) == Some(parent)
            // SAFETY: as above; a null siginfo is allowed.
            && unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, std::ptr::null::<libc::siginfo_t>(), 0)
            } == 0;
        // SAFETY: fd is ours and open.
        unsafe { libc::close(fd) };
        ok
    }
}
