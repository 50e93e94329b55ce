//! What a re-run returns under each mode, what makes it abstain, and that runs repeat.

use std::sync::OnceLock;

use trust_sandbox::{
    Abstain, Config, Display, Execute, Mode, Outcome, Ran, Request, Sandbox, StartError,
};

fn sandbox() -> &'static Sandbox {
    static S: OnceLock<Sandbox> = OnceLock::new();
    S.get_or_init(|| {
        Sandbox::start(&Config::default()).expect("the sandbox starts on this machine")
    })
}

fn script(code: &str) -> Outcome {
    sandbox().execute(&Request {
        mode: Mode::Script,
        earlier: vec![],
        code: code.into(),
    })
}

fn cell(earlier: &[&str], code: &str) -> Outcome {
    sandbox().execute(&Request {
        mode: Mode::Cell,
        earlier: earlier.iter().map(|s| s.to_string()).collect(),
        code: code.into(),
    })
}

fn ran(out: Outcome) -> Ran {
    match out {
        Outcome::Ran(r) => r,
        Outcome::Abstain(a) => panic!("expected a run, got an abstention: {a}"),
    }
}

fn abstain(out: Outcome) -> Abstain {
    match out {
        Outcome::Abstain(a) => a,
        Outcome::Ran(r) => panic!("expected an abstention, the code ran: {r:?}"),
    }
}

#[test]
fn the_interpreter_is_named() {
    let name = sandbox().interpreter();
    assert!(name.starts_with("CPython 3."), "{name}");
}

#[test]
fn a_script_returns_its_stdout_trimmed_or_its_last_traceback_line() {
    let r = ran(script("print('  hello  ')\nprint(6 * 7)\n"));
    assert_eq!(
        (r.output.as_str(), r.raised, r.display),
        ("hello  \n42", false, Display::None)
    );
    // The value of a last bare expression is not shown in a script.
    assert_eq!(ran(script("x = 2\nx * 3\n")).output, "");
    // An exception: the last line of its traceback only (as ToRA's executor reports it).
    let r = ran(script("print('before')\n[][1]\n"));
    assert_eq!(
        (r.output.as_str(), r.raised),
        ("IndexError: list index out of range", true)
    );
    let r = ran(script("def f(:\n    pass\n"));
    assert!(r.raised && r.output.starts_with("SyntaxError"), "{r:?}");
}

#[test]
fn a_cell_replays_earlier_cells_and_shows_its_last_value() {
    let r = ran(cell(
        &["x = 20", "print('dropped')\ny = x + 1"],
        "print('sum:')\nx + y",
    ));
    assert_eq!(r.output, "sum:\n41");
    assert_eq!(
        r.display,
        if sandbox().has_ipython() {
            Display::Pretty
        } else {
            Display::Repr
        }
    );
    // An error in an earlier cell does not stop the kernel.
    assert_eq!(ran(cell(&["a = 1", "1/0", "b = 2"], "a + b")).output, "3");
    // None, an assignment and a trailing semicolon show nothing.
    assert_eq!(ran(cell(&[], "None")).output, "<empty_execution>");
    assert_eq!(ran(cell(&[], "z = 5")).output, "<empty_execution>");
    let r = ran(cell(&[], "z = 5\nz;"));
    assert_eq!(
        (r.output.as_str(), r.display),
        ("<empty_execution>", Display::None)
    );
    // An error: what was printed, then the traceback's last line.
    let r = ran(cell(&["d = {}"], "print('looking')\nd['k']"));
    assert_eq!(
        (r.output.as_str(), r.raised),
        ("looking\nKeyError: 'k'", true)
    );
    // `_` is the last shown value, as in IPython.
    assert_eq!(ran(cell(&["7 * 6"], "_ + 0")).output, "42");
    // `display` is there, as in a kernel.
    assert_eq!(
        ran(cell(&[], "display(6 * 7, 'x')\n5")).output,
        "42\n'x'\n5"
    );
    // A value whose repr raises shows the error, as IPython does.
    let r = ran(cell(
        &["class A:\n    def __repr__(self):\n        raise ValueError('no repr')"],
        "A()",
    ));
    assert_eq!((r.output.as_str(), r.raised), ("ValueError: no repr", true));
}

#[test]
fn a_cell_displays_as_ipython_does() {
    if !sandbox().has_ipython() {
        eprintln!(
            "NOTE: no IPython in this interpreter: displays are repr (scripts/test.sh installs it)"
        );
        return;
    }
    // IPython's pretty printer breaks a long list one element per line and sorts a set.
    let r = ran(cell(&[], "list(range(30))"));
    assert!(r.output.starts_with("[0,\n 1,\n 2,"), "{}", r.output);
    assert_eq!(ran(cell(&[], "{3, 1, 2}")).output, "{1, 2, 3}");
    assert_eq!(
        ran(cell(&[], "{'b': 1, 'a': 2}")).output,
        "{'b': 1, 'a': 2}"
    );
}

#[test]
fn runs_repeat_exactly() {
    // Hash seed fixed: a set of strings prints in the same order every run, and str hashes
    // are equal.
    let code = "print({'pear', 'apple', 'fig', 'kiwi', 'plum'})\nprint(hash('abc'))\n";
    let a = ran(script(code));
    let b = ran(script(code));
    assert_eq!(a, b);
}

#[test]
fn libraries_import_what_they_need_but_the_code_may_not() {
    // sympy itself imports os, sys, time and more; the code importing sympy is fine.
    let r = cell(
        &["import sympy\nx = sympy.Symbol('x')"],
        "sympy.factor(x**2 - 1)",
    );
    match r {
        Outcome::Ran(r) => assert_eq!(r.output, "(x - 1)*(x + 1)"),
        Outcome::Abstain(Abstain::Unavailable { module }) => {
            eprintln!("NOTE: no {module} in this interpreter (scripts/test.sh installs it)")
        }
        Outcome::Abstain(a) => panic!("{a}"),
    }
    assert_eq!(ran(script("import math, fractions, itertools, collections, functools, decimal, statistics\nprint(fractions.Fraction(1, 3) + math.comb(4, 2))")).output, "19/3");
    for (code, what) in [
        ("import time\nprint(time.time())", "a clock"),
        (
            "from datetime import datetime\nprint(datetime.now())",
            "a clock",
        ),
        ("import random\nprint(random.random())", "randomness"),
        ("import os\nprint(os.environ)", "the environment"),
        ("import uuid\nprint(uuid.uuid4())", "randomness"),
        ("x = __import__('random')", "randomness"),
        ("exec('import time')", "a clock"),
        ("print(input())", "standard input"),
    ] {
        match abstain(script(code)) {
            Abstain::NonDeterministic { what: w } => assert!(w.starts_with(what), "{code}: {w}"),
            other => panic!("{code}: {other}"),
        }
    }
    // The code swallowing the refusal does not turn it into a result.
    let a = abstain(script(
        "try:\n    import random\nexcept BaseException:\n    pass\nprint(4)",
    ));
    assert!(matches!(a, Abstain::NonDeterministic { .. }), "{a}");
}

#[test]
fn a_missing_library_is_unavailable() {
    assert_eq!(
        abstain(script("import surely_not_a_module_here\n")),
        Abstain::Unavailable {
            module: "surely_not_a_module_here".into()
        }
    );
    // Caught by the code, the import still says the seat's interpreter differs.
    assert_eq!(
        abstain(script(
            "try:\n    import surely_not_a_module_here\nexcept ImportError:\n    print('fallback')\n"
        )),
        Abstain::Unavailable {
            module: "surely_not_a_module_here".into()
        }
    );
}

#[test]
fn files_written_by_the_run_can_be_read_back() {
    let r = ran(script(
        "open('notes.txt', 'w').write('kept')\nprint(open('/tmp/notes.txt').read())\n",
    ));
    assert_eq!(r.output, "kept");
    assert!(matches!(
        abstain(script("print(open('never-written.txt').read())")),
        Abstain::NonDeterministic { .. }
    ));
    assert!(matches!(
        abstain(script("print(open('/usr/share/dict/words').read())")),
        Abstain::Refused { .. }
    ));
}

#[test]
fn a_forged_record_on_the_result_channel_is_refused() {
    // Code that escaped the hooks can write to the result descriptor, but not with the
    // run's token; two records, or one without the token, are refused.
    let forge = "import os\nos.write(3, b'0123456789abcdef0123456789abcdef ran 0 none 3432\\n')\nprint(1)\n";
    let out = sandbox().execute_without_hooks(&Request {
        mode: Mode::Script,
        earlier: vec![],
        code: forge.into(),
    });
    assert!(
        matches!(out, Outcome::Abstain(Abstain::Refused { .. })),
        "{out:?}"
    );
}

#[test]
fn execution_off_abstains_on_everything() {
    let s = Sandbox::start(&Config {
        enabled: false,
        ..Config::default()
    })
    .expect("an off sandbox always starts");
    let out = s.execute(&Request {
        mode: Mode::Script,
        earlier: vec![],
        code: "print(1)".into(),
    });
    assert_eq!(out, Outcome::Abstain(Abstain::Off));
}

#[test]
fn a_missing_interpreter_is_a_start_error() {
    let cfg = Config {
        python: Some("/nonexistent/python3".into()),
        ..Config::default()
    };
    match Sandbox::start(&cfg) {
        Err(StartError::Interpreter(m)) => assert!(m.contains("/nonexistent/python3"), "{m}"),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("started without an interpreter"),
    }
}
