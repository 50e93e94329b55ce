//! The TRUST node: daemon, CLI and everything that does I/O.
//!
//! Subsystems live in one module each, with a `//!` note saying what they own. Pure
//! protocol logic lives in `trust-protocol` and `trust-contracts`; this crate wires it to
//! files, terminals, and (in later milestones) the network.
#![forbid(unsafe_code)]

pub mod api;
pub mod audit;
pub mod blobs;
pub mod chain;
pub mod chat;
pub mod cli;
pub mod computer;
pub mod config;
pub mod consensus;
pub mod daemon;
pub mod decompose;
pub mod feed;
pub mod keys;
pub mod ledger;
pub mod mempool;
pub mod metrics;
pub mod net;
pub mod proof;
pub mod query;
pub mod report;
pub mod submit;
pub mod tasks;
#[cfg(test)]
pub(crate) mod testchain;
pub mod view;
pub mod web;

/// Test support for reopening a sled database in the same process. After the last handle
/// is dropped, sled's I/O threads can hold the directory's file lock a moment longer (longer
/// on a busy machine), so a reopen right away may find it locked: tests wait, with a
/// deadline, for that lock and for nothing else.
#[cfg(test)]
pub(crate) mod reopen {
    use std::time::{Duration, Instant};

    /// Calls `open` until it does not fail on sled's file lock, for at most 10 s.
    pub(crate) fn when_unlocked<T, E: std::fmt::Display>(
        mut open: impl FnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = Instant::now();
        loop {
            match open() {
                Err(e)
                    if e.to_string().contains("could not acquire lock")
                        && start.elapsed() < Duration::from_secs(10) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                r => return r,
            }
        }
    }
}

#[cfg(test)]
mod layering {
    //! The crate's top-level modules must form a hierarchy: no two of them may import each
    //! other, directly or around a circle. This reads the source tree (every `crate::`
    //! path outside comments, strings and character literals, `use crate::{a, b::c}`
    //! groups included) and fails naming the circle and the files that close it.

    use std::{
        collections::{BTreeMap, BTreeSet},
        path::{Path, PathBuf},
    };

    /// Top-level module name -> its files (`x.rs`, and everything under `x/`).
    fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
        let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for entry in std::fs::read_dir(src).expect("read src") {
            let path = entry.expect("entry").path();
            let name = path
                .file_stem()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                let mut stack = vec![path];
                while let Some(dir) = stack.pop() {
                    for e in std::fs::read_dir(&dir).expect("read dir") {
                        let p = e.expect("entry").path();
                        if p.is_dir() {
                            stack.push(p);
                        } else if p.extension().is_some_and(|x| x == "rs") {
                            out.entry(name.clone()).or_default().push(p);
                        }
                    }
                }
            } else if path.extension().is_some_and(|x| x == "rs") && name != "lib" && name != "main"
            {
                out.entry(name).or_default().push(path);
            }
        }
        out
    }

    /// The code of a Rust file with comments, string and character literals blanked.
    fn code_only(text: &str) -> String {
        let cs: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(cs.len());
        let mut i = 0;
        while i < cs.len() {
            let c = cs[i];
            let next = cs.get(i + 1).copied();
            if c == '/' && next == Some('/') {
                while i < cs.len() && cs[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && next == Some('*') {
                let mut depth = 0;
                while i < cs.len() {
                    if cs[i] == '/' && cs.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if cs[i] == '*' && cs.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            } else if c == 'r' && matches!(next, Some('"') | Some('#')) && {
                let hashes = cs[i + 1..].iter().take_while(|&&h| h == '#').count();
                cs.get(i + 1 + hashes) == Some(&'"')
            } {
                let hashes = cs[i + 1..].iter().take_while(|&&h| h == '#').count();
                i += hashes + 2;
                loop {
                    if i >= cs.len() {
                        break;
                    }
                    if cs[i] == '"'
                        && cs[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == '#')
                            .count()
                            == hashes
                    {
                        i += hashes + 1;
                        break;
                    }
                    i += 1;
                }
                out.push_str("\"\"");
            } else if c == '"' {
                i += 1;
                while i < cs.len() && cs[i] != '"' {
                    i += if cs[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            } else if c == '\'' {
                // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let close = if next == Some('\\') {
                    cs[i + 2..]
                        .iter()
                        .position(|&x| x == '\'')
                        .map(|p| i + 2 + p)
                } else if cs.get(i + 2) == Some(&'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match close {
                    Some(end) => {
                        i = end + 1;
                        out.push_str("' '");
                    }
                    None => {
                        out.push(c);
                        i += 1;
                    }
                }
            } else {
                out.push(c);
                i += 1;
            }
        }
        out
    }

    /// The top-level modules named right after each `crate::` in `code`.
    fn crate_paths(code: &str) -> BTreeSet<String> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let mut out = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            if code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue; // `my_crate::`, not `crate::`
            }
            let rest = code[at + "crate::".len()..].trim_start();
            if let Some(group) = rest.strip_prefix('{') {
                // Names at the group's own depth: after `{` and after each `,`.
                let mut depth = 0usize;
                let mut start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => start = true,
                        c if start && depth == 0 && !c.is_whitespace() => {
                            start = false;
                            let name = ident(&group[i..]);
                            if !name.is_empty() {
                                out.insert(name);
                            }
                        }
                        _ => {}
                    }
                }
            } else {
                let name = ident(rest);
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
        out
    }

    #[test]
    fn the_parser_reads_groups_and_skips_comments_strings_and_chars() {
        let code = code_only(
            "use crate::{a::X, b::{c, d}, e};\n// crate::f\nlet s = \"crate::g\"; let q = '\"'; \
             let r = r#\"crate::h\"#; fn k<'a>(x: &'a str) { crate::i::j(); } other_crate::l();",
        );
        let got: Vec<String> = crate_paths(&code).into_iter().collect();
        assert_eq!(got, ["a", "b", "e", "i"]);
    }

    #[test]
    fn no_two_top_level_modules_import_each_other_around_a_circle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mods = modules(&src);
        assert!(
            mods.contains_key("api") && mods.contains_key("consensus"),
            "{mods:?}"
        );
        // module -> (module it imports -> files that import it)
        let mut edges: BTreeMap<&str, BTreeMap<&str, BTreeSet<String>>> = BTreeMap::new();
        for (name, files) in &mods {
            for f in files {
                let code = code_only(&std::fs::read_to_string(f).expect("read source"));
                assert!(
                    !code.contains("super::super::"),
                    "{}: reach other modules through `crate::`, so this check sees it",
                    f.display()
                );
                for dep in crate_paths(&code) {
                    if let Some((dep, _)) = mods.get_key_value(&dep)
                        && dep != name
                    {
                        let rel = f.strip_prefix(&src).unwrap_or(f).display().to_string();
                        edges
                            .entry(name.as_str())
                            .or_default()
                            .entry(dep.as_str())
                            .or_default()
                            .insert(rel);
                    }
                }
            }
        }
        // Depth-first search for a back edge; the path on the stack is the circle.
        fn visit<'a>(
            m: &'a str,
            edges: &BTreeMap<&'a str, BTreeMap<&'a str, BTreeSet<String>>>,
            stack: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> Option<Vec<&'a str>> {
            if let Some(pos) = stack.iter().position(|s| *s == m) {
                let mut circle = stack[pos..].to_vec();
                circle.push(m);
                return Some(circle);
            }
            if done.contains(m) {
                return None;
            }
            stack.push(m);
            for dep in edges.get(m).into_iter().flat_map(|d| d.keys()) {
                if let Some(c) = visit(dep, edges, stack, done) {
                    return Some(c);
                }
            }
            stack.pop();
            done.insert(m);
            None
        }
        let mut done = BTreeSet::new();
        for m in mods.keys() {
            if let Some(circle) = visit(m, &edges, &mut Vec::new(), &mut done) {
                let why: Vec<String> = circle
                    .windows(2)
                    .map(|w| format!("{} -> {} in {:?}", w[0], w[1], edges[w[0]][w[1]]))
                    .collect();
                panic!("modules import each other in a circle:\n{}", why.join("\n"));
            }
        }
    }
}
