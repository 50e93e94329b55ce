//! Finding the proof inside what a model wrote: a JSON answer (`{"proof": "..."}`, as the
//! prompts ask for), a Markdown code fence, or plain text with prose before and after.
//!
//! A [`Region`] is the extracted proof text together with the map back to byte offsets of
//! the original text, so every span reported is a span of what the checker was given.

use std::ops::Range;

use super::{
    equational::starts_chain,
    hilbert::starts_line,
    lex::{Token, lex},
    ndl::syntax::starts_element,
    report::Language,
};

/// A piece of the given text that may hold a proof.
#[derive(Debug, Clone)]
pub(crate) struct Region {
    pub(crate) text: String,
    /// Byte offsets where lines start, for line numbers without rescanning the text.
    line_starts: Vec<usize>,
    /// Raw offset of each byte of `text` (plus one past the end), when `text` was decoded
    /// from an escaped string; `None` when `text` is a plain slice at `base`.
    map: Option<Vec<usize>>,
    base: usize,
}

fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(
        text.bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i.saturating_add(1)),
    );
    v
}

impl Region {
    fn new(text: String, map: Option<Vec<usize>>, base: usize) -> Region {
        Region {
            line_starts: line_starts(&text),
            text,
            map,
            base,
        }
    }

    fn slice(raw: &str, range: Range<usize>) -> Option<Region> {
        Some(Region::new(
            raw.get(range.clone())?.to_string(),
            None,
            range.start,
        ))
    }

    /// Raw byte offset of `pos` in `text`.
    pub(crate) fn raw(&self, pos: usize) -> usize {
        match &self.map {
            None => self.base.saturating_add(pos),
            Some(m) => m
                .get(pos)
                .or_else(|| m.last())
                .copied()
                .unwrap_or(self.base),
        }
    }

    /// Raw byte span of `r`.
    pub(crate) fn raw_span(&self, r: &Range<usize>) -> Range<usize> {
        self.raw(r.start)..self.raw(r.end)
    }

    /// 1-based line of `pos` within the proof.
    pub(crate) fn line(&self, pos: usize) -> usize {
        match self.line_starts.binary_search(&pos) {
            Ok(i) => i.saturating_add(1),
            Err(i) => i,
        }
    }

    /// The text of `r`.
    pub(crate) fn text_of(&self, r: &Range<usize>) -> String {
        self.text.get(r.clone()).unwrap_or("").to_string()
    }

    /// The region from byte `pos` on.
    fn tail(&self, pos: usize) -> Region {
        let text = self.text.get(pos..).unwrap_or("").to_string();
        match &self.map {
            None => Region::new(text, None, self.base.saturating_add(pos)),
            Some(m) => Region::new(
                text,
                Some(m.get(pos..).map(<[usize]>::to_vec).unwrap_or_default()),
                self.base,
            ),
        }
    }
}

/// Decodes the JSON string literal that starts at `start` (its opening quote), keeping the
/// raw offset of every decoded byte.
fn json_string(raw: &str, start: usize) -> Option<Region> {
    let bytes = raw.as_bytes();
    let mut i = start.checked_add(1)?;
    let mut text = String::new();
    let mut map = Vec::new();
    loop {
        let b = *bytes.get(i)?;
        match b {
            b'"' => {
                map.push(i);
                return Some(Region::new(text, Some(map), start));
            }
            b'\\' => {
                let e = *bytes.get(i.checked_add(1)?)?;
                let (c, len) = match e {
                    b'n' => ('\n', 2),
                    b't' => ('\t', 2),
                    b'r' => ('\r', 2),
                    b'b' => ('\u{8}', 2),
                    b'f' => ('\u{c}', 2),
                    b'"' => ('"', 2),
                    b'\\' => ('\\', 2),
                    b'/' => ('/', 2),
                    b'u' => {
                        let hex = raw.get(i.checked_add(2)?..i.checked_add(6)?)?;
                        let code = u32::from_str_radix(hex, 16).ok()?;
                        (char::from_u32(code).unwrap_or('\u{fffd}'), 6)
                    }
                    _ => return None,
                };
                let mut buf = [0u8; 4];
                for _ in 0..c.encode_utf8(&mut buf).len() {
                    map.push(i);
                }
                text.push(c);
                i = i.checked_add(len)?;
            }
            _ => {
                let c = raw.get(i..)?.chars().next()?;
                for k in 0..c.len_utf8() {
                    map.push(i.checked_add(k)?);
                }
                text.push(c);
                i = i.checked_add(c.len_utf8())?;
            }
        }
    }
}

/// The value of a `"proof"` key, if the text holds a JSON object with one.
fn json_proof(raw: &str) -> Option<Region> {
    let key = raw.find("\"proof\"")?;
    let after = key.checked_add(7)?;
    let rest = raw.get(after..)?;
    let colon = rest.find(|c: char| !c.is_whitespace())?;
    if rest.get(colon..)?.chars().next()? != ':' {
        return None;
    }
    let rest2 = rest.get(colon.checked_add(1)?..)?;
    let quote = rest2.find(|c: char| !c.is_whitespace())?;
    if rest2.get(quote..)?.chars().next()? != '"' {
        return None;
    }
    json_string(
        raw,
        after
            .checked_add(colon)?
            .checked_add(1)?
            .checked_add(quote)?,
    )
}

/// The contents of Markdown code fences, in order.
fn fences(raw: &str) -> Vec<Region> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    let mut open: Option<usize> = None;
    for line in raw.split_inclusive('\n') {
        let next = offset.saturating_add(line.len());
        if line.trim_start().starts_with("```") {
            match open.take() {
                None => open = Some(next),
                Some(start) => {
                    if let Some(r) = Region::slice(raw, start..offset) {
                        out.push(r);
                    }
                }
            }
        }
        offset = next;
    }
    if let Some(start) = open
        && let Some(r) = Region::slice(raw, start..raw.len())
    {
        out.push(r);
    }
    out
}

/// Where a proof in `lang` starts in `text`: the offset of the start of its first line.
fn proof_start(text: &str, toks: &[Token], lang: Language) -> Option<usize> {
    let mut prev_end = 0usize;
    for (i, t) in toks.iter().enumerate() {
        let first_on_line = i == 0
            || text
                .get(prev_end..t.span.start)
                .is_some_and(|gap| gap.contains('\n'));
        prev_end = t.span.end;
        if !first_on_line {
            continue;
        }
        let starts = match lang {
            Language::Ndl | Language::NdlF => starts_element(toks, i),
            Language::Hilbert => starts_line(toks, i),
            Language::Equational => starts_chain(toks, i),
        };
        if starts {
            let line_start = text
                .get(..t.span.start)
                .and_then(|s| s.rfind('\n'))
                .map_or(0, |p| p.saturating_add(1));
            return Some(line_start);
        }
    }
    None
}

/// The proof in `lang` that the text holds, as a region starting at the proof's first line.
pub(crate) fn locate(raw: &str, lang: Language) -> Option<Region> {
    // A JSON answer is read only through its "proof" value: its braces are not a block.
    let candidates: Vec<Region> = match json_proof(raw) {
        Some(r) => vec![r],
        None => {
            let mut c = fences(raw);
            c.extend(Region::slice(raw, 0..raw.len()));
            c
        }
    };
    for region in candidates {
        let toks = lex(&region.text);
        if let Some(start) = proof_start(&region.text, &toks, lang) {
            return Some(region.tail(start));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_proofs_in_prose_fences_and_json() {
        let raw = "Here is my proof.\n\n```\n{\n  A BY claim on A\n}\n```\nDone.";
        let r = locate(raw, Language::Ndl).unwrap();
        assert!(r.text.starts_with("{\n  A BY"));
        assert_eq!(&raw[r.raw(0)..r.raw(1)], "{");

        let raw = "We argue as follows.\nassume A {\n  claim on A\n}\nThat is all.";
        let r = locate(raw, Language::Ndl).unwrap();
        assert!(r.text.starts_with("assume A"));

        let raw = r#"{"description": "easy", "proof": "{\n  A BY claim on A\n}"}"#;
        let r = locate(raw, Language::Ndl).unwrap();
        assert_eq!(r.text, "{\n  A BY claim on A\n}");
        let span = r.raw_span(&(4..5));
        assert_eq!(&raw[span], "A");

        assert!(locate("The proof is trivial, by induction.", Language::Ndl).is_none());
        assert!(locate("$A \\land B$ hence $B$", Language::Ndl).is_none());
    }
}
