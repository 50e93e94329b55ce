//! Runs one program in the sandbox and prints the outcome: `cargo run -p trust-sandbox
//! --example run -- script|cell|raw 'print(1)' [earlier cells...]` (`raw`: a script
//! without the driver's in-process hooks, the operating-system layer alone).

use trust_sandbox::{Config, Execute, Mode, Request, Sandbox};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(code)) = (args.first(), args.get(1)) else {
        eprintln!("usage: run script|cell|raw CODE [EARLIER...]");
        std::process::exit(2);
    };
    let sandbox = match Sandbox::start(&Config::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!(
        "interpreter: {} (IPython: {})",
        sandbox.interpreter(),
        sandbox.has_ipython()
    );
    let req = Request {
        mode: if mode == "cell" {
            Mode::Cell
        } else {
            Mode::Script
        },
        earlier: args.get(2..).unwrap_or_default().to_vec(),
        code: code.clone(),
    };
    let out = if mode == "raw" {
        sandbox.execute_without_hooks(&req)
    } else {
        sandbox.execute(&req)
    };
    println!("{out:?}");
}
