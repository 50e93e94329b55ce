//! An HDAG drawn as a layered graph in inline SVG: one row per abstraction level, top to
//! bottom, nodes coloured by verdict, `depends_on` edges solid with an arrow from premise
//! to the step that uses it, `decomposes_to` edges dashed from parent to part.
//!
//! Each node is a focusable group (`tabindex="0"`) with a `<title>` (its tier, votes and
//! verdict or error kind), so hovering or tabbing to it shows the detail without script;
//! the style sheet in [`super::layout`] highlights the focused node.

use std::fmt::Write as _;

use super::layout::esc;

/// The colour a node gets: its verdict, or that it was not audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shade {
    /// Holds.
    Valid,
    /// Wrong.
    Invalid,
    /// Not supported by its premises.
    Ungrounded,
    /// Rests on a segment that failed.
    Propagated,
    /// No quorum.
    Undecided,
    /// Not audited: left out of the session, or not decided yet.
    NotAudited,
}

impl Shade {
    /// Every shade, in legend order.
    pub const ALL: [Shade; 6] = [
        Shade::Valid,
        Shade::Invalid,
        Shade::Ungrounded,
        Shade::Propagated,
        Shade::Undecided,
        Shade::NotAudited,
    ];

    /// The CSS class (shared with text badges).
    pub fn class(self) -> &'static str {
        match self {
            Shade::Valid => "v-valid",
            Shade::Invalid => "v-invalid",
            Shade::Ungrounded => "v-ungrounded",
            Shade::Propagated => "v-propagated",
            Shade::Undecided => "v-undecided",
            Shade::NotAudited => "v-none",
        }
    }

    /// Whether the shade is an error kind (Invalid, Ungrounded, Propagated).
    pub fn is_error(self) -> bool {
        matches!(self, Shade::Invalid | Shade::Ungrounded | Shade::Propagated)
    }

    /// The word shown in the legend and tables.
    pub fn word(self) -> &'static str {
        match self {
            Shade::Valid => "Valid",
            Shade::Invalid => "Invalid",
            Shade::Ungrounded => "Ungrounded",
            Shade::Propagated => "Propagated",
            Shade::Undecided => "Undecided",
            Shade::NotAudited => "not audited",
        }
    }
}

/// A node to draw.
#[derive(Debug, Clone)]
pub struct Node {
    /// Shown inside the box (e.g. the segment index).
    pub label: String,
    /// Its row: the abstraction level's rank, top (0) to bottom.
    pub row: usize,
    /// Its colour.
    pub shade: Shade,
    /// Tooltip text (escaped here).
    pub title: String,
}

/// What an edge means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// `to` uses a result of `from` (drawn from premise to user).
    DependsOn,
    /// `from` is broken down into `to`.
    DecomposesTo,
}

/// An edge between two nodes, by position in the node list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Where the line starts.
    pub from: usize,
    /// Where the arrow points.
    pub to: usize,
    /// Solid or dashed.
    pub kind: EdgeKind,
}

/// Box size and spacing, in SVG units.
const BOX_W: u32 = 52;
const BOX_H: u32 = 26;
const COL_W: u32 = 70;
const ROW_H: u32 = 86;
const LEFT: u32 = 96;
const TOP: u32 = 24;

/// Where each node sits: (x, y) of its box's top-left corner. Rows with no node are left
/// out, so the drawing stays compact; order within a row is the node list's.
pub fn positions(nodes: &[Node]) -> Vec<(u32, u32)> {
    let mut rows: Vec<usize> = nodes.iter().map(|n| n.row).collect();
    rows.sort_unstable();
    rows.dedup();
    let mut used = vec![0u32; rows.len()];
    nodes
        .iter()
        .map(|n| {
            let r = rows.partition_point(|&x| x < n.row);
            let col = used.get(r).copied().unwrap_or(0);
            if let Some(c) = used.get_mut(r) {
                *c += 1;
            }
            (
                LEFT + col * COL_W,
                TOP + u32::try_from(r).unwrap_or(u32::MAX / ROW_H) * ROW_H,
            )
        })
        .collect()
}

/// The SVG of `nodes` and `edges`; `row_names[row]` labels each drawn row on the left.
/// Edges naming a node that does not exist are skipped.
pub fn render(nodes: &[Node], edges: &[Edge], row_names: &[&str]) -> String {
    let pos = positions(nodes);
    let width = pos.iter().map(|p| p.0 + BOX_W).max().unwrap_or(LEFT) + 24;
    let height = pos.iter().map(|p| p.1 + BOX_H).max().unwrap_or(TOP) + 36;
    let mut s = format!(
        "<svg class=\"hdag\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"HDAG of the session\">\
<defs><marker id=\"arr\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#5b6475\"/></marker></defs>"
    );
    // Row captions, once per drawn row.
    let mut captioned: Vec<usize> = Vec::new();
    for (n, p) in nodes.iter().zip(&pos) {
        if !captioned.contains(&n.row) {
            captioned.push(n.row);
            let name = row_names.get(n.row).copied().unwrap_or("");
            let _ = write!(
                s,
                "<text class=\"lvl\" x=\"8\" y=\"{}\">{}</text>",
                p.1 + BOX_H / 2 + 4,
                esc(name)
            );
        }
    }
    for e in edges {
        let (Some(a), Some(b)) = (pos.get(e.from), pos.get(e.to)) else {
            continue;
        };
        let class = match e.kind {
            EdgeKind::DependsOn => "e-dep",
            EdgeKind::DecomposesTo => "e-dec",
        };
        let _ = write!(
            s,
            "<path class=\"{class}\" d=\"{}\" marker-end=\"url(#arr)\"/>",
            edge_path(*a, *b)
        );
    }
    for (n, p) in nodes.iter().zip(&pos) {
        let _ = write!(
            s,
            "<g class=\"node {}\" tabindex=\"0\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"5\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
            n.shade.class(),
            esc(&n.title),
            p.0,
            p.1,
            p.0 + BOX_W / 2,
            p.1 + BOX_H / 2 + 4,
            esc(&n.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// The path of an edge between boxes at `a` and `b`: straight between rows (bottom of the
/// upper box to top of the lower), an arc below the row between boxes on the same row.
fn edge_path(a: (u32, u32), b: (u32, u32)) -> String {
    let (ax, bx) = (a.0 + BOX_W / 2, b.0 + BOX_W / 2);
    if a.1 == b.1 {
        let y = a.1 + BOX_H;
        let dip = y + 18 + (ax.abs_diff(bx) / COL_W).min(4) * 6;
        format!("M{ax},{y} Q{},{dip} {bx},{y}", (ax + bx) / 2)
    } else if a.1 < b.1 {
        format!("M{ax},{} L{bx},{}", a.1 + BOX_H, b.1)
    } else {
        format!("M{ax},{} L{bx},{}", a.1, b.1 + BOX_H)
    }
}

/// The legend: one swatch per shade and the two edge styles.
pub fn legend() -> String {
    let mut s = String::from("<div class=\"legend\">");
    for shade in Shade::ALL {
        let _ = write!(
            s,
            "<span><span class=\"sw {}\"></span>{}</span>",
            shade.class(),
            shade.word()
        );
    }
    s.push_str(
        "<span><svg width=\"30\" height=\"10\" aria-hidden=\"true\"><path class=\"e-dep\" d=\"M0,5 L30,5\"/></svg> depends on (premise → step)</span>\
<span><svg width=\"30\" height=\"10\" aria-hidden=\"true\"><path class=\"e-dec\" d=\"M0,5 L30,5\"/></svg> decomposes to (parent → part)</span></div>",
    );
    s
}
