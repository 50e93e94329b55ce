//! `trust-node simulate`, `simulate sweep` and `simulate adversaries`, run as the real
//! binary.

use std::{
    path::Path,
    process::{Command, Output},
};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .output()
        .expect("run trust-node")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// An SVG document, as the file starts, that renders: it is rasterised to PNG under
/// `<target>/tmp/plots/` (to be looked at), and nothing is drawn in the outermost pixel
/// columns, where a label cut off by the canvas edge would show.
fn assert_svg(p: &Path) {
    let text = read(p);
    assert!(
        text.starts_with("<svg") || text.starts_with("<?xml"),
        "{} is not an SVG: {:?}",
        p.display(),
        text.get(..60)
    );
    let mut opt = resvg::usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // The charts ask for the generic "sans-serif" family; map it to a font this machine has.
    let family = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
        .into_iter()
        .find(|f| {
            db.faces()
                .any(|face| face.families.iter().any(|(name, _)| name == f))
        })
        .expect("no sans-serif font to render the plots' text with (install fonts-dejavu-core)");
    db.set_sans_serif_family(family);
    let tree = resvg::usvg::Tree::from_str(&text, &opt)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", p.display()));
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("pixmap");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plots");
    std::fs::create_dir_all(&dir).unwrap();
    let name = p.file_stem().unwrap().to_string_lossy();
    pixmap
        .save_png(dir.join(format!("{name}.png")))
        .expect("write png");
    let (w, h) = (size.width(), size.height());
    let dark = |x: u32, y: u32| {
        let px = pixmap.pixel(x, y).expect("in bounds");
        u16::from(px.red()) + u16::from(px.green()) + u16::from(px.blue()) < 600
    };
    let edge: Vec<(u32, u32)> = (0..h)
        .flat_map(|y| [0, 1, 2, w - 3, w - 2, w - 1].map(|x| (x, y)))
        .filter(|&(x, y)| dark(x, y))
        .collect();
    assert!(
        edge.is_empty(),
        "{}: drawn at the canvas edge (cut off?): {:?}",
        p.display(),
        &edge[..edge.len().min(5)]
    );
    let ink = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| dark(x, y))
        .count();
    assert!(
        ink > 2_000,
        "{}: almost nothing drawn ({ink} px)",
        p.display()
    );
}

/// Exit code 2 and one `error: ...` line on stderr containing `needle`.
fn assert_usage_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    let line = err.trim_end();
    assert!(line.starts_with("error: ") && !line.contains('\n'), "{err}");
    assert!(line.contains(needle), "{needle:?} not in {err:?}");
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&read(&dir.join("summary.json"))).unwrap()
}

#[test]
fn a_run_is_reproducible_from_its_seed() {
    let t = tempfile::tempdir().unwrap();
    let (a, b, c) = (t.path().join("a"), t.path().join("b"), t.path().join("c"));
    for (dir, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        ok(&run(&[
            "simulate",
            "--seed",
            seed,
            "--sessions",
            "60",
            "--out",
            dir.to_str().unwrap(),
        ]));
    }
    let (sa, sb, sc) = (summary(&a), summary(&b), summary(&c));
    assert_eq!(sa["state_root"], sb["state_root"]);
    assert_ne!(sa["state_root"], sc["state_root"]);
    assert_eq!(sa["sessions_decided"], 60);
    for f in [
        "reputation.csv",
        "profit.csv",
        "reputation.svg",
        "profit.svg",
    ] {
        assert_eq!(
            read(&a.join(f)),
            read(&b.join(f)),
            "{f} differs between runs"
        );
    }
    let header = read(&a.join("reputation.csv"));
    let header = header.lines().next().unwrap();
    assert_eq!(
        header,
        "decided,height,honest,malicious,random,rubber-stamp,withholder,copy-cat"
    );
    assert_svg(&a.join("reputation.svg"));
    assert_svg(&a.join("profit.svg"));
    let strategies = sa["strategies"].as_array().unwrap();
    let honest = strategies
        .iter()
        .find(|s| s["strategy"] == "honest")
        .unwrap();
    assert!(honest["final_profit_mean"].as_f64().unwrap() > 0.0);
    assert!(honest["final_reputation_mean"].as_f64().is_some());
}

#[test]
fn a_sweep_reports_every_rate() {
    let t = tempfile::tempdir().unwrap();
    let o = run(&[
        "simulate",
        "sweep",
        "--corruption",
        "0,0.2",
        "--sessions",
        "40",
        "--out",
        t.path().to_str().unwrap(),
    ]);
    ok(&o);
    let csv = read(&t.path().join("sweep.csv"));
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let cols: Vec<&str> = row.split(',').collect();
        let net: f64 = cols[1].parse().unwrap();
        assert!((0.0..=1.0).contains(&net), "{row}");
    }
    assert_svg(&t.path().join("sweep.svg"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("L2 H4"));

    // Rate 0 leaves the population alone: the same run as plain `simulate`.
    let plain = t.path().join("plain");
    ok(&run(&[
        "simulate",
        "--sessions",
        "40",
        "--out",
        plain.to_str().unwrap(),
    ]));
    let root = summary(&plain)["state_root"].as_str().unwrap().to_owned();
    assert!(csv.lines().nth(1).unwrap().ends_with(&root), "{csv}");
}

#[test]
fn bad_input_is_refused_clearly() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    let o = run(&[
        "simulate",
        "sweep",
        "--corruption",
        "1.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "[0, 1]");

    let cfg = t.path().join("bad.toml");
    std::fs::write(&cfg, "sesions = 5\n").unwrap();
    let o = run(&[
        "simulate",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "sesions");

    // Nested tables and population entries do not deny unknown fields themselves.
    std::fs::write(
        &cfg,
        "[quorum]\nk = [3, 5, 5]\nextra_seats = 1\ntau = 600000\nbeta = 800000\ntauu = 1\n",
    )
    .unwrap();
    let o = run(&[
        "simulate",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "quorum.tauu");

    let o = run(&[
        "simulate",
        "--sessions",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "sessions");
    assert!(!out.exists(), "nothing is written for a refused run");
}

#[test]
fn a_config_file_sets_the_population() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("sim.toml");
    std::fs::write(
        &cfg,
        "sessions = 30\nseed = 3\n\n[[population]]\ntier = \"Llm\"\nstrategy = \"honest\"\ncount = 8\n\n[[population]]\ntier = \"Human\"\nstrategy = \"honest\"\ncount = 8\n",
    )
    .unwrap();
    let out = t.path().join("o");
    ok(&run(&[
        "simulate",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let s = summary(&out);
    assert_eq!(s["seed"], 3);
    assert_eq!(s["sessions_decided"], 30);
    assert_eq!(s["strategies"].as_array().unwrap().len(), 1);
}

#[test]
fn the_example_config_is_the_default_written_out() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim/paper.toml");
    let cfg: trust_contracts::sim::SimConfig = toml::from_str(&read(&path)).unwrap();
    assert_eq!(cfg, trust_contracts::sim::SimConfig::default());
}

/// `simulate adversaries` writes its report with every field the issue asks for, the same
/// bytes for the same seed, and exits 1 exactly when the report breaks an invariant,
/// naming it.
#[test]
fn adversaries_write_their_report_and_fail_on_a_broken_invariant() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a/report.json"), t.path().join("b.json"));
    let mut outs = Vec::new();
    for path in [&a, &b] {
        outs.push(run(&[
            "simulate",
            "adversaries",
            "--seed",
            "2",
            "--sessions",
            "60",
            "--json",
            path.to_str().unwrap(),
        ]));
    }
    assert_eq!(read(&a), read(&b), "same seed, same report");
    let r: Value = serde_json::from_str(&read(&a)).unwrap();
    assert_eq!(r["seed"], 2);
    // Sessions opened: the 60 asked for, less the openings the contract refused (an
    // adversary's probes, a required domain's pool below its floor), which are no sessions.
    let opened = r["sessions"].as_u64().unwrap();
    assert!((50..=60).contains(&opened), "{opened} of 60 opened");
    let count = |field: &str| {
        r[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field} is not a count: {}", r[field]))
    };
    for field in [
        "honest_stake_lost",
        "max_blocks_to_final",
        "honest_slashed",
        "wrong_pass",
        "order_dependent",
        "third_party_appeals_refused",
    ] {
        count(field);
    }
    assert!(count("max_blocks_to_final") > 0);
    let attacks = r["attacks"].as_object().unwrap();
    assert!(attacks.len() >= 21, "{attacks:?}");
    for name in [
        "extreme-terms",
        "below-floor-terms",
        "selective-honeypot",
        "false-honeypot",
        "private-domain",
        "late-expertise",
        "garbage-keys",
        "withheld-keys",
        "self-appeal",
        "appeal-spam",
        "starved-appeal-round",
        "reveal-order-sybils-first",
        "reveal-order-sybils-last",
        "seed-grind",
        "sybil-collusion",
    ] {
        assert!(attacks[name].as_u64().unwrap() > 0, "{name} never tried");
    }
    let mut broken: Vec<&str> = [
        "honest_slashed",
        "honest_flagged",
        "wrong_pass_final",
        "order_dependent",
        "third_party_appeals_refused",
        "honest_sessions_refused",
    ]
    .into_iter()
    .filter(|f| count(f) > 0)
    .collect();
    if attacks.values().any(|n| n.as_u64() == Some(0)) {
        broken.push("never tried");
    }
    let o = &outs[0];
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stdout.contains("order_dependent"), "{stdout}");
    if broken.is_empty() {
        ok(o);
        assert!(stdout.contains("every invariant holds"), "{stdout}");
    } else {
        assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
        for name in broken {
            assert!(stderr.contains(name), "{name} not named: {stderr}");
        }
    }
}

#[test]
fn adversaries_refuse_bad_settings_clearly() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let o = run(&[
        "simulate",
        "adversaries",
        "--sessions",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "sessions");
    // Sybils holding a third of a tier's stake are not a minority.
    let cfg = t.path().join("adv.toml");
    std::fs::write(&cfg, "sybils_per_tier = 12\nsybil_stake = 1000\n").unwrap();
    let o = run(&[
        "simulate",
        "adversaries",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "under a third");
    std::fs::write(&cfg, "sybil_stak = 5\n").unwrap();
    let o = run(&[
        "simulate",
        "adversaries",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_usage_error(&o, "sybil_stak");
    assert!(!json.exists(), "nothing is written for a refused run");
}
