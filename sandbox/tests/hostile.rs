//! Hostile programs against the sandbox, as the node runs it: as root on this machine and
//! on CI's. Each must end in an abstention within the caps and leave no process behind.
//!
//! Most run twice: through `execute` (the driver's import guard and audit hook catch the
//! attempt and say what it was), and through `execute_without_hooks`, as code that escaped
//! those in-process hooks would run: then only the operating-system layer (namespaces, the
//! seccomp filter, the resource limits) stands in the way, and it must hold on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use trust_sandbox::{Abstain, Config, Execute, LimitKind, Limits, Mode, Outcome, Request, Sandbox};

/// Small caps so that the limit tests are quick; the defaults are the spec's.
fn sandbox() -> &'static Sandbox {
    static S: OnceLock<Sandbox> = OnceLock::new();
    S.get_or_init(|| {
        let cfg = Config {
            limits: Limits {
                cpu_seconds: 2,
                wall: Duration::from_secs(6),
                ..Limits::default()
            },
            ..Config::default()
        };
        Sandbox::start(&cfg)
            .expect("the sandbox starts on this machine (bwrap and python3 installed)")
    })
}

/// One sandbox at a time in this test binary, so that "no process of ours is left" is
/// about this run alone.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn script(code: &str) -> Request {
    Request {
        mode: Mode::Script,
        earlier: vec![],
        code: code.to_string(),
    }
}

/// Every process descended from this test process (the kernel's parent links in /proc).
fn descendants() -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    let mut name: BTreeMap<u32, String> = BTreeMap::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = tail
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent.insert(pid, ppid);
        name.insert(
            pid,
            head.split_once('(')
                .map(|x| x.1)
                .unwrap_or_default()
                .to_string(),
        );
    }
    let mut found = BTreeSet::new();
    let mut grew = true;
    while grew {
        grew = false;
        for (&pid, &pp) in &parent {
            if (pp == me || found.contains(&pp)) && found.insert(pid) {
                grew = true;
            }
        }
    }
    found
        .into_iter()
        .map(|p| (p, name.get(&p).cloned().unwrap_or_default()))
        .collect()
}

/// A name no other run uses, for the marker file below.
fn unique_mark() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "mark-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Processes anywhere on the machine whose file system shows the marker: the run's own
/// (each sandbox has a private /tmp, seen from outside through /proc/PID/root).
fn processes_seeing(mark: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::path::Path::new(&format!("/proc/{pid}/root/tmp/{mark}")).exists())
        .collect()
}

/// Runs `req` and checks what is common to every hostile run: when `execute` returns,
/// nothing of the run is alive, neither a descendant of this test process nor any process
/// that sees the marker file the code writes first (a process re-parented away from us
/// would still see it).
fn run(req: &Request, hooks: bool) -> Outcome {
    let _g = one_at_a_time();
    let s = sandbox();
    let mark = unique_mark();
    let mut req = req.clone();
    req.code = format!("open('/tmp/{mark}', 'w').close()\n{}", req.code);
    let out = if hooks {
        s.execute(&req)
    } else {
        s.execute_without_hooks(&req)
    };
    let left = descendants();
    assert!(
        left.is_empty(),
        "processes left behind after {:?}: {left:?}",
        req.code
    );
    let seeing = processes_seeing(&mark);
    assert!(
        seeing.is_empty(),
        "processes of the run still alive after {:?}: {seeing:?}",
        req.code
    );
    out
}

fn abstains(out: &Outcome) -> &Abstain {
    match out {
        Outcome::Abstain(a) => a,
        Outcome::Ran(r) => panic!("expected an abstention, the code ran: {r:?}"),
    }
}

#[test]
fn an_infinite_loop_ends_at_the_cpu_cap() {
    for hooks in [true, false] {
        let out = run(&script("while True:\n    pass\n"), hooks);
        // The CPU cap (2 s) fires first unless the machine is so loaded that the wall cap
        // (6 s) does: either way the run is stopped by a cap.
        assert!(
            matches!(
                abstains(&out),
                Abstain::Limit {
                    which: LimitKind::Cpu | LimitKind::Wall
                }
            ),
            "{out:?}"
        );
        eprintln!("infinite loop (hooks {hooks}): {out:?}");
    }
}

#[test]
fn a_program_that_sleeps_forever_ends_at_the_wall_cap() {
    let code = "import time\ntime.sleep(3600)\n";
    assert!(matches!(
        abstains(&run(&script(code), true)),
        Abstain::NonDeterministic { .. }
    ));
    assert_eq!(
        abstains(&run(&script(code), false)),
        &Abstain::Limit {
            which: LimitKind::Wall
        }
    );
}

#[test]
fn a_fork_bomb_is_stopped() {
    let bomb = "import os\nwhile True:\n    os.fork()\n";
    assert!(matches!(
        abstains(&run(&script(bomb), true)),
        Abstain::NonDeterministic { .. } | Abstain::Refused { .. }
    ));
    // Without the hooks the first fork kills the process (seccomp): as root, RLIMIT_NPROC
    // alone would not have stopped it.
    assert!(matches!(
        abstains(&run(&script(bomb), false)),
        Abstain::Refused { .. }
    ));
    // The same through an escape from the hooks that never names `os` in an import.
    let escaped = "w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\n\
                   fork = w.__init__.__globals__['fork']\nwhile True:\n    fork()\n";
    assert!(matches!(
        abstains(&run(&script(escaped), true)),
        Abstain::Refused { .. }
    ));
    assert!(matches!(
        abstains(&run(&script(escaped), false)),
        Abstain::Refused { .. }
    ));
}

#[test]
fn a_fork_bomb_through_subprocess_is_stopped() {
    let bomb = "import subprocess, sys\nwhile True:\n    subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n";
    assert!(matches!(
        abstains(&run(&script(bomb), true)),
        Abstain::Refused { .. }
    ));
    assert!(matches!(
        abstains(&run(&script(bomb), false)),
        Abstain::Refused { .. }
    ));
}

#[test]
fn os_system_runs_nothing() {
    let code =
        "import os\nos.system('echo pwned > /tmp/pwned')\nprint(open('/tmp/pwned').read())\n";
    assert!(matches!(
        abstains(&run(&script(code), true)),
        Abstain::NonDeterministic { .. } | Abstain::Refused { .. }
    ));
    assert!(matches!(
        abstains(&run(&script(code), false)),
        Abstain::Refused { .. }
    ));
}

#[test]
fn a_ten_gib_allocation_hits_the_memory_cap() {
    for code in [
        "x = bytearray(10 * 1024**3)\n",
        "x = [0] * (10 * 1024**3 // 8)\n",
    ] {
        for hooks in [true, false] {
            assert_eq!(
                abstains(&run(&script(code), hooks)),
                &Abstain::Limit {
                    which: LimitKind::Memory
                },
                "{code}"
            );
        }
    }
}

#[test]
fn a_gigabyte_of_output_hits_the_output_cap() {
    // Printed (captured by the driver) and written straight to the real standard output
    // (read and counted by the node).
    let printed = "line = 'x' * 1023\nfor _ in range(1 << 20):\n    print(line)\n";
    let direct = "import sys\nline = 'x' * (1 << 20)\nfor _ in range(1 << 10):\n    sys.__stdout__.write(line)\n";
    for code in [printed, direct] {
        for hooks in [true, false] {
            // `sys.__stdout__` is reachable, but what reaches the real stream is read,
            // counted and dropped by the node, and the run is stopped past its cap.
            let out = run(&script(code), hooks);
            assert_eq!(
                abstains(&out),
                &Abstain::Limit {
                    which: LimitKind::Output
                },
                "{code}"
            );
        }
    }
    let cell = Request {
        mode: Mode::Cell,
        earlier: vec![],
        code: "'x' * (1 << 20)".into(),
    };
    assert_eq!(
        abstains(&run(&cell, true)),
        &Abstain::Limit {
            which: LimitKind::Output
        }
    );
}

#[test]
fn the_nodes_key_file_cannot_be_read() {
    // A stand-in for the node's key, in two places the node's files could be: the host's
    // /tmp (the sandbox has its own) and the build's directory.
    let secret = "KEY-3f9a1c0d2b7e4f65";
    let host_tmp = tempfile_in(std::env::temp_dir(), secret);
    let target = tempfile_in(PathBufFrom::target_tmp(), secret);
    for path in [&host_tmp, &target] {
        let code = format!("print(open({:?}).read())\n", path.display().to_string());
        // With the hooks: a file outside the working directory is refused; one inside it
        // that this run did not write is a file from somewhere else, so the seat abstains.
        let guarded = run(&script(&code), true);
        assert!(
            matches!(
                abstains(&guarded),
                Abstain::Refused { .. } | Abstain::NonDeterministic { .. }
            ),
            "{guarded:?}"
        );
        match run(&script(&code), false) {
            Outcome::Ran(r) => {
                assert!(
                    r.raised && r.output.starts_with("FileNotFoundError"),
                    "{r:?}"
                );
                assert!(!r.output.contains(secret));
            }
            Outcome::Abstain(a) => panic!("the file should simply not exist in the sandbox: {a}"),
        }
    }
    // Nor through /proc (not mounted) or the parent's root.
    match run(
        &script("print(open('/proc/1/root/etc/hostname').read())\n"),
        false,
    ) {
        Outcome::Ran(r) => assert!(
            r.raised && r.output.starts_with("FileNotFoundError"),
            "{r:?}"
        ),
        Outcome::Abstain(a) => panic!("{a}"),
    }
    let _ = std::fs::remove_file(host_tmp);
    let _ = std::fs::remove_file(target);
}

struct PathBufFrom;
impl PathBufFrom {
    fn target_tmp() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    }
}

fn tempfile_in(dir: std::path::PathBuf, content: &str) -> std::path::PathBuf {
    let p = dir.join(format!("trust-sandbox-key-{}.txt", std::process::id()));
    std::fs::write(&p, content).expect("write the stand-in key");
    p
}

#[test]
fn a_socket_cannot_be_opened() {
    let code = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('1.1.1.1', 53))\nprint('connected')\n";
    assert!(matches!(
        abstains(&run(&script(code), true)),
        Abstain::Refused { .. }
    ));
    assert!(matches!(
        abstains(&run(&script(code), false)),
        Abstain::Refused { .. }
    ));
}

#[test]
fn the_disk_is_capped() {
    // One big file hits RLIMIT_FSIZE (Python ignores SIGXFSZ, so the write fails); many
    // files fill the size-capped tmpfs. Neither completes.
    let big = "f = open('/tmp/big', 'wb')\nfor _ in range(1024):\n    f.write(b'x' * (1 << 20))\nprint('done')\n";
    let many = "for i in range(1024):\n    open(f'/tmp/f{i}', 'wb').write(b'x' * (1 << 20))\nprint('done')\n";
    for code in [big, many] {
        match run(&script(code), false) {
            Outcome::Ran(r) => assert!(r.raised && !r.output.contains("done"), "{r:?}"),
            Outcome::Abstain(a) => assert!(matches!(a, Abstain::Limit { .. }), "{a}"),
        }
    }
    // Only /tmp is writable: bwrap's own root and /dev are size-less tmpfs mounts, which
    // would otherwise hold as much as the host's memory.
    let elsewhere = "import os
for p in ['/f', '/dev/shm/f', '/dev/f', '/root/f', '/usr/f']:
    try:
        open(p, 'wb').write(b'x')
        print(p, 'written')
    except OSError:
        pass
print('end')
";
    match run(&script(elsewhere), false) {
        Outcome::Ran(r) => assert_eq!(r.output, "end"),
        Outcome::Abstain(a) => panic!("{a}"),
    }
}

#[test]
fn ordinary_code_still_runs_and_threads_work() {
    let out = run(&script("import math\nprint(math.comb(10, 3))\n"), true);
    assert!(
        matches!(&out, Outcome::Ran(r) if r.output == "120" && !r.raised),
        "{out:?}"
    );
    // Threads are clone with CLONE_THREAD (clone3 answers ENOSYS and the C library falls
    // back): allowed, so libraries that use a thread still work.
    let thr = "import threading\nr = []\nt = threading.Thread(target=lambda: r.append(7))\nt.start(); t.join()\nprint(r)\n";
    let out = run(&script(thr), false);
    assert!(
        matches!(&out, Outcome::Ran(r) if r.output == "[7]"),
        "{out:?}"
    );
}

#[test]
fn the_liveness_checks_see_a_running_sandbox() {
    // The checks in `run` would pass vacuously if they could not see a sandbox at all: here
    // one sleeps (until the wall cap) while both checks look for it.
    let _g = one_at_a_time();
    let mark = unique_mark();
    let code = format!("open('/tmp/{mark}', 'w').close()\nimport time\ntime.sleep(3600)\n");
    let runner = std::thread::spawn(move || sandbox().execute_without_hooks(&script(&code)));
    let (mut seen, mut descended) = (false, false);
    while !(runner.is_finished() || (seen && descended)) {
        seen |= !processes_seeing(&mark).is_empty();
        descended |= !descendants().is_empty();
        std::thread::yield_now();
    }
    let out = runner.join().expect("the run");
    assert!(
        seen && descended,
        "a live sandbox went unseen (marker: {seen}, descendant: {descended})"
    );
    assert_eq!(
        out,
        Outcome::Abstain(Abstain::Limit {
            which: LimitKind::Wall
        })
    );
    assert!(processes_seeing(&mark).is_empty());
    assert!(descendants().is_empty(), "{:?}", descendants());
}
