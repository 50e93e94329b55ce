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

/// One way a documented command line disagrees with the binary.
fn drift_of(root: &Command, line: &str) -> Option<String> {
    let mut cmd = root;
    let mut words = line.split_whitespace().peekable();
    // The subcommands the line names (`generate|show`: each must be one).
    while let Some(w) = words.peek() {
        if w.starts_with('<') {
            // A placeholder (`<command>`): nothing more to check.
            return None;
        }
        let mut alternatives = w.split('|').map(|a| cmd.find_subcommand(a));
        match alternatives.next().flatten() {
            Some(sub) => {
                if alternatives.any(|a| a.is_none()) {
                    return Some(format!(
                        "`{}` has no subcommand among {w}",
                        cmd.get_bin_name().unwrap_or(cmd.get_name())
                    ));
                }
                cmd = sub;
                words.next();
            }
            None => break,
        }
    }
    let mut depth = 0usize;
    let mut positionals = 0usize;
    while let Some(raw) = words.next() {
        let opens = raw.matches(['[', '(']).count();
        let closes = raw.matches([']', ')']).count();
        let word = raw.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ',' | ';' | '`' | '.'));
        let inside = depth > 0;
        depth = depth.saturating_add(opens).saturating_sub(closes);
        // The end of the command: a pipe, a redirection, a comment, another command.
        if !inside
            && (matches!(raw, "|" | "||" | "&&" | "&" | ";" | "#")
                || raw.starts_with('>')
                || raw.starts_with("2>")
                || raw.starts_with('<') && !raw.ends_with('>'))
        {
            break;
        }
        let last = !inside && raw.ends_with(';');
        if word.is_empty() || word == "|" || word == "..." || word.starts_with('<') {
            continue;
        }
        if last {
            // `... --flag; echo $?`: the command ends with this word.
            return drift_of_flag(cmd, word);
        }
        if let Some(long) = word.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if matches!(name, "help" | "version") {
                continue;
            }
            match cmd.get_arguments().find(|a| a.get_long() == Some(name)) {
                None => {
                    return Some(format!(
                        "`{}` has no flag --{name}",
                        cmd.get_bin_name().unwrap_or(cmd.get_name())
                    ));
                }
                Some(a) => {
                    // A flag that takes a value eats the next word (unless given with `=`).
                    if a.get_action().takes_values() && !long.contains('=') {
                        if let Some(v) = words.peek() {
                            depth = depth
                                .saturating_add(v.matches(['[', '(']).count())
                                .saturating_sub(v.matches([']', ')']).count());
                        }
                        words.next();
                    }
                }
            }
        } else if let Some(short) = word.strip_prefix('-').filter(|s| s.len() == 1) {
            let c = short.chars().next().unwrap_or('?');
            if c != 'h' && c != 'V' && !cmd.get_arguments().any(|a| a.get_short() == Some(c)) {
                return Some(format!(
                    "`{}` has no flag -{c}",
                    cmd.get_bin_name().unwrap_or(cmd.get_name())
                ));
            }
            if let Some(a) = cmd.get_arguments().find(|a| a.get_short() == Some(c))
                && a.get_action().takes_values()
            {
                words.next();
            }
        } else {
            if cmd.has_subcommands() && positionals == 0 {
                return Some(format!(
                    "`{}` has no subcommand {word}",
                    cmd.get_bin_name().unwrap_or(cmd.get_name())
                ));
            }
            positionals += 1;
            let takes = cmd.get_positionals().count();
            let unbounded = cmd
                .get_positionals()
                .any(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1));
            if !unbounded && positionals > takes {
                return Some(format!(
                    "`{}` takes {takes} argument(s), the line gives {word}",
                    cmd.get_bin_name().unwrap_or(cmd.get_name())
                ));
            }
        }
    }
    None
}

/// [`drift_of`] for a last word on its own.
fn drift_of_flag(cmd: &Command, word: &str) -> Option<String> {
    let name = word.strip_prefix("--")?.split('=').next()?;
    (!matches!(name, "help" | "version")
        && !cmd.get_arguments().any(|a| a.get_long() == Some(name)))
    .then(|| {
        format!(
            "`{}` has no flag --{name}",
            cmd.get_bin_name().unwrap_or(cmd.get_name())
        )
    })
}

/// Every `trust-node ...` command line in `text`: each line of a fenced code block (lines
/// ending in `\` joined to the next) and each inline code span; what follows the program's
/// name, with the line number.
fn documented_commands(text: &str) -> Vec<(usize, String)> {
    let mut spans: Vec<(usize, String)> = Vec::new();
    let mut fenced = false;
    let mut carried = String::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            carried.push_str(line.trim_end_matches('\\'));
            carried.push(' ');
            if !line.ends_with('\\') {
                spans.push((n + 1, std::mem::take(&mut carried)));
            }
        } else {
            // A table's cells escape `|`.
            let line = line.replace("\\|", "|");
            for code in line.split('`').skip(1).step_by(2) {
                spans.push((n + 1, code.to_string()));
            }
        }
    }
    let mut out = Vec::new();
    for (n, span) in spans {
        for (i, _) in span.match_indices("trust-node ") {
            // Where a command starts: the span's start, a path, a prompt, after a shell
            // operator; `trust-node` inside a sentence is the program's name.
            let before = span[..i].trim_end();
            let at_word = before.is_empty()
                || span[..i].ends_with('/')
                || [
                    "$",
                    "&&",
                    ";",
                    "|",
                    "(",
                    "$(",
                    "do",
                    "then",
                    "sudo -u trust",
                    "=",
                ]
                .iter()
                .any(|p| before.ends_with(p));
            let a_package = ["-p", "--bin", "--package"]
                .iter()
                .any(|p| before.ends_with(p));
            if at_word && !a_package {
                out.push((n, span[i + "trust-node ".len()..].to_string()));
            }
        }
    }
    out
}

/// Every command line the book and the README show (`trust-node ...` in a code block or an
/// inline code span) names commands, flags and arguments the binary has: a renamed or
/// removed flag fails here, with the page and line.
#[test]
fn the_books_command_lines_match_the_binary() {
    use std::path::Path;
    let root_dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut cli = Cli::command();
    cli.build();
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(root_dir.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        // The reference is generated from the binary itself.
        .filter(|p| !p.ends_with("cli.md"))
        .collect();
    pages.sort();
    pages.push(root_dir.join("README.md"));
    let mut drift = Vec::new();
    let mut checked = 0usize;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (n, line) in documented_commands(&text) {
            checked += 1;
            if let Some(why) = drift_of(&cli, &line) {
                let name = page.file_name().unwrap().to_string_lossy();
                drift.push(format!("{name}:{n}: trust-node {}\n    {why}", line.trim()));
            }
        }
    }
    assert!(checked > 50, "only {checked} command lines found");
    assert!(
        drift.is_empty(),
        "documented commands that the binary does not take:\n{}",
        drift.join("\n")
    );
}

/// The check itself: it catches a flag that is not there, an argument a command does not
/// take, and an unknown subcommand, and passes what the binary takes.
#[test]
fn the_drift_check_fails_on_what_the_binary_does_not_take() {
    let mut cli = Cli::command();
    cli.build();
    for bad in [
        "auditor history ID",
        "auditor history [ID] [--json | --csv]",
        "auditor status --acount X",
        "auditor registr --tier computer",
        "query SESSION --no-such-flag",
    ] {
        assert!(drift_of(&cli, bad).is_some(), "{bad} passed");
    }
    for good in [
        "auditor history [--account ID] [--json | --csv] [--limit N]",
        "query SESSION --json",
        "run --home /tmp/x --state-sync 127.0.0.1:26602 2> log &",
        "transfer ACCOUNT 100 --home DIR | tail -1",
        "init --home DIR --genesis g.json --bootstrap A --bootstrap B",
    ] {
        assert_eq!(drift_of(&cli, good), None, "{good}");
    }
    assert_eq!(
        documented_commands(
            "x `trust-node auditor status` y\n```sh\ncargo build -p trust-node\ntarget/release/trust-node run \\\n  --home D\n```\n"
        ),
        vec![
            (1, "auditor status".to_string()),
            (5, "run    --home D ".to_string())
        ]
    );
}
