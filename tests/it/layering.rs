//! The module graph of every crate of the workspace stays a hierarchy: no top-level module
//! of a crate names another that (directly or around a circle) names it back; and so does
//! its file graph: no file names another that names it back.
//!
//! What Cargo already says is not checked here: which crate may use which (the pure
//! crates, `trust-protocol`, `trust-contracts` and `trust-judging`, have no runtime,
//! network or storage crate among their dependencies, so they cannot import one). What it
//! cannot say is the order of the modules inside a crate.
//!
//! Read from the sources: for every `.rs` file under a crate's `src/`, without its test
//! code (items under `#[cfg(test)]` and the module files they declare: a test may reach
//! across the crate for its fixtures), each `crate::x` and `super::x` path that
//! leaves the file's own top-level module is an edge to `x`, or, when `x` is an item the
//! crate root re-exports (`crate::Contract`), to the module it is re-exported from.
//! Comments, string and character literals are blanked first, so that doc links such as
//! [`crate::commitment`] are not edges. `lib.rs` itself, the root, is no node.
//!
//! The file graph has every file (but test code) as a node, `lib.rs` among them. Each
//! path a file writes (in a `use`, or in code: `crate::a::f`, `super::X`, `child::g`, or
//! through a name a `use` bound) is followed through inline modules and re-exports to the
//! file that defines the item: an edge to that file, unless it is the file of one of the
//! modules that enclose this one (`super`, ..., `lib.rs`), whose items are in scope in the
//! modules inside them. A path through another file's `use` of an item of another crate
//! needs that file, and is an edge to it; a glob `use` is an edge to its module's file.
//! Method calls are no paths: the files of one type's `impl` blocks are not tied by them.

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
type Token = (String, usize);

fn tokens(src: &str) -> Vec<Token> {
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

/// Whether `toks[k..]` opens a `#[cfg(test)]` attribute (also `cfg(all(test, ...))`), and
/// the index just past its `]`.
fn test_attribute(toks: &[Token], k: usize) -> Option<usize> {
    let tok = |i: usize| toks.get(i).map_or("", |t| t.0.as_str());
    if tok(k) != "#" || tok(k + 1) != "[" || tok(k + 2) != "cfg" || tok(k + 3) != "(" {
        return None;
    }
    let mut depth = 0usize;
    let mut test = false;
    let mut i = k + 1;
    while i < toks.len() {
        match tok(i) {
            "[" | "(" => depth += 1,
            "]" | ")" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return test.then_some(i + 1);
                }
            }
            "test" if tok(i - 1) == "(" || tok(i - 1) == "," => test = true,
            "not" => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// `toks` without test code: each item under `#[cfg(test)]` (an inline module, a
/// function, a `use`) is dropped, and the names of the test-only module files it declares
/// (`#[cfg(test)] mod tests;`) are returned beside.
fn without_tests(toks: Vec<Token>) -> (Vec<Token>, Vec<String>) {
    let mut kept = Vec::with_capacity(toks.len());
    let mut test_files = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let Some(mut i) = test_attribute(&toks, k) else {
            kept.push(toks[k].clone());
            k += 1;
            continue;
        };
        // Further attributes of the same item.
        while toks.get(i).is_some_and(|t| t.0 == "#") {
            let mut depth = 0usize;
            i += 1;
            while let Some(t) = toks.get(i) {
                i += 1;
                match t.0.as_str() {
                    "[" => depth += 1,
                    "]" => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        // The item: up to its `;`, or through its braces.
        let mut depth = 0usize;
        let start = i;
        while let Some(t) = toks.get(i) {
            i += 1;
            match t.0.as_str() {
                ";" if depth == 0 => {
                    let words: Vec<&str> = toks[start..i].iter().map(|t| t.0.as_str()).collect();
                    if let Some(m) = words.iter().position(|w| *w == "mod") {
                        test_files.extend(words.get(m + 1).map(|n| (*n).to_owned()));
                    }
                    break;
                }
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        k = i;
    }
    (kept, test_files)
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

/// The files of the crate under `src/`: each path relative to `src/`, with its text.
fn sources(src: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src").to_path_buf();
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
            (rel, text)
        })
        .collect()
}

/// The graph of the crate under `src/`.
fn module_graph(src: &Path) -> Graph {
    graph_of(&sources(src))
}

/// Each file of `sources` that is not test code, as its path, its module path and its
/// tokens without test code; the test-only module files (and the files beneath them) are
/// left out.
fn code(sources: &[(PathBuf, String)]) -> Vec<(&Path, Vec<String>, Vec<Token>)> {
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    let read: Vec<(&Path, Vec<String>, Vec<Token>)> = sources
        .iter()
        .map(|(rel, text)| {
            let path = module_path(rel);
            let (toks, tests) = without_tests(tokens(&strip(text)));
            for t in tests {
                let mut child = path.clone();
                child.push(t);
                test_only.insert(child);
            }
            (rel.as_path(), path, toks)
        })
        .collect();
    read.into_iter()
        .filter(|(_, path, _)| !test_only.iter().any(|t| path.starts_with(t)))
        .collect()
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
    for (rel, path, toks) in code(sources) {
        let Some(top) = path.first() else {
            continue; // lib.rs: the root may name every module.
        };
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

/// Every circle of the graph, one message per group of nodes caught in one; `what` names
/// the nodes (`modules`, `files`).
fn circles(graph: &Graph, what: &str) -> Vec<String> {
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
            "{what} {{{}}} import each other around a circle: {}\n{}\nevery edge among them:\n{}",
            group.iter().cloned().collect::<Vec<_>>().join(", "),
            path.join(" -> "),
            steps.join("\n"),
            inside.join("\n"),
        ));
    }
    found
}

/// A `use` of a file: the module it stands in (the file's own, or an inline module's), the
/// path it imports (its first step as written: `crate`, `super`, `self` or a name) and the
/// name it binds (`None` for a glob), with its line.
#[derive(Debug)]
struct Use {
    scope: Vec<String>,
    path: Vec<String>,
    binds: Option<String>,
    line: usize,
}

/// Whether a token is an identifier (keywords such as `crate` and `self` among them).
fn is_ident(tok: &str) -> bool {
    tok.starts_with(|ch: char| ch.is_alphabetic() || ch == '_')
}

/// The imports of a use tree starting at `toks[*k]`, each as its path and the name it
/// binds, prefixed with `prefix`; `*k` ends on the token past the tree.
fn use_tree(
    toks: &[Token],
    k: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let tok = |i: usize| toks.get(i).map_or("", |t| t.0.as_str());
    let mut path = prefix.to_vec();
    loop {
        match tok(*k) {
            "{" => {
                *k += 1;
                while !matches!(tok(*k), "}" | "") {
                    use_tree(toks, k, &path, out);
                    if tok(*k) == "," {
                        *k += 1;
                    }
                }
                *k += 1;
                return;
            }
            "*" => {
                *k += 1;
                out.push((path, None));
                return;
            }
            name if is_ident(name) => {
                *k += 1;
                if tok(*k) == ":" && tok(*k + 1) == ":" {
                    path.push(name.to_owned());
                    *k += 2;
                    continue;
                }
                let mut binds = name.to_owned();
                if name == "self" {
                    binds = path.last().cloned().unwrap_or_default();
                } else {
                    path.push(name.to_owned());
                }
                if tok(*k) == "as" {
                    binds = tok(*k + 1).to_owned();
                    *k += 2;
                }
                out.push((path, Some(binds)));
                return;
            }
            // `use ::x`, or what this reader does not know: nothing of the crate.
            _ => {
                while !matches!(tok(*k), "," | "}" | ";" | "") {
                    *k += 1;
                }
                return;
            }
        }
    }
}

/// What one file declares and names, each with the module it stands in.
#[derive(Debug, Default)]
struct Contents {
    /// The inline modules (`mod x { ... }`) it declares, as their module paths.
    inline: Vec<Vec<String>>,
    uses: Vec<Use>,
    /// Every other path of two steps or more (`crate::a::f`, `super::X`, `child::g`),
    /// as its module, its steps and its line.
    paths: Vec<(Vec<String>, Vec<String>, usize)>,
}

/// The contents of a file whose module path is `module`, read from its tokens.
fn contents(module: &[String], toks: &[Token]) -> Contents {
    let tok = |i: usize| toks.get(i).map_or("", |t| t.0.as_str());
    let line = |i: usize| toks.get(i).map_or(0, |t| t.1);
    let is_sep = |i: usize| tok(i) == ":" && tok(i + 1) == ":";
    let mut out = Contents::default();
    // Inline modules open: their names, each with the brace depth it opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let scope = |inline: &[(String, usize)]| -> Vec<String> {
        module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect()
    };
    let mut braces = 0usize;
    let mut k = 0;
    while k < toks.len() {
        match tok(k) {
            "{" => braces += 1,
            "}" => {
                braces = braces.saturating_sub(1);
                if inline.last().is_some_and(|(_, depth)| *depth == braces) {
                    inline.pop();
                }
            }
            "mod" if is_ident(tok(k + 1)) && tok(k + 2) == "{" => {
                inline.push((tok(k + 1).to_owned(), braces));
                out.inline.push(scope(&inline));
                braces += 1;
                k += 3;
                continue;
            }
            "use" => {
                let mut trees = Vec::new();
                let mut j = k + 1;
                use_tree(toks, &mut j, &[], &mut trees);
                for (path, binds) in trees {
                    out.uses.push(Use {
                        scope: scope(&inline),
                        path,
                        binds,
                        line: line(k),
                    });
                }
                k = j;
                continue;
            }
            first if is_ident(first) && is_sep(k + 1) && !(k >= 2 && is_sep(k - 2)) => {
                let mut steps = vec![first.to_owned()];
                let mut j = k + 3;
                while is_ident(tok(j)) {
                    steps.push(tok(j).to_owned());
                    j += 1;
                    if !is_sep(j) {
                        break;
                    }
                    j += 2;
                }
                out.paths.push((scope(&inline), steps, line(k)));
                k = j;
                continue;
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// What a path names: a module, or an item of the crate as the file that defines it and
/// the item's name there.
#[derive(Debug)]
enum Named {
    Module(Vec<String>),
    Item(usize, String),
}

/// A crate read for its file graph.
struct Crate<'a> {
    /// Each file's path relative to `src/` and module path.
    files: Vec<(&'a Path, Vec<String>)>,
    /// Every module, inline ones among them, with the file that holds it.
    modules: BTreeMap<Vec<String>, usize>,
    /// The `use`s of every module.
    uses: BTreeMap<Vec<String>, Vec<Use>>,
}

impl Crate<'_> {
    /// What `path`, written in module `scope`, names: `None` for what is outside the crate
    /// (another crate, `Self`, a local name) or cannot be told. Re-exports are followed to
    /// the file that defines the item.
    fn resolve(&self, scope: &[String], path: &[String], depth: usize) -> Option<Named> {
        if depth > 16 {
            return None;
        }
        let (first, rest) = path.split_first()?;
        let mut at: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => scope.split_last()?.1.to_vec(),
            name => {
                let mut child = scope.to_vec();
                child.push(name.to_owned());
                if self.modules.contains_key(&child) {
                    child
                } else {
                    match self.bound(scope, name, depth)? {
                        Named::Module(m) => m,
                        item => return Some(item),
                    }
                }
            }
        };
        for step in rest {
            match step.as_str() {
                "super" => {
                    at.pop()?;
                }
                "self" => {}
                name => {
                    let mut child = at.clone();
                    child.push(name.to_owned());
                    if self.modules.contains_key(&child) {
                        at = child;
                    } else if self.binds(&at, name) {
                        match self.bound(&at, name, depth)? {
                            Named::Module(m) => at = m,
                            item => return Some(item),
                        }
                    } else {
                        // An item defined in `at` (or a name this reader cannot see).
                        return self
                            .modules
                            .get(&at)
                            .map(|&file| Named::Item(file, name.to_owned()));
                    }
                }
            }
        }
        Some(Named::Module(at))
    }

    /// Whether a `use` of module `m` binds `name`.
    fn binds(&self, m: &[String], name: &str) -> bool {
        self.uses
            .get(m)
            .is_some_and(|uses| uses.iter().any(|u| u.binds.as_deref() == Some(name)))
    }

    /// What the `use` of module `m` that binds `name` names: where it imports from
    /// outside the crate, the item is `m`'s own (a path through `m` to it needs `m`).
    fn bound(&self, m: &[String], name: &str, depth: usize) -> Option<Named> {
        let u = self
            .uses
            .get(m)?
            .iter()
            .find(|u| u.binds.as_deref() == Some(name))?;
        self.resolve(&u.scope, &u.path, depth + 1).or_else(|| {
            self.modules
                .get(m)
                .map(|&file| Named::Item(file, name.to_owned()))
        })
    }
}

/// A path a file writes (in a `use` or in code): the module it stands in, its steps, its
/// line, and whether it is a glob `use`.
struct Written {
    scope: Vec<String>,
    path: Vec<String>,
    line: usize,
    glob: bool,
}

/// The file graph of a crate given as its files (paths relative to `src/`): for each file
/// that is not test code, the files it names, each with the first line it does and the
/// names it takes. A file's own enclosing modules (the files of `super`, ..., up to
/// `lib.rs`) are no edge: their items are in scope in the modules inside them.
fn file_graph(sources: &[(PathBuf, String)]) -> Graph {
    let read = code(sources);
    let files: Vec<(&Path, Vec<String>)> = read
        .iter()
        .map(|(rel, path, _)| (*rel, path.clone()))
        .collect();
    let mut modules: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (_, path))| (path.clone(), i))
        .collect();
    let mut uses: BTreeMap<Vec<String>, Vec<Use>> = BTreeMap::new();
    // Every path each file writes.
    let mut named: Vec<Vec<Written>> = Vec::new();
    for (i, (_, path, toks)) in read.iter().enumerate() {
        let found = contents(path, toks);
        for m in found.inline {
            modules.insert(m, i);
        }
        let mut all: Vec<Written> = found
            .uses
            .iter()
            .map(|u| Written {
                scope: u.scope.clone(),
                path: u.path.clone(),
                line: u.line,
                glob: u.binds.is_none(),
            })
            .collect();
        all.extend(found.paths.into_iter().map(|(scope, path, line)| Written {
            scope,
            path,
            line,
            glob: false,
        }));
        named.push(all);
        for u in found.uses {
            uses.entry(u.scope.clone()).or_default().push(u);
        }
    }
    let krate = Crate {
        files,
        modules,
        uses,
    };
    // from -> to -> (first line, names)
    let mut edges: BTreeMap<usize, BTreeMap<usize, (usize, BTreeSet<String>)>> = BTreeMap::new();
    for (from, paths) in named.iter().enumerate() {
        let Some((_, from_path)) = krate.files.get(from) else {
            continue;
        };
        for Written {
            scope,
            path,
            line,
            glob,
        } in paths
        {
            let (to, name) = match krate.resolve(scope, path, 0) {
                Some(Named::Item(to, name)) => (to, name),
                // A glob takes what it finds: an edge to the module's file.
                Some(Named::Module(m)) if *glob => match krate.modules.get(&m) {
                    Some(&to) => (to, "*".to_owned()),
                    None => continue,
                },
                _ => continue,
            };
            let Some((_, to_path)) = krate.files.get(to) else {
                continue;
            };
            if to == from || from_path.starts_with(to_path) {
                continue;
            }
            let edge = edges
                .entry(from)
                .or_default()
                .entry(to)
                .or_insert((*line, BTreeSet::new()));
            edge.0 = edge.0.min(*line);
            edge.1.insert(name);
        }
    }
    let name = |i: usize| {
        krate
            .files
            .get(i)
            .map_or_else(String::new, |(rel, _)| rel.display().to_string())
    };
    (0..krate.files.len())
        .map(|from| {
            let to: BTreeMap<String, String> = edges
                .get(&from)
                .into_iter()
                .flatten()
                .map(|(&to, (line, names))| {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    let at = format!("{}:{line}: {}", name(from), names.join(", "));
                    (name(to), at)
                })
                .collect();
            (name(from), to)
        })
        .collect()
}

/// The workspace's crates, as directories beside this one.
const CRATES: [&str; 4] = ["protocol", "contracts-sim", "judging", "node"];

#[test]
fn every_crates_module_graph_is_a_hierarchy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = module_graph(&root.join(krate).join("src"));
        assert!(graph.len() > 3, "{krate}/src holds its modules");
        found.extend(
            circles(&graph, "modules")
                .into_iter()
                .map(|c| format!("in {krate}/src: {c}")),
        );
    }
    assert!(
        found.is_empty(),
        "module graphs with circles:\n{}",
        found.join("\n\n")
    );
}

#[test]
fn every_crates_file_graph_is_a_hierarchy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = file_graph(&sources(&root.join(krate).join("src")));
        assert!(
            graph.values().any(|edges| !edges.is_empty()),
            "{krate}/src: its files name each other"
        );
        found.extend(
            circles(&graph, "files")
                .into_iter()
                .map(|c| format!("in {krate}/src: {c}")),
        );
    }
    assert!(
        found.is_empty(),
        "file graphs with circles:\n{}",
        found.join("\n\n")
    );
}

/// The reader sees through comments and literals, follows `super::` out of files and
/// inline modules, reads `crate::{...}` groups, resolves the root's re-exports and leaves
/// test code out; and a circle is reported with its edges.
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
        // Test code is no edge; `cfg(not(test))` code is.
        file(
            "f.rs",
            "#[cfg(test)]\nmod tests { use crate::a::T; }\n\
             #[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod fixture;\n\
             #[cfg(all(test, unix))]\nfn helper() { crate::a::v(); }\n\
             #[cfg(test)]\nuse crate::d::U;\n\
             #[cfg(not(test))]\nuse crate::e::K;\n",
        ),
        file("f/fixture.rs", "use crate::a::U;\n"),
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
    assert_eq!(edges("f"), ["e"]);
    let found = circles(&graph, "modules");
    assert_eq!(found.len(), 1, "{found:?}");
    let message = found.first().map_or("", String::as_str);
    assert!(
        message.starts_with("modules {b, d} import each other around a circle: b -> d -> b"),
        "{message}"
    );
    assert!(message.contains("b -> d (b.rs:1)"), "{message}");
}

/// The file reader follows re-exports (renamed ones too) to the file that defines the
/// item, takes a file's own enclosing modules for no edge, reads paths into child and
/// inline modules and through a re-export of another crate's item, and leaves test code
/// out; and a circle inside one top-level module, which the module check cannot see, is
/// reported with the files and the names that tie it.
#[test]
fn file_reader_finds_circles_inside_a_module() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_owned());
    let sources = [
        file("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Top;\n"),
        file(
            "a/mod.rs",
            "mod x;\nmod y;\nmod z;\n#[cfg(test)]\nmod fixture;\n\
             pub use x::{Left, helper as assist};\n\
             pub struct Top;\n\
             fn f() { z::go(); } // y::Right\n",
        ),
        file("a/fixture.rs", "use super::y::Right;\n"),
        file(
            "a/x.rs",
            "use super::Top;\nuse super::y::Right;\npub struct Left;\npub fn helper() {}\n",
        ),
        file(
            "a/y.rs",
            "use super::{Left, assist};\npub struct Right;\nconst S: &str = \"super::z::go\";\n",
        ),
        file(
            "a/z.rs",
            "use crate::Top as T;\n\
             pub fn go() { crate::b::inner::run(); let _: crate::b::Value; }\n\
             #[cfg(test)]\nmod tests { use super::super::x::Left; }\n",
        ),
        file(
            "b.rs",
            "pub use serde::Value;\n\
             pub mod inner { pub fn run() { super::super::c::f(); } }\n",
        ),
        file("c.rs", "pub fn f() {}\n"),
    ];
    let graph = file_graph(&sources);
    let edges = |f: &str| -> Vec<&str> {
        graph
            .get(f)
            .into_iter()
            .flat_map(|e| e.keys().map(String::as_str))
            .collect()
    };
    let at = |from: &str, to: &str| graph.get(from).and_then(|e| e.get(to)).map(String::as_str);
    assert!(!graph.contains_key("a/fixture.rs"), "{graph:?}");
    assert_eq!(edges("lib.rs"), ["a/mod.rs"]);
    assert_eq!(edges("a/mod.rs"), ["a/x.rs", "a/z.rs"]);
    assert_eq!(at("a/mod.rs", "a/z.rs"), Some("a/mod.rs:8: go"));
    assert_eq!(edges("a/x.rs"), ["a/y.rs"]);
    assert_eq!(edges("a/y.rs"), ["a/x.rs"]);
    assert_eq!(at("a/y.rs", "a/x.rs"), Some("a/y.rs:1: Left, helper"));
    assert_eq!(edges("a/z.rs"), ["b.rs"]);
    assert_eq!(at("a/z.rs", "b.rs"), Some("a/z.rs:2: Value, run"));
    assert_eq!(edges("b.rs"), ["c.rs"]);
    assert!(edges("c.rs").is_empty());
    assert!(circles(&graph_of(&sources), "modules").is_empty());
    let found = circles(&graph, "files");
    assert_eq!(found.len(), 1, "{found:?}");
    let message = found.first().map_or("", String::as_str);
    assert!(
        message.starts_with(
            "files {a/x.rs, a/y.rs} import each other around a circle: a/x.rs -> a/y.rs -> a/x.rs"
        ),
        "{message}"
    );
    assert!(
        message.contains("a/x.rs -> a/y.rs (a/x.rs:2: Right)"),
        "{message}"
    );
}
