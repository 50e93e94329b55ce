//! How an outcome's numbers read, in one form for every report a person sees: `submit`,
//! `query`, `proof verify`, the session page. What is counted, in the same words
//! everywhere:
//!
//! - the trace's **segments**: every step the trace was cut into, those in the session and
//!   those left out of it (no auditors of their tier); honeypots are not part of the trace
//!   and are counted apart, as **honeypots**;
//! - **judged**: segments whose seats reached a verdict of their own (Valid, Invalid,
//!   Ungrounded), so a segment failed only through a step it rests on (Propagated) is not
//!   judged, and is named as such;
//! - the **failure bound**: a probability, with the one sentence that says what it is.

/// What the failure bound means, said once the same way everywhere.
pub const BOUND_MEANING: &str = "the chance, at most, that a trace whose segments are all correct would be \
failed, if each seat errs no more often than the network assumes (Hoeffding's bound)";

/// The failure bound stored as `exp(-neg_ln_milli / 1000)`, as a probability: three
/// decimals, or two significant digits in scientific form below 0.001; `None` when there
/// is no bound (too few judged segments).
pub fn bound_probability(neg_ln_milli: u64) -> Option<String> {
    if neg_ln_milli == 0 {
        return None;
    }
    let p = (-(neg_ln_milli as f64) / 1000.0).exp();
    Some(if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    })
}

/// The bound in one line: `P(wrong fail) <= 0.446: <meaning>`, or why there is none.
pub fn bound_line(neg_ln_milli: u64) -> String {
    match bound_probability(neg_ln_milli) {
        Some(p) => format!("at most {p}: {BOUND_MEANING}"),
        None => "none: too few judged segments to bound the verdict".into(),
    }
}

/// The segment counts: `7 segments (5 in the session, 2 left out) and 2 honeypots`.
pub fn segment_count(segments: usize, left_out: usize, honeypots: usize) -> String {
    let mut s = format!(
        "{segments} segment{} ({} in the session, {left_out} left out)",
        if segments == 1 { "" } else { "s" },
        segments.saturating_sub(left_out)
    );
    if honeypots > 0 {
        s.push_str(&format!(
            " and {honeypots} honeypot{}",
            if honeypots == 1 { "" } else { "s" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_reads_as_a_probability() {
        assert_eq!(bound_probability(807).as_deref(), Some("0.446"));
        assert_eq!(bound_probability(9_210).as_deref(), Some("1.0e-4"));
        assert_eq!(bound_probability(0), None);
        assert!(bound_line(807).starts_with("at most 0.446: "));
        assert!(bound_line(0).starts_with("none"));
        assert_eq!(
            segment_count(7, 2, 2),
            "7 segments (5 in the session, 2 left out) and 2 honeypots"
        );
        assert_eq!(
            segment_count(1, 0, 0),
            "1 segment (1 in the session, 0 left out)"
        );
    }
}
