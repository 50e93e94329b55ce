//! Tables on the terminal: columns as wide as their widest cell, so that a long value
//! never runs into the next column.

/// Space between two columns.
pub(crate) const GAP: &str = "  ";

/// `rows` as aligned lines: every column padded to its widest cell (in characters), the
/// columns [`GAP`] apart, nothing after a row's last cell (a row may have fewer cells than
/// another: its line ends where its cells do, and its last cell, which nothing follows,
/// does not widen the column for the others: a long header over the last column does not
/// push the cells after it in longer rows away). Each line starts with `indent`, the first
/// with `first` instead when it is given (a label in the margin, as `segments` before the
/// header row), both padded to the same width.
pub(crate) fn lines(first: Option<&str>, indent: &str, rows: &[Vec<String>]) -> Vec<String> {
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            let cell = if i == last { "" } else { cell.as_str() };
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width(cell)),
                None => widths.push(width(cell)),
            }
        }
    }
    let margin = first.map_or(0, width).max(width(indent));
    rows.iter()
        .enumerate()
        .map(|(n, row)| {
            let label = match (n, first) {
                (0, Some(f)) => f,
                _ => indent,
            };
            let mut line = format!("{label:<margin$}");
            let last = row.len().saturating_sub(1);
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i < last {
                    let pad = widths
                        .get(i)
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(width(cell));
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(GAP);
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::lines;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_never_touch() {
        let out = lines(
            Some("label  "),
            "",
            &[
                row(&["#", "name", "verdict", "votes (v/i/u/a)"]),
                row(&["0", "a-much-longer-name", "Ungrounded", "1/0/2/0", "note"]),
                row(&["10", "b", "Valid", "3/0/0/0"]),
            ],
        );
        assert_eq!(
            out,
            [
                "label  #   name                verdict     votes (v/i/u/a)",
                "       0   a-much-longer-name  Ungrounded  1/0/2/0  note",
                "       10  b                   Valid       3/0/0/0",
            ]
        );
        // Widths are counted in characters, not bytes.
        let out = lines(None, " ", &[row(&["ab…", "x"]), row(&["abcd", "y"])]);
        assert_eq!(out, [" ab…   x", " abcd  y"]);
    }
}
