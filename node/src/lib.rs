//! The TRUST node: daemon, CLI and everything that does I/O.
//!
//! Subsystems live in one module each, with a `//!` note saying what they own. Pure
//! protocol logic lives in `trust-protocol` and `trust-contracts`; this crate wires it to
//! files, terminals and the network. `daemon` assembles a running node from the parts.
#![forbid(unsafe_code)]

pub mod api;
pub mod audit;
pub mod blobs;
pub mod chain;
pub mod chat;
pub mod cli;
pub mod config;
pub mod consensus;
pub mod daemon;
pub mod decompose;
pub mod feed;
pub mod keys;
pub mod ledger;
pub mod mempool;
pub mod metrics;
pub mod misbehave;
pub mod net;
pub mod proof;
pub mod query;
pub mod report;
pub mod statesync;
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
    //! The crate's rooms must form a hierarchy: no two of them may import each other,
    //! directly or around a circle. A room is a top-level module, or one of
    //! [`NESTED_ROOMS`] (a module inside another room that is a room of its own). This
    //! reads the source tree (every `crate::`, `super::` and `self::` path outside
    //! comments, strings and character literals, `use` groups opened) and fails naming
    //! the circle and the files that close it (test code may reach across rooms for its
    //! fixtures and is left out). Beside that: a room may reach another only
    //! through its door where [`DOORS`] names one, and the pure rooms ([`PURE_ROOMS`])
    //! import no I/O outside their tests ([`IO`]).

    use std::{
        collections::{BTreeMap, BTreeSet},
        path::{Path, PathBuf},
    };

    /// Modules inside a room that are rooms of their own.
    const NESTED_ROOMS: [&str; 3] = ["audit/computer", "audit/outbox", "audit/provider"];

    /// `(room, other room, the only path by which the first may name the second)`.
    const DOORS: [(&str, &str, &[&str]); 1] = [(
        "decompose",
        "audit/computer",
        &["audit", "computer", "readable"],
    )];

    /// Imports that close a circle today and are being taken apart, as `(room, the room
    /// it imports, the files that import it)`: the edge from exactly these files is left
    /// out of the search. An entry that no longer closes a circle, or whose files no
    /// longer import the room, fails the test, so the list only shrinks.
    const TOLERATED: [(&str, &str, &[&str]); 0] = [];

    /// Modules of pure logic (a module and everything under it), all of which must exist:
    /// the decomposer, the Computer checkers and the duties planner.
    const PURE_ROOMS: [&str; 3] = ["decompose", "audit/computer", "audit/duties/plan"];

    /// What a pure room must not import: crates that do I/O, and the parts of `std`
    /// that reach files, sockets or clocks (paths below `std::`); nor may it hold async
    /// code (`async`, a word like a crate's name).
    const IO: [&[&str]; 11] = [
        &["async"],
        &["tokio"],
        &["sled"],
        &["libp2p"],
        &["reqwest"],
        &["hyper"],
        &["axum"],
        &["std", "fs"],
        &["std", "net"],
        &["std", "time", "SystemTime"],
        &["std", "time", "Instant"],
    ];

    /// One source file: its path under `src/`, its module path, and whether it is a
    /// test-only module (declared under `#[cfg(test)]`).
    #[derive(Debug)]
    struct File {
        rel: String,
        module: Vec<String>,
        test_only: bool,
        code: String,
    }

    /// The module path of a file under `src/` (`audit/computer/mod.rs` is
    /// `audit::computer`).
    fn module_of(rel: &Path) -> Vec<String> {
        let mut m: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if m.last().is_some_and(|l| l == "mod") {
            m.pop();
        }
        m
    }

    /// The room a module path lies in.
    fn room_of(module: &[String]) -> Option<String> {
        let two = module.get(..2).map(|m| m.join("/"));
        if let Some(two) = two
            && NESTED_ROOMS.contains(&two.as_str())
        {
            return Some(two);
        }
        module.first().cloned()
    }

    /// Every `.rs` file under `src` but `lib.rs` and `main.rs`, comments and literals
    /// blanked, with the files that `#[cfg(test)] mod x;` declares marked.
    fn files(src: &Path) -> Vec<File> {
        let mut paths = Vec::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("read dir") {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        let mut out: Vec<File> = Vec::new();
        let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
        for p in paths {
            let code = code_only(&std::fs::read_to_string(&p).expect("read source"));
            let rel = p.strip_prefix(src).unwrap_or(&p).to_path_buf();
            // Where the children of this file's module live.
            let dir = match p.file_stem().and_then(|s| s.to_str()) {
                Some("mod" | "lib" | "main") => p.parent().map(Path::to_path_buf),
                _ => Some(p.with_extension("")),
            };
            for name in test_modules(&code) {
                if let Some(d) = &dir {
                    test_files.insert(d.join(format!("{name}.rs")));
                    test_files.insert(d.join(&name).join("mod.rs"));
                }
            }
            if rel.parent() == Some(Path::new(""))
                && matches!(rel.to_str(), Some("lib.rs" | "main.rs"))
            {
                continue;
            }
            out.push(File {
                rel: rel.display().to_string(),
                module: module_of(&rel),
                test_only: false,
                code,
            });
        }
        for f in &mut out {
            f.test_only = test_files.contains(&src.join(&f.rel));
        }
        // A test-only module's own children are test code too.
        let roots: Vec<Vec<String>> = out
            .iter()
            .filter(|f| f.test_only)
            .map(|f| f.module.clone())
            .collect();
        for f in &mut out {
            f.test_only |= roots.iter().any(|r| f.module.starts_with(r));
        }
        out
    }

    /// Names of the modules `code` declares as files under `#[cfg(test)]` (`mod tests;`).
    fn test_modules(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (at, _) in code.match_indices("#[cfg(test)]") {
            let rest = code[at + "#[cfg(test)]".len()..].trim_start();
            let rest = rest
                .strip_prefix("pub(crate)")
                .or_else(|| rest.strip_prefix("pub(super)"))
                .or_else(|| rest.strip_prefix("pub"))
                .unwrap_or(rest)
                .trim_start();
            if let Some(decl) = rest.strip_prefix("mod ") {
                let name = ident(decl.trim_start());
                if decl.trim_start()[name.len()..]
                    .trim_start()
                    .starts_with(';')
                {
                    out.push(name);
                }
            }
        }
        out
    }

    /// `code` with every `#[cfg(test)]` item (an inline test module, a test helper)
    /// blanked.
    fn without_tests(code: &str) -> String {
        let mut out = String::with_capacity(code.len());
        let mut rest = code;
        while let Some(at) = rest.find("#[cfg(test)]") {
            out.push_str(&rest[..at]);
            let item = &rest[at..];
            // The item ends at its first `;` outside braces, or at its closing brace.
            let mut depth = 0usize;
            let mut end = item.len();
            for (i, c) in item.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    ';' if depth == 0 => {
                        end = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            out.push(' ');
            rest = &item[end..];
        }
        out.push_str(rest);
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

    /// The identifier at the start of `s`.
    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }

    /// Adds to `out` every path that the use-tree (or expression path) at the start of
    /// `s` names below `base`: `a::{b, c::d}` names `a::b` and `a::c::d`, `a::{self}`
    /// names `a`, `a::*` and `a::f::<T>` name `a` and `a::f`.
    fn tree(s: &str, base: &[String], out: &mut BTreeSet<Vec<String>>) {
        let s = s.trim_start();
        if let Some(inner) = s.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = 0usize;
            for (i, c) in inner.char_indices() {
                let item = || inner.get(start..i).unwrap_or("");
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        if !item().trim().is_empty() {
                            tree(item(), base, out);
                        }
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !item().trim().is_empty() {
                            tree(item(), base, out);
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let name = ident(s);
        let mut path = base.to_vec();
        if !name.is_empty() && name != "self" {
            path.push(name.clone());
        }
        match s[name.len()..].trim_start().strip_prefix("::") {
            Some(more) if !name.is_empty() => tree(more, &path, out),
            _ if !path.is_empty() => {
                out.insert(path);
            }
            _ => {}
        }
    }

    /// The paths named right after each `prefix` (`crate::`, `super::`, `std::`) in
    /// `code`, each with the byte offset where it is named.
    fn paths_after(code: &str, prefix: &str) -> Vec<(usize, Vec<String>)> {
        let mut out = Vec::new();
        for (at, _) in code.match_indices(prefix) {
            if code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                continue; // `my_crate::`, `a::std::`: not this prefix
            }
            let mut found = BTreeSet::new();
            tree(&code[at + prefix.len()..], &[], &mut found);
            out.extend(found.into_iter().map(|p| (at, p)));
        }
        out
    }

    /// The top-level modules named right after each `crate::` in `code`.
    fn crate_paths(code: &str) -> BTreeSet<String> {
        paths_after(code, "crate::")
            .into_iter()
            .filter_map(|(_, p)| p.into_iter().next())
            .collect()
    }

    /// How many inline modules (`mod x { ... }`) enclose byte `at` of `code`.
    fn inline_depth(code: &str, at: usize) -> usize {
        let mut depth = 0;
        for (m, _) in code.match_indices("mod ") {
            if m >= at
                || code[..m]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            let decl = code[m + 4..].trim_start();
            let name = ident(decl);
            let Some(body) = decl[name.len()..].trim_start().strip_prefix('{') else {
                continue;
            };
            let open = code.len() - body.len();
            let mut level = 1usize;
            let mut close = code.len();
            for (i, c) in body.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' => {
                        level -= 1;
                        if level == 0 {
                            close = open + i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if open <= at && at < close {
                depth += 1;
            }
        }
        depth
    }

    /// Every module path `file` names: `crate::` paths as they are, `super::` and
    /// `self::` ones resolved from the file's module (a path inside an inline module
    /// stays within the file's own module).
    fn named_paths(file: &File, code: &str) -> BTreeSet<Vec<String>> {
        let mut out: BTreeSet<Vec<String>> = paths_after(code, "crate::")
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        for (prefix, up) in [("super::", 1usize), ("self::", 0usize)] {
            for (at, p) in paths_after(code, prefix) {
                if inline_depth(code, at) > 0 {
                    continue;
                }
                let keep = file.module.len().saturating_sub(up);
                let mut full = file.module[..keep].to_vec();
                full.extend(p);
                out.insert(full);
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
    fn the_parser_opens_nested_groups_to_whole_paths() {
        let code = "use crate::audit::{\n    computer::{self, readable::Links},\n    judge,\n};\n\
                    fn f() { crate::x::f::<u8>(); }";
        let got: BTreeSet<String> = paths_after(code, "crate::")
            .into_iter()
            .map(|(_, p)| p.join("::"))
            .collect();
        let want: BTreeSet<String> = [
            "audit::computer",
            "audit::computer::readable::Links",
            "audit::judge",
            "x::f",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(got, want);
        let tests = without_tests("fn a() {}\n#[cfg(test)]\nmod tests { use std::fs; }\nfn b() {}");
        assert!(!tests.contains("fs") && tests.contains("fn b"), "{tests}");
    }

    #[test]
    fn no_two_rooms_import_each_other_around_a_circle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let files = files(&src);
        let rooms: BTreeSet<String> = files.iter().filter_map(|f| room_of(&f.module)).collect();
        assert!(
            ["api", "consensus", "decompose", "audit", "audit/computer"]
                .iter()
                .all(|r| rooms.contains(*r)),
            "{rooms:?}"
        );
        // room -> (room it imports -> files that import it)
        let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        let mut refused: Vec<String> = Vec::new();
        // The code that ships: a test may reach across rooms for its fixtures.
        for f in files.iter().filter(|f| !f.test_only) {
            assert!(
                !f.code.contains("super::super::"),
                "{}: reach other modules through `crate::`, so this check sees it",
                f.rel
            );
            let Some(name) = room_of(&f.module) else {
                continue;
            };
            for path in named_paths(f, &without_tests(&f.code)) {
                let Some(dep) = room_of(&path).filter(|d| rooms.contains(d) && *d != name) else {
                    continue;
                };
                for (from, to, door) in DOORS {
                    if name == from
                        && dep == to
                        && !path
                            .starts_with(&door.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                    {
                        refused.push(format!(
                            "{}: `crate::{}`: {from} may name {to} only through `crate::{}`",
                            f.rel,
                            path.join("::"),
                            door.join("::")
                        ));
                    }
                }
                edges
                    .entry(name.clone())
                    .or_default()
                    .entry(dep)
                    .or_default()
                    .insert(f.rel.clone());
            }
        }
        assert!(refused.is_empty(), "{}", refused.join("\n"));
        let all_edges = edges.clone();
        for (from, to, files) in TOLERATED {
            let by: Option<&mut BTreeSet<String>> = edges.get_mut(from).and_then(|d| d.get_mut(to));
            let Some(by) = by else {
                panic!("{from} no longer imports {to}: remove it from TOLERATED");
            };
            for f in files {
                assert!(
                    by.remove(*f),
                    "{f} no longer imports {to}: remove it from TOLERATED"
                );
            }
            if by.is_empty()
                && let Some(d) = edges.get_mut(from)
            {
                d.remove(to);
            }
        }
        // Depth-first search for a back edge; the path on the stack is the circle.
        fn visit<'a>(
            m: &'a str,
            edges: &'a BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
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
        for (from, to, _) in TOLERATED {
            // Whether `from` is reachable from `to`, with every edge counted.
            let mut seen = BTreeSet::new();
            let mut todo = vec![to];
            while let Some(m) = todo.pop() {
                if seen.insert(m) {
                    todo.extend(
                        all_edges
                            .get(m)
                            .into_iter()
                            .flat_map(|d| d.keys())
                            .map(String::as_str),
                    );
                }
            }
            assert!(
                seen.contains(from),
                "{from} -> {to} closes no circle any more: remove it from TOLERATED"
            );
        }
        let mut done = BTreeSet::new();
        for m in &rooms {
            if let Some(circle) = visit(m, &edges, &mut Vec::new(), &mut done) {
                let why: Vec<String> = circle
                    .windows(2)
                    .map(|w| format!("{} -> {} in {:?}", w[0], w[1], edges[w[0]][w[1]]))
                    .collect();
                panic!("rooms import each other in a circle:\n{}", why.join("\n"));
            }
        }
    }

    #[test]
    fn pure_rooms_import_no_io() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let files = files(&src);
        let mut checked = BTreeSet::new();
        let mut found: Vec<String> = Vec::new();
        for f in files.iter().filter(|f| !f.test_only) {
            let path = f.module.join("/");
            let Some(room) = PURE_ROOMS
                .iter()
                .find(|p| path == **p || path.starts_with(&format!("{p}/")))
                .map(|p| p.to_string())
            else {
                continue;
            };
            checked.insert(room.clone());
            let code = without_tests(&f.code);
            let std_paths: Vec<Vec<String>> = paths_after(&code, "std::")
                .into_iter()
                .map(|(_, mut p)| {
                    p.insert(0, "std".into());
                    p
                })
                .collect();
            for io in IO {
                let io: Vec<String> = io.iter().map(|s| s.to_string()).collect();
                let named = if io.len() == 1 {
                    // A crate: named anywhere as a word (`use tokio::..`, `tokio::spawn`).
                    code.match_indices(io[0].as_str()).any(|(at, w)| {
                        let before = code[..at].chars().next_back();
                        let after = code[at + w.len()..].chars().next();
                        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    })
                } else {
                    std_paths.iter().any(|p| p.starts_with(&io))
                };
                if named {
                    found.push(format!(
                        "{}: the pure room `{room}` imports I/O or async code: `{}`",
                        f.rel,
                        io.join("::")
                    ));
                }
            }
        }
        assert!(
            PURE_ROOMS.iter().all(|r| checked.contains(*r)),
            "a pure module is missing: {checked:?}"
        );
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
