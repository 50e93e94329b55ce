//! Line charts as SVG files (plotters' SVG backend, no font files needed).

use std::path::Path;

use plotters::{coord::Shift, drawing::DrawingAreaErrorKind, prelude::*};

/// One named line on a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// `(x, y)` points in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Axis labels and scale of a chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis caption.
    pub x_label: String,
    /// Y axis caption.
    pub y_label: String,
    /// Logarithmic y axis. Non-positive y values are clamped to `y_floor`.
    pub log_y: bool,
    /// Smallest y drawn on a log axis.
    pub y_floor: f64,
}

/// Decimals that tell apart ticks on an axis spanning `span`: about ten ticks fit, so one
/// digit past the tenth of the span (capped, so a degenerate span stays readable).
fn decimals_for(span: f64) -> usize {
    if !(span.is_finite() && span > 0.0) {
        return 2;
    }
    let d = 1.0 - (span / 10.0).log10().floor();
    d.clamp(0.0, 12.0) as usize
}

/// A tick label on a linear axis: rounded to `decimals`, trailing zeros cut, never `-0`.
/// Plotters' own formatter prints the float as is (`0.8999999999999999`).
fn linear_tick(y: f64, decimals: usize) -> String {
    let s = format!("{y:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// A tick label on a log axis: plain numbers from 0.01 to 1000, powers of ten in
/// scientific notation outside that (`1e-9`), without floating-point noise.
fn log_tick(y: f64) -> String {
    if (0.01..=1000.0).contains(&y) {
        linear_tick(y, 6)
    } else {
        format!("{y:.0e}")
    }
}

/// Width in pixels that a label of `chars` characters needs at the tick font size.
fn label_px(chars: usize) -> u32 {
    u32::try_from(chars).unwrap_or(u32::MAX).saturating_mul(9)
}

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw chart {path}: {reason}")]
pub struct PlotError {
    path: String,
    #[source]
    reason: DrawError,
}

/// What went wrong drawing a chart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DrawError {
    /// No series has a point.
    #[error("no points")]
    NoPoints,
    /// The drawing backend failed.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// Chart size in pixels.
const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;
/// Tick label font size.
const TICK_FONT: u32 = 14;

/// Draws `series` as lines into an SVG file at `path`. The legend sits in a column to the
/// right of the plot, so it never covers a curve; the y label area is as wide as the
/// widest tick label needs; tick labels are rounded to the axis' scale.
pub fn write_line_chart(path: &Path, chart: &Chart, series: &[Series]) -> Result<(), PlotError> {
    let err = |reason: DrawError| PlotError {
        path: path.display().to_string(),
        reason,
    };
    // Planned before the file is created, so a chart with no points writes nothing.
    let plan = plan(chart, series).map_err(err)?;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    draw(root, chart, series, &plan).map_err(err)
}

/// The same chart as [`write_line_chart`], as an SVG document in memory (for a web page).
pub fn line_chart_svg(chart: &Chart, series: &[Series]) -> Result<String, PlotError> {
    let err = |reason: DrawError| PlotError {
        path: "(in memory)".into(),
        reason,
    };
    let plan = plan(chart, series).map_err(err)?;
    let mut out = String::new();
    let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
    draw(root, chart, series, &plan).map_err(err)?;
    Ok(out)
}

/// Axis ranges and label room of a chart, computed from its points.
struct Plan {
    x0: f64,
    x1: f64,
    lo: f64,
    hi: f64,
    x_dec: usize,
    y_dec: usize,
    y_area: u32,
    legend_w: u32,
}

/// A y value as drawn: clamped to the floor on a log axis.
fn clamp_y(chart: &Chart, y: f64) -> f64 {
    if chart.log_y { y.max(chart.y_floor) } else { y }
}

/// The y tick label of `y`.
fn y_tick(chart: &Chart, y_dec: usize, y: f64) -> String {
    if chart.log_y {
        log_tick(y)
    } else {
        linear_tick(y, y_dec)
    }
}

fn plan(chart: &Chart, series: &[Series]) -> Result<Plan, DrawError> {
    let pts = || series.iter().flat_map(|s| s.points.iter().copied());
    let (x0, x1) = bounds(pts().map(|p| p.0)).ok_or(DrawError::NoPoints)?;
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let (y0, y1) = bounds(pts().map(|p| clamp_y(chart, p.1))).ok_or(DrawError::NoPoints)?;

    // The y range drawn: half a decade of room on a log axis, 5% on a linear one.
    let (lo, hi) = if chart.log_y {
        if y1 > y0 {
            (y0 / 3.0, y1 * 3.0)
        } else {
            (y0 / 10.0, y0 * 10.0)
        }
    } else {
        let pad = ((y1 - y0) * 0.05).max(1e-9);
        (y0 - pad, y1 + pad)
    };
    let x_dec = decimals_for(x1 - x0);
    let y_dec = decimals_for(hi - lo);
    // Room for the widest y tick label (the extremes and a mid value stand for them all),
    // plus the rotated axis caption.
    let widest = [lo, hi, (lo + hi) / 2.0]
        .iter()
        .map(|y| y_tick(chart, y_dec, *y).chars().count())
        .max()
        .unwrap_or(4)
        .max(if chart.log_y { 5 } else { 3 });
    let y_area = label_px(widest) + 44;
    let legend_chars = series
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0);
    let legend_w = (label_px(legend_chars) + 56).clamp(120, WIDTH / 3);
    Ok(Plan {
        x0,
        x1,
        lo,
        hi,
        x_dec,
        y_dec,
        y_area,
        legend_w,
    })
}

/// Draws the chart on any plotters backend (a file or a string): the one drawing code
/// behind [`write_line_chart`] and [`line_chart_svg`].
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &Chart,
    series: &[Series],
    plan: &Plan,
) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| DrawError::Backend(Box::new(e));
    let y_fmt = |y: &f64| y_tick(chart, plan.y_dec, *y);
    let x_fmt = |x: &f64| linear_tick(*x, plan.x_dec);
    let clamp = |y: f64| clamp_y(chart, y);
    let Plan { x0, x1, lo, hi, .. } = *plan;

    root.fill(&WHITE).map_err(err)?;
    let (plot, legend) = root.split_horizontally(WIDTH - plan.legend_w);
    let mut builder = ChartBuilder::on(&plot);
    builder
        .caption(&chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(52)
        .y_label_area_size(plan.y_area);

    macro_rules! draw {
        ($ctx:expr) => {{
            let mut ctx = $ctx.map_err(err)?;
            ctx.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .label_style(("sans-serif", TICK_FONT))
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .draw()
                .map_err(err)?;
            for (i, s) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                ctx.draw_series(LineSeries::new(
                    s.points.iter().map(|&(x, y)| (x, clamp(y))),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            }
        }};
    }
    if chart.log_y {
        draw!(builder.build_cartesian_2d(x0..x1, (lo..hi).log_scale()));
    } else {
        draw!(builder.build_cartesian_2d(x0..x1, lo..hi));
    }

    // The legend column: a coloured stroke and the label, one row per series, from the
    // top of the plot area down.
    let style = TextStyle::from(("sans-serif", TICK_FONT).into_font()).color(&BLACK);
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let y = 64 + 24 * i32::try_from(i).unwrap_or(i32::MAX / 48);
        legend
            .draw(&PathElement::new(
                vec![(8, y), (32, y)],
                color.stroke_width(3),
            ))
            .map_err(err)?;
        legend
            .draw(&Text::new(s.label.as_str(), (40, y - 8), style.clone()))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_with_every_series() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.svg");
        let chart = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_y: true,
            y_floor: 1e-30,
        };
        let series = vec![
            Series {
                label: "alpha-line".into(),
                points: vec![(0.0, 1e-3), (1.0, 1e-9), (2.0, 0.0)],
            },
            Series {
                label: "beta-line".into(),
                points: vec![(0.0, 0.5), (2.0, 0.1)],
            },
        ];
        write_line_chart(&path, &chart, &series).expect("draw");
        let svg = std::fs::read_to_string(&path).expect("read");
        // The in-memory variant draws the same document.
        assert_eq!(line_chart_svg(&chart, &series).expect("draw"), svg);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("alpha-line") && svg.contains("beta-line"));
        assert!(svg.matches("<polyline").count() >= 2);
    }

    #[test]
    fn empty_chart_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chart = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_y: false,
            y_floor: 0.0,
        };
        assert!(write_line_chart(&dir.path().join("e.svg"), &chart, &[]).is_err());
        assert!(!dir.path().join("e.svg").exists(), "nothing written");
        assert!(line_chart_svg(&chart, &[]).is_err());
    }

    #[test]
    fn tick_labels_are_round_at_every_scale() {
        // Values plotters hands the formatter carry float noise; the labels must not.
        assert_eq!(linear_tick(0.8999999999999999, decimals_for(0.5)), "0.9");
        assert_eq!(linear_tick(0.6000000000000001, decimals_for(0.5)), "0.6");
        assert_eq!(linear_tick(-0.0000000001, decimals_for(1.0)), "0");
        assert_eq!(linear_tick(1200.0000000002, decimals_for(5000.0)), "1200");
        assert_eq!(linear_tick(0.05, decimals_for(0.2)), "0.05");
        assert_eq!(linear_tick(0.000_125, decimals_for(0.0005)), "0.000125");
        assert_eq!(linear_tick(0.000_125, decimals_for(0.001)), "0.00013");
        assert_eq!(log_tick(0.0009999999999999998), "1e-3");
        assert_eq!(log_tick(0.30000000000000004), "0.3");
        assert_eq!(log_tick(1e-30), "1e-30");
        // A degenerate span still gets a readable label.
        assert_eq!(linear_tick(2.0, decimals_for(0.0)), "2");
    }

    /// Every `<text>` element of an SVG: (x, anchor, content).
    fn texts(svg: &str) -> Vec<(f64, String, String)> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let attr = |name: &str| {
                    t.split(&format!(" {name}=\""))
                        .nth(1)
                        .and_then(|r| r.split('"').next())
                        .unwrap_or("")
                        .to_string()
                };
                let body = t
                    .split('>')
                    .nth(1)
                    .and_then(|r| r.split('<').next())
                    .unwrap_or("")
                    .to_string();
                (
                    attr("x").parse().unwrap_or(f64::NAN),
                    attr("text-anchor"),
                    body,
                )
            })
            .collect()
    }

    #[test]
    fn labels_fit_on_the_canvas_and_the_legend_stays_beside_the_plot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.svg");
        let chart = Chart {
            title: "Mean reputation per strategy".into(),
            x_label: "sessions decided".into(),
            y_label: "reputation".into(),
            log_y: false,
            y_floor: 0.0,
        };
        // Curves that cross every corner of the plot, where a legend inside would sit.
        let series: Vec<Series> = ["honest", "malicious", "rubber-stamp", "random"]
            .iter()
            .enumerate()
            .map(|(k, l)| Series {
                label: (*l).into(),
                points: (0..=100)
                    .map(|i| {
                        let x = f64::from(i) * 100.0;
                        let t = f64::from(i) / 100.0;
                        let y = if k % 2 == 0 {
                            0.1 + 0.8 * t
                        } else {
                            0.9 - 0.8 * t
                        };
                        (x, y + 0.01 * f64::from(u8::try_from(k).unwrap()))
                    })
                    .collect(),
            })
            .collect();
        write_line_chart(&path, &chart, &series).expect("draw");
        let svg = std::fs::read_to_string(&path).expect("read");
        let texts = texts(&svg);
        assert!(texts.len() > 10, "{svg}");
        for (x, anchor, body) in &texts {
            // No float noise in any label.
            let body = body.trim();
            let fraction = body.split_once('.').map_or("", |(_, f)| f);
            assert!(
                fraction.len() <= 4 && !body.contains("9999"),
                "noisy label {body:?}"
            );
            // A right-aligned label (y ticks) has room for its characters to its left.
            if anchor == "end" {
                let need = f64::from(label_px(body.chars().count())) * 0.6;
                assert!(*x >= need, "label {body:?} at x={x} is cut off");
            }
            assert!(*x >= 0.0 && *x <= f64::from(WIDTH), "{body:?} at x={x}");
        }
        // Each legend label sits right of where the plot area ends.
        let plot_right = f64::from(WIDTH - 120);
        for l in ["honest", "malicious", "rubber-stamp", "random"] {
            let (x, _, _) = texts
                .iter()
                .find(|(_, _, b)| b.trim() == l)
                .unwrap_or_else(|| panic!("legend {l} missing"));
            assert!(
                *x > plot_right - 60.0,
                "legend {l} at x={x} is inside the plot"
            );
        }
    }
}
