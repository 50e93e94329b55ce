//! The entailment question as the model sees it, and the strict reading of its reply.
//!
//! The question mirrors the four parts of the paper's human audit form (seed 002,
//! appendix 0.0.9.2): prompt context (the included givens), verified dependencies (the
//! included earlier claims), the current step (the hypothesis), and implications (the
//! claims of this seat's view that build on the step, for orientation only). Claims left
//! out of the sampled premise are not shown at all: the model judges the step from
//! exactly the premise ARES drew.
//!
//! The reply must be one JSON object `{"label": "entailed" | "not_entailed" |
//! "contradicts_context"}` and nothing else; servers that support it are held to that
//! shape with a JSON schema ([`reply_schema`]), and anything else is rejected with the
//! reason.

use serde::Deserialize;
use serde_json::{Value, json};

use super::ares::{Answer, Chain, Query};

/// Longest text of one claim shown to the model (longer ones are cut, marked as such).
pub const MAX_CLAIM_CHARS: usize = 2_000;

/// The system message.
pub const SYSTEM: &str = "You audit one step of a reasoning trace. Judge only whether the \
current step follows from the prompt context and the verified dependencies shown. Reply \
with one JSON object and nothing else.";

/// The JSON schema the reply is held to.
pub fn reply_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "label": {
                "type": "string",
                "enum": ["entailed", "not_entailed", "contradicts_context"]
            }
        },
        "required": ["label"],
        "additionalProperties": false
    })
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_CLAIM_CHARS) {
        Some((i, _)) => format!("{} [cut]", &s[..i]),
        None => s.to_string(),
    }
}

fn section(out: &mut String, title: &str, items: &[&str], empty: &str) {
    out.push_str(title);
    out.push_str(":\n");
    if items.is_empty() {
        out.push_str(empty);
        out.push('\n');
    }
    for c in items {
        out.push_str("- ");
        out.push_str(&clip(c));
        out.push('\n');
    }
    out.push('\n');
}

/// The user message for `query` over `chain`.
pub fn question(chain: &Chain<'_>, query: &Query) -> String {
    let nb = chain.base.len();
    let context: Vec<&str> = (0..nb)
        .filter(|i| query.includes(*i))
        .filter_map(|i| chain.claim(i))
        .collect();
    let deps: Vec<&str> = (nb..query.hypothesis)
        .filter(|i| query.includes(*i))
        .filter_map(|i| chain.claim(i))
        .collect();
    let later: Vec<&str> = (query.hypothesis.saturating_add(1)..chain.len())
        .filter_map(|i| chain.claim(i))
        .collect();
    let mut q = String::new();
    section(&mut q, "Prompt context", &context, "(none)");
    section(&mut q, "Verified dependencies", &deps, "(none)");
    q.push_str("Current step:\n");
    q.push_str(&clip(chain.claim(query.hypothesis).unwrap_or_default()));
    q.push_str("\n\n");
    section(
        &mut q,
        "Implications (later steps, not evidence)",
        &later,
        "(not shown to this auditor)",
    );
    q.push_str(
        "Does the current step follow from the prompt context and the verified dependencies? \
Answer {\"label\": \"entailed\"} if it does, {\"label\": \"contradicts_context\"} if it \
conflicts with the prompt context, otherwise {\"label\": \"not_entailed\"}.",
    );
    q
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    label: Label,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Label {
    Entailed,
    NotEntailed,
    ContradictsContext,
}

/// Reads the model's reply text: exactly one JSON object of the reply schema.
pub fn parse_reply(text: &str) -> Result<Answer, String> {
    let head = || text.chars().take(80).collect::<String>();
    let t = text.trim();
    // serde would also read a struct from a JSON array; only an object is a reply.
    if !t.starts_with('{') {
        return Err(format!(
            "reply is not a JSON object (reply starts {:?})",
            head()
        ));
    }
    let r: Reply = serde_json::from_str(t).map_err(|e| {
        format!(
            "reply is not {{\"label\": ...}}: {e} (reply starts {:?})",
            head()
        )
    })?;
    Ok(match r.label {
        Label::Entailed => Answer {
            entails: 1.0,
            contradicts_context: false,
        },
        Label::NotEntailed => Answer {
            entails: 0.0,
            contradicts_context: false,
        },
        Label::ContradictsContext => Answer {
            entails: 0.0,
            contradicts_context: true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_shows_the_four_parts_and_only_the_sampled_premise() {
        let base = vec![
            ("The fraction is 2/5.".to_string(), 1.0),
            ("Unused given.".to_string(), 0.5),
        ];
        let derived = vec![
            "Let the numerator be x".to_string(),
            "The denominator is 3x − 7".to_string(),
            "So x / (3x − 7) = 2/5".to_string(),
        ];
        let chain = Chain {
            base: &base,
            derived: &derived,
        };
        let q = question(
            &chain,
            &Query {
                hypothesis: 3,
                included: 0b0101,
            },
        );
        for part in [
            "Prompt context:\n- The fraction is 2/5.",
            "Verified dependencies:\n- Let the numerator be x",
            "Current step:\nThe denominator is 3x − 7",
            "Implications (later steps, not evidence):\n- So x / (3x − 7) = 2/5",
        ] {
            assert!(q.contains(part), "{part:?} missing from\n{q}");
        }
        assert!(!q.contains("Unused given"), "an excluded premise was shown");
        let last = question(
            &chain,
            &Query {
                hypothesis: 4,
                included: 0,
            },
        );
        assert!(last.contains("Prompt context:\n(none)"));
        assert!(last.contains("(not shown to this auditor)"));
    }

    #[test]
    fn replies_are_read_strictly() {
        assert_eq!(
            parse_reply(" {\"label\": \"entailed\"}\n").unwrap().entails,
            1.0
        );
        let c = parse_reply("{\"label\":\"contradicts_context\"}").unwrap();
        assert!(c.contradicts_context && c.entails == 0.0);
        for bad in [
            "",
            "yes",
            "```json\n{\"label\": \"entailed\"}\n```",
            "{\"label\": \"maybe\"}",
            "{\"label\": \"entailed\", \"why\": \"x\"}",
            "{\"label\": \"entailed\"} and more",
            "[\"entailed\"]",
        ] {
            assert!(parse_reply(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn long_claims_are_cut() {
        let long = "é".repeat(MAX_CLAIM_CHARS + 10);
        let c = clip(&long);
        assert!(c.ends_with(" [cut]"));
        assert_eq!(c.chars().count(), MAX_CLAIM_CHARS + 6);
    }
}
