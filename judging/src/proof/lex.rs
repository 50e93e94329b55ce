//! Tokens of the ProofGrid proof languages, with byte spans into the text they come from.
//!
//! One lexer serves all four languages: the connectives of propositional formulas, the
//! punctuation of NDL blocks and Hilbert lines, and the `=` of equational steps. `#` starts a
//! comment that runs to the end of the line (the only comment form the prompts define).
//! Keywords (`BY`, `on`, `from`, `assume`, ...) are identifiers here; parsers decide.

use std::ops::Range;

/// One token kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    /// `:=`
    Assign,
    Dot,
    Tilde,
    Amp,
    Bar,
    /// `==>`
    Implies,
    /// `<==>`
    Iff,
    /// `=` alone
    Equals,
    Ident(String),
    Num(u64),
    /// Any other character: a parser that meets it reports a syntax error.
    Other(char),
}

/// A token and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) span: Range<usize>,
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '\''
}

/// Splits `text` into tokens, skipping white space and `#` comments.
pub(crate) fn lex(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '#' {
            for (_, d) in chars.by_ref() {
                if d == '\n' {
                    break;
                }
            }
            continue;
        }
        let rest = text.get(i..).unwrap_or("");
        let mut push = |tok: Tok, len: usize| {
            out.push(Token {
                tok,
                span: i..i.saturating_add(len),
            });
        };
        if rest.starts_with("<==>") {
            push(Tok::Iff, 4);
            for _ in 0..3 {
                chars.next();
            }
            continue;
        }
        if rest.starts_with("==>") {
            push(Tok::Implies, 3);
            for _ in 0..2 {
                chars.next();
            }
            continue;
        }
        if rest.starts_with(":=") {
            push(Tok::Assign, 2);
            chars.next();
            continue;
        }
        let single = match c {
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            '{' => Some(Tok::LBrace),
            '}' => Some(Tok::RBrace),
            ',' => Some(Tok::Comma),
            ';' => Some(Tok::Semi),
            ':' => Some(Tok::Colon),
            '.' => Some(Tok::Dot),
            '~' => Some(Tok::Tilde),
            '&' => Some(Tok::Amp),
            '|' => Some(Tok::Bar),
            '=' => Some(Tok::Equals),
            _ => None,
        };
        if let Some(tok) = single {
            push(tok, 1);
            continue;
        }
        if ident_start(c) {
            let mut end = i.saturating_add(c.len_utf8());
            while let Some(&(j, d)) = chars.peek() {
                if ident_continue(d) {
                    end = j.saturating_add(d.len_utf8());
                    chars.next();
                } else {
                    break;
                }
            }
            let word = text.get(i..end).unwrap_or("").to_string();
            out.push(Token {
                tok: Tok::Ident(word),
                span: i..end,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let mut end = i.saturating_add(1);
            let mut value: Option<u64> = c.to_digit(10).map(u64::from);
            while let Some(&(j, d)) = chars.peek() {
                if let Some(digit) = d.to_digit(10) {
                    value = value
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add(u64::from(digit)));
                    end = j.saturating_add(1);
                    chars.next();
                } else {
                    break;
                }
            }
            let tok = match value {
                Some(v) => Tok::Num(v),
                None => Tok::Other('9'),
            };
            out.push(Token { tok, span: i..end });
            continue;
        }
        push(Tok::Other(c), c.len_utf8());
    }
    out
}

/// 1-based line number of byte offset `pos` in `text`.
#[cfg(test)]
pub(crate) fn line_of(text: &str, pos: usize) -> usize {
    let upto = text.get(..pos.min(text.len())).unwrap_or(text);
    upto.bytes()
        .filter(|&b| b == b'\n')
        .count()
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_connectives_names_and_comments() {
        let toks: Vec<Tok> = lex("p-1 := (~A & B ==> C <==> D) # note\n bicond-def' on x")
            .into_iter()
            .map(|t| t.tok)
            .collect();
        assert_eq!(
            toks,
            vec![
                Tok::Ident("p-1".into()),
                Tok::Assign,
                Tok::LParen,
                Tok::Tilde,
                Tok::Ident("A".into()),
                Tok::Amp,
                Tok::Ident("B".into()),
                Tok::Implies,
                Tok::Ident("C".into()),
                Tok::Iff,
                Tok::Ident("D".into()),
                Tok::RParen,
                Tok::Ident("bicond-def'".into()),
                Tok::Ident("on".into()),
                Tok::Ident("x".into()),
            ]
        );
    }

    #[test]
    fn line_numbers_are_one_based() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
