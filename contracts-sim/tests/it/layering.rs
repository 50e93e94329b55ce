//! The module graph of `src/` stays a hierarchy: no top-level module of the crate names
//! another that (directly or around a circle) names it back.
//!
//! Read from the sources: for every `.rs` file under `src/` (the `sim` module included:
//! nothing imports it back, so it sits on top), each `crate::x` and `super::x` path that
//! leaves the file's own top-level module is an edge to `x`, or, when `x` is an item the
//! crate root re-exports (`crate::Contract`), to the module it is re-exported from.
//! Comments, string and character literals are blanked first, so that doc links such as
//! [`crate::commitment`] are not edges. `lib.rs` itself, the root, is no node.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// Every `.rs` file under `dir`, in path order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to `src/`: `lib.rs` is `[]`, `a/mod.rs` and `a.rs`
/// are `[a]`, `a/b.rs` is `[a, b]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// `src` with comments, string literals (plain, byte and raw) and character literals
/// replaced by spaces; newlines are kept, so line numbers still hold.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let ch = at(i);
        if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && at(i) != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0usize;
            loop {
                if i >= c.len() {
                    break;
                }
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(at(i)));
                    i += 1;
                }
            }
        } else if ch == 'r'
            && (i == 0 || !is_ident(at(i - 1)) || (at(i - 1) == 'b' && !is_ident(at(i - 2))))
            && matches!(at(i + 1), '"' | '#')
            && {
                let mut j = i + 1;
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            }
        {
            // A raw string: `r#"..."#`, closed by a quote and as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < c.len() && !(at(j) == '"' && (1..=hashes).all(|h| at(j + h) == '#')) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            out.extend(c.get(i..end).unwrap_or_default().iter().map(|&x| blank(x)));
            i = end;
        } else if ch == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && at(i) != '"' {
                if at(i) == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(blank(at(i)));
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if ch == '\'' && at(i + 1) == '\\' {
            // An escaped character literal: `'\''`, `'\n'`, `'\u{1F600}'`.
            let mut j = i + 3;
            while j < c.len() && at(j) != '\'' {
                j += 1;
            }
            let end = (j + 1).min(c.len());
            out.extend(std::iter::repeat_n(' ', end - i));
            i = end;
        } else if ch == '\'' && at(i + 2) == '\'' {
            // A character literal (`'"'`, `'{'`); a lifetime has no closing quote there.
            out.push_str("   ");
            i += 3;
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// A token of stripped source: an identifier or one punctuation character (`::` is two
/// `:`), with its line.
fn tokens(src: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = src.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\n' {
            line += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let mut word = String::from(ch);
            while let Some(&n) = chars.peek() {
                if n.is_alphanumeric() || n == '_' {
                    word.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((word, line));
        } else if ch.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_alphanumeric() || *n == '_')
            {
                chars.next();
            }
        } else if !ch.is_whitespace() {
            out.push((ch.to_string(), line));
        }
    }
    out
}

/// The names a path rooted at the crate root names at its first step: `x` of
/// `crate::x::...`, or each `x` of `crate::{x::..., y, z::{...}}`. `i` is the index of the
/// token after the root's `::`.
fn first_steps(toks: &[(String, usize)], i: usize) -> Vec<String> {
    let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
    if tok(i) == "*" {
        panic!(
            "a glob import of the crate root (line {}) hides which modules it reaches",
            toks.get(i).map_or(0, |t| t.1)
        );
    }
    if tok(i) != "{" {
        return vec![tok(i).to_owned()];
    }
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut expect_name = true;
    let mut k = i;
    while k < toks.len() {
        match tok(k) {
            "{" => {
                depth += 1;
                expect_name = depth == 1;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => expect_name = true,
            "*" if depth == 1 => panic!(
                "a glob import of the crate root (line {}) hides which modules it reaches",
                toks.get(k).map_or(0, |t| t.1)
            ),
            name if expect_name && depth == 1 => {
                names.push(name.to_owned());
                expect_name = false;
            }
            _ => {}
        }
        k += 1;
    }
    names
}

/// Item name -> the top-level module `lib.rs` re-exports it from (`pub use x::{A, B}`).
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let stripped = strip(lib);
    let toks = tokens(&stripped);
    let mut map = BTreeMap::new();
    let mut k = 0;
    while k < toks.len() {
        if toks.get(k).is_some_and(|t| t.0 == "use") {
            let Some(first) = toks.get(k + 1).map(|t| t.0.clone()) else {
                break;
            };
            let mut j = k + 2;
            while let Some((tok, _)) = toks.get(j) {
                if tok == ";" {
                    break;
                }
                let ident = tok.starts_with(|ch: char| ch.is_alphabetic() || ch == '_');
                if modules.contains(&first)
                    && ident
                    && !["self", "super", "crate", "as"].contains(&tok.as_str())
                {
                    map.insert(tok.clone(), first.clone());
                }
                j += 1;
            }
            k = j;
        }
        k += 1;
    }
    map
}

/// For each top-level module, the other top-level modules it names, each with the first
/// place (file:line) it does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The graph of the crate under `src/`.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src").to_path_buf();
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
            (rel, text)
        })
        .collect();
    graph_of(&sources)
}

/// The graph of a crate given as its files (paths relative to `src/`, `lib.rs` among them).
fn graph_of(sources: &[(PathBuf, String)]) -> Graph {
    let modules: BTreeSet<String> = sources
        .iter()
        .filter_map(|(rel, _)| module_path(rel).first().cloned())
        .collect();
    let lib = sources
        .iter()
        .find(|(rel, _)| rel == Path::new("lib.rs"))
        .map_or("", |(_, text)| text.as_str());
    let reexported = reexports(lib, &modules);
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeMap::new()))
        .collect();
    for (rel, text) in sources {
        let path = module_path(rel);
        let Some(top) = path.first() else {
            continue; // lib.rs: the root may name every module.
        };
        let toks = tokens(&strip(text));
        let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
        let is_sep = |k: usize| tok(k) == ":" && tok(k + 1) == ":";
        // Inline modules (`mod tests { ... }`) deepen `super::`: the brace depth each opened at.
        let mut inline: Vec<usize> = Vec::new();
        let mut braces = 0usize;
        let mut k = 0;
        while k < toks.len() {
            match tok(k) {
                "{" => braces += 1,
                "}" => {
                    braces = braces.saturating_sub(1);
                    if inline.last() == Some(&braces) {
                        inline.pop();
                    }
                }
                "mod" if tok(k + 2) == "{" => {
                    inline.push(braces);
                    braces += 1;
                    k += 3;
                    continue;
                }
                _ => {}
            }
            // Where a `crate::` or `super::...::` path starts from, as a depth below the root.
            let (root_depth, next) = if tok(k) == "crate" && is_sep(k + 1) {
                (Some(0), k + 3)
            } else if tok(k) == "super" && is_sep(k + 1) && (k < 2 || !is_sep(k - 2)) {
                let mut supers = 0;
                let mut j = k;
                while tok(j) == "super" && is_sep(j + 1) {
                    supers += 1;
                    j += 3;
                }
                let depth = path.len() + inline.len();
                (depth.checked_sub(supers), j)
            } else {
                (None, k + 1)
            };
            // Paths rooted below the crate root stay inside the file's top-level module.
            if root_depth == Some(0) {
                let line = toks.get(k).map_or(0, |t| t.1);
                for name in first_steps(&toks, next) {
                    let target = if modules.contains(&name) {
                        Some(name)
                    } else {
                        reexported.get(&name).cloned()
                    };
                    if let Some(target) = target.filter(|t| t != top)
                        && let Some(edges) = graph.get_mut(top)
                    {
                        edges
                            .entry(target)
                            .or_insert_with(|| format!("{}:{line}", rel.display()));
                    }
                }
            }
            k = next;
        }
    }
    graph
}

/// The modules `from` reaches along the graph's edges (itself only through a circle).
fn reach(graph: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = graph
        .get(from)
        .into_iter()
        .flat_map(|e| e.keys())
        .map(String::as_str)
        .collect();
    while let Some(m) = todo.pop() {
        if seen.insert(m.to_owned()) {
            todo.extend(
                graph
                    .get(m)
                    .into_iter()
                    .flat_map(|e| e.keys())
                    .map(String::as_str),
            );
        }
    }
    seen
}

/// A shortest circle through `start` (every module on it in `within`), as the list of its
/// modules from `start` back to it.
fn circle(graph: &Graph, start: &str, within: &BTreeSet<String>) -> Vec<String> {
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_owned()]);
    while let Some(m) = queue.pop_front() {
        for next in graph.get(&m).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut path = vec![start.to_owned(), m.clone()];
                let mut at = m.clone();
                while let Some(p) = prev.get(&at) {
                    path.push(p.clone());
                    at = p.clone();
                }
                path.reverse();
                return path;
            }
            if within.contains(next) && next != start && !prev.contains_key(next) {
                prev.insert(next.clone(), m.clone());
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

/// Every circle of the graph, one message per group of modules caught in one.
fn circles(graph: &Graph) -> Vec<String> {
    let reached: BTreeMap<&str, BTreeSet<String>> = graph
        .keys()
        .map(|m| (m.as_str(), reach(graph, m)))
        .collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for (m, from_m) in &reached {
        if done.contains(*m) || !from_m.contains(*m) {
            continue;
        }
        let group: BTreeSet<String> = from_m
            .iter()
            .filter(|o| reached.get(o.as_str()).is_some_and(|r| r.contains(*m)))
            .cloned()
            .collect();
        done.extend(group.iter().cloned());
        let path = circle(graph, m, &group);
        let steps: Vec<String> = path
            .windows(2)
            .filter_map(|w| match w {
                [a, b] => Some(format!(
                    "  {a} -> {b} ({})",
                    graph
                        .get(a)
                        .and_then(|e| e.get(b))
                        .map_or("?", String::as_str)
                )),
                _ => None,
            })
            .collect();
        let inside: Vec<String> = group
            .iter()
            .flat_map(|a| {
                graph
                    .get(a)
                    .into_iter()
                    .flat_map(|e| e.iter())
                    .filter(|(b, _)| group.contains(*b))
                    .map(move |(b, at)| format!("  {a} -> {b} ({at})"))
            })
            .collect();
        found.push(format!(
            "modules {{{}}} import each other around a circle: {}\n{}\nevery edge among them:\n{}",
            group.iter().cloned().collect::<Vec<_>>().join(", "),
            path.join(" -> "),
            steps.join("\n"),
            inside.join("\n"),
        ));
    }
    found
}

#[test]
fn module_graph_is_a_hierarchy() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "the module graph of contracts-sim/src has circles:\n{}",
        found.join("\n\n")
    );
}

/// The reader sees through comments and literals, follows `super::` out of files and
/// inline modules, reads `crate::{...}` groups and resolves the root's re-exports; and a
/// circle is reported with its edges.
#[test]
fn reader_finds_real_edges_only() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_owned());
    let sources = [
        file(
            "lib.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\nmod f;\npub use d::{Thing, inner::{Other as Renamed}};\n",
        ),
        file(
            "a.rs",
            "//! [`crate::f`] and `crate::f`\n\
             use crate::{c::X, Renamed, b::{self, Y}};\n\
             /* crate::f */ const S: &str = \"crate::f \\\" crate::f\";\n\
             const R: &str = r#\"crate::f \" crate::f\"#; // crate::f\n\
             const Q: char = '\"'; const P: char = '\\''; fn g<'x>(_: &'x str) {}\n\
             mod tests { use super::*; use super::super::e::Z; }\n",
        ),
        file("b.rs", "fn f() -> crate::Thing { loop {} }\n"),
        file("c/mod.rs", "mod inner;\nuse super::e;\n"),
        file("c/inner.rs", "use super::super::f::W;\nuse super::Q;\n"),
        file("d.rs", "use crate::b;\n"),
        file("e.rs", "use crate::e::x;\n"),
        file("f.rs", "/* nothing */\n"),
    ];
    let graph = graph_of(&sources);
    let edges = |m: &str| -> Vec<&str> {
        graph
            .get(m)
            .into_iter()
            .flat_map(|e| e.keys().map(String::as_str))
            .collect()
    };
    assert_eq!(edges("a"), ["b", "c", "d", "e"]);
    assert_eq!(
        graph.get("a").and_then(|e| e.get("e")).map(String::as_str),
        Some("a.rs:6")
    );
    assert_eq!(edges("b"), ["d"]);
    assert_eq!(edges("c"), ["e", "f"]);
    assert_eq!(edges("d"), ["b"]);
    assert!(edges("e").is_empty());
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    let message = found.first().map_or("", String::as_str);
    assert!(
        message.starts_with("modules {b, d} import each other around a circle: b -> d -> b"),
        "{message}"
    );
    assert!(message.contains("b -> d (b.rs:1)"), "{message}");
}
