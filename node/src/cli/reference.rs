//! The CLI reference, `docs/cli.md`, generated from the clap definitions: every command's
//! long help, the root first, then each non-hidden subcommand depth first in declaration
//! order. The test fails when the file is stale; `TRUST_UPDATE_CLI_DOCS=1` rewrites it.

use clap::{Command, CommandFactory};

use super::Cli;

/// Where the reference lives, from the node crate's manifest directory.
const DOCS_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md");

/// The command that rewrites the file.
const REGENERATE: &str = "TRUST_UPDATE_CLI_DOCS=1 cargo test -p trust-node --lib cli::reference";

/// Help is laid out for this terminal width whatever the terminal running the test.
const WIDTH: usize = 100;

/// The whole reference, as `docs/cli.md` should hold it.
fn render() -> String {
    let mut root = Cli::command();
    // Builds the tree once: subcommands get their full names (`trust-node proof verify`)
    // in their usage lines, and the global flags.
    root.build();
    let mut out = format!(
        "<!-- Generated from the clap definitions by node/src/cli/reference.rs: do not edit. \
         Regenerate with `{REGENERATE}`. -->\n\
         # CLI reference\n\n\
         Every command's `--help`, as `trust-node` prints it. For an overview of the commands \
         with examples, see [Commands](commands.md).\n"
    );
    section(&mut out, &root, root.get_name());
    out
}

/// Appends `cmd`'s section, then its subcommands' sections.
fn section(out: &mut String, cmd: &Command, path: &str) {
    let help = cmd
        .clone()
        .term_width(WIDTH)
        .max_term_width(WIDTH)
        .render_long_help()
        .to_string();
    out.push_str(&format!("\n## {path}\n\n```text\n"));
    for line in help.trim_end().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    for sub in cmd.get_subcommands() {
        // `help` is clap's own subcommand: it prints the help rendered here already.
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        section(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

#[test]
fn docs_cli_md_is_the_clap_help_as_generated() {
    let generated = render();
    if std::env::var_os("TRUST_UPDATE_CLI_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(DOCS_PATH, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(DOCS_PATH).unwrap_or_default();
    if on_disk != generated {
        let first = on_disk
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| on_disk.lines().count().min(generated.lines().count()));
        panic!(
            "docs/cli.md is stale (first difference at line {}): run `{REGENERATE}` to regenerate",
            first + 1
        );
    }
}

#[test]
fn the_reference_reaches_nested_commands() {
    let generated = render();
    assert!(!generated.trim().is_empty());
    for heading in [
        "## trust-node\n",
        "## trust-node submit\n",
        "## trust-node proof verify\n",
    ] {
        assert!(
            generated.contains(heading),
            "{heading:?} not in the reference"
        );
    }
}

/// The anchor a heading gets on a rendered markdown page: lower case, punctuation dropped
/// (but `-` and `_`), spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every relative link of the README and the book reaches a file that exists (and a
/// heading of it, for a link with an anchor), and `docs/SUMMARY.md` lists every page.
#[test]
fn the_books_links_resolve_and_its_summary_lists_every_page() {
    use std::path::{Path, PathBuf};
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let docs = root.join("docs");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    let anchors = |p: &Path| -> Vec<String> {
        let mut fenced = false;
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| {
                if l.starts_with("```") {
                    fenced = !fenced;
                }
                !fenced
            })
            .filter_map(|l| l.strip_prefix('#'))
            .map(|h| slug(h.trim_start_matches('#')))
            .collect()
    };
    let mut broken = Vec::new();
    for file in pages.iter().chain([&root.join("README.md")]) {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for (_, rest) in text.match_indices("](").map(|(i, _)| text.split_at(i + 2)) {
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let to = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !to.exists() {
                broken.push(format!("{}: {target}", file.display()));
            } else if !anchor.is_empty()
                && to.extension().is_some_and(|x| x == "md")
                && !anchors(&to).iter().any(|a| a == anchor)
            {
                broken.push(format!("{}: {target} (no such heading)", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).unwrap();
    for page in &pages {
        let name = page.file_name().unwrap().to_str().unwrap();
        if name != "SUMMARY.md" {
            assert!(
                summary.contains(&format!("]({name})")),
                "docs/SUMMARY.md does not list {name}"
            );
        }
    }
}
