//! Line charts as SVG files (plotters' SVG backend, no font files needed).

use std::path::Path;

use plotters::prelude::*;

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
    /// Where the legend box goes (pick a corner the curves leave free).
    pub legend: LegendCorner,
}

/// Corner of the plot that holds the legend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LegendCorner {
    /// Upper right (the default).
    #[default]
    UpperRight,
    /// Upper left.
    UpperLeft,
    /// Lower right.
    LowerRight,
    /// Lower left.
    LowerLeft,
}

impl LegendCorner {
    fn position(self) -> SeriesLabelPosition {
        match self {
            LegendCorner::UpperRight => SeriesLabelPosition::UpperRight,
            LegendCorner::UpperLeft => SeriesLabelPosition::UpperLeft,
            LegendCorner::LowerRight => SeriesLabelPosition::LowerRight,
            LegendCorner::LowerLeft => SeriesLabelPosition::LowerLeft,
        }
    }
}

/// Tick label for a log axis: powers of ten in scientific notation, without the
/// floating-point noise plotters' default formatter prints (`0.0009999999999999998`).
fn log_tick(y: &f64) -> String {
    if *y >= 0.01 && *y <= 1000.0 {
        format!("{}", (*y * 1e6).round() / 1e6)
    } else {
        format!("{y:.0e}")
    }
}

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw chart {path}: {reason}")]
pub struct PlotError {
    path: String,
    reason: String,
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

/// Draws `series` as lines with a legend into an SVG file at `path`.
pub fn write_line_chart(path: &Path, chart: &Chart, series: &[Series]) -> Result<(), PlotError> {
    let err = |reason: String| PlotError {
        path: path.display().to_string(),
        reason,
    };
    let pts = || series.iter().flat_map(|s| s.points.iter().copied());
    let (x0, x1) = bounds(pts().map(|p| p.0)).ok_or_else(|| err("no points".into()))?;
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let clamp = |y: f64| {
        if chart.log_y { y.max(chart.y_floor) } else { y }
    };
    let (y0, y1) = bounds(pts().map(|p| clamp(p.1))).ok_or_else(|| err("no points".into()))?;

    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(&chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80);

    macro_rules! draw {
        ($ctx:expr, $fmt:expr) => {{
            let mut ctx = $ctx.map_err(|e| err(e.to_string()))?;
            ctx.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .y_label_formatter($fmt)
                .draw()
                .map_err(|e| err(e.to_string()))?;
            for (i, s) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                ctx.draw_series(LineSeries::new(
                    s.points.iter().map(|&(x, y)| (x, clamp(y))),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(e.to_string()))?
                .label(s.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            }
            ctx.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(chart.legend.position())
                .draw()
                .map_err(|e| err(e.to_string()))?;
        }};
    }

    if chart.log_y {
        // Half a decade of room below the smallest and above the largest value.
        let (lo, hi) = if y1 > y0 {
            (y0 / 3.0, y1 * 3.0)
        } else {
            (y0 / 10.0, y0 * 10.0)
        };
        draw!(
            builder.build_cartesian_2d(x0..x1, (lo..hi).log_scale()),
            &log_tick
        );
    } else {
        let pad = ((y1 - y0) * 0.05).max(1e-9);
        draw!(
            builder.build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad)),
            &|y: &f64| format!("{y}")
        );
    }
    root.present().map_err(|e| err(e.to_string()))?;
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
            legend: LegendCorner::LowerLeft,
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
            legend: LegendCorner::default(),
        };
        assert!(write_line_chart(&dir.path().join("e.svg"), &chart, &[]).is_err());
    }
}
