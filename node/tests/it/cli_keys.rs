//! `trust-node keys generate|show`.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .env_remove("TRUST_HOME")
        .output()
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn generate_show_and_refuse_to_overwrite() {
    let home = tempfile::tempdir().expect("tempdir");
    let h = home.path().to_str().expect("path");
    let (code, generated, err) = run(&["keys", "generate", "--home", h, "--json"]);
    assert_eq!(code, 0, "{err}");
    let (code, shown, _) = run(&["keys", "show", "--home", h, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(generated, shown);
    let v: serde_json::Value = serde_json::from_str(&shown).expect("json");
    assert_eq!(v["account"].as_str().map(str::len), Some(64));
    let (code, _, err) = run(&["keys", "generate", "--home", h]);
    assert_eq!(code, 1);
    assert!(err.contains("refusing to overwrite"), "{err}");
    let (code2, shown2, _) = run(&["keys", "show", "--home", h, "--json"]);
    assert_eq!((code2, shown2), (0, shown), "keys must be unchanged");
}

#[test]
fn show_without_keys_says_how_to_create_them() {
    let home = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = run(&[
        "keys",
        "show",
        "--home",
        home.path().to_str().expect("path"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("trust-node keys generate"), "{err}");
}
