//! Line charts as SVG (plotters). Output is a pure function of the data: same data, same bytes.
//!
//! Every chart keeps the same promises, here in one place rather than in each report:
//!
//! - **The legend never covers data.** It is drawn in a band under the plot, as a grid of
//!   entries sized from the longest name, never inside the plot area.
//! - **Axis labels are numbers as a reader writes them.** A log axis is labelled at the powers of
//!   ten, 1, 10, 100, 1k, 10k, 100k, 1M (with 2 and 5 between them when it spans less than two
//!   decades); a linear axis at round steps in the shortest exact form: 0.5, 2.5, 50, never
//!   "50.0".
//! - **A value that does not exist is not drawn.** A point is [`Y::Undefined`] when its metric
//!   means nothing for that configuration (Jain's index of zero acquisitions), and a value of 0 or
//!   less has no place on a log axis. Such a point breaks its line, and a note under the chart
//!   names it with the reason: "not plotted (0 acquisitions): old TryLock at 32 threads".
//! - **A line flat on zero gets its own scale.** On a linear axis, a series whose largest value is
//!   under [`NEAR_ZERO`] of the axis is drawn again in a panel under the chart with a y axis of
//!   its own; and any point that close to zero has its value printed beside it, as the report's
//!   table prints it, so 0.02 and 0.00 can be told apart.
//! - **Lines with near-equal values can still be told apart.** Each dashed series of a chart has
//!   its own dash pattern, each series its own marker (a dot, with a square, triangle, diamond,
//!   cross... around it), drawn in the legend too; markers that would cover each other at one x
//!   are set side by side.
//! - **No line strikes through a printed value.** A value goes above or below its point, wherever
//!   no line, marker or other value crosses it, on a white box so no grid line does either.

use std::path::Path;

use std::ops::Range;

use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::ReportError;

/// What plotters' SVG backend fails with.
type DrawError = DrawingAreaErrorKind<std::io::Error>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A point closer to zero than this fraction of a linear axis cannot be read off the chart: its
/// value is printed beside it, and a series lying wholly that close gets its own panel.
pub const NEAR_ZERO: f64 = 0.03;

/// The value of one point.
#[derive(Clone, Debug, PartialEq)]
pub enum Y {
    Value(f64),
    /// The metric means nothing for this configuration; the reason ("0 acquisitions") is printed
    /// under the chart, and the line breaks here.
    Undefined(String),
}

/// One line on a chart: points in x order.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub colour: RGBColor,
    pub dashed: bool,
    pub points: Vec<(f64, Y)>,
}

/// A chart: x on a log-2 axis (thread counts) or a linear one, y linear or log.
pub struct LineChart<'a> {
    pub title: &'a str,
    /// Under the title: the parameters and seeds.
    pub subtitle: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// What an x value counts, singular and plural, for the notes: ("thread", "threads") gives
    /// "at 1 thread", "at 16 and 32 threads".
    pub x_unit: (&'a str, &'a str),
    /// x on a log-2 axis labelled at powers of two (thread counts); otherwise linear.
    pub log2_x: bool,
    pub log_y: bool,
    /// Decimals of a value printed on the chart: those of the report's table, so the two read the
    /// same.
    pub y_decimals: usize,
    pub series: Vec<Series>,
}

/// A colour per algorithm/mode, stable across charts.
pub fn colour(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(200, 70, 50),
        RGBColor(40, 110, 180),
        RGBColor(230, 150, 40),
        RGBColor(80, 160, 90),
        RGBColor(130, 80, 170),
        RGBColor(90, 90, 90),
    ];
    PALETTE[index % PALETTE.len()]
}

/// A colour for each of up to sixteen lines on one chart (the real-backends report's locks,
/// thirteen of them): [`colour`]'s six, then ten more, so no two of the first sixteen repeat.
pub fn colour_of_sixteen(index: usize) -> RGBColor {
    const MORE: [RGBColor; 10] = [
        RGBColor(20, 160, 170),
        RGBColor(200, 80, 160),
        RGBColor(150, 100, 30),
        RGBColor(120, 150, 20),
        RGBColor(20, 40, 110),
        RGBColor(240, 170, 40),
        RGBColor(100, 190, 250),
        RGBColor(170, 40, 40),
        RGBColor(170, 220, 60),
        RGBColor(250, 130, 180),
    ];
    match index % 16 {
        i @ 0..=5 => colour(i),
        i => MORE[i - 6],
    }
}

/// An axis label in the shortest exact form: 0.5, 2.5, 50, 1k, 1.5k, 10k, 1M. Six decimals at
/// most, so a tick computed as 3 x 0.1 reads 0.3.
pub fn axis_label(value: f64) -> String {
    let (scaled, suffix) = if value.abs() >= 1e6 {
        (value / 1e6, "M")
    } else if value.abs() >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let fixed = format!("{scaled:.6}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    let number = if trimmed == "-0" { "0" } else { trimmed };
    format!("{number}{suffix}")
}

/// On a log-2 axis the chart plots log2(x); label the whole exponents with 2^exponent.
fn power_of_two_label(exponent: f64) -> String {
    let rounded = exponent.round();
    if (exponent - rounded).abs() < 1e-6 && (0.0..=62.0).contains(&rounded) {
        format!("{}", 1u64 << rounded as u32)
    } else {
        String::new()
    }
}

/// Ticks of a log axis over `low..high`: the powers of ten inside, and 2 and 5 times them when
/// fewer than three powers fit.
pub fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let (first, last) = (low.log10().ceil() as i32, high.log10().floor() as i32);
    let power = |e: i32| 10f64.powi(e);
    let powers: Vec<f64> = (first..=last).map(power).collect();
    if powers.len() >= 3 {
        return powers;
    }
    (first - 1..=last)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * power(e)))
        .filter(|t| (low..=high).contains(t))
        .collect()
}

/// Ticks of a linear axis over `low..high`: multiples of a step of 1, 2, 2.5 or 5 times a power
/// of ten, about `count` of them.
pub fn linear_ticks(low: f64, high: f64, count: usize) -> Vec<f64> {
    let raw = (high - low) / count.max(1) as f64;
    if raw <= 0.0 || !raw.is_finite() {
        return vec![low];
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let (first, last) = ((low / step - 1e-9).ceil() as i64, (high / step + 1e-9).floor() as i64);
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A point left off the chart, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Omitted {
    pub series: String,
    pub x: f64,
    pub reason: String,
}

/// The y axis of one plot.
#[derive(Clone, Debug, PartialEq)]
enum Axis {
    Linear { top: f64, ticks: Vec<f64> },
    Log { low: f64, high: f64, ticks: Vec<f64> },
}

impl Axis {
    /// A linear axis from 0 over `max`, a tick about every `TICK_SPACING` pixels of `height`.
    fn linear(max: f64, height: u32) -> Axis {
        let top = if max > 0.0 { max * 1.12 } else { 1.0 };
        Axis::Linear {
            top,
            ticks: linear_ticks(0.0, top, (height / TICK_SPACING) as usize),
        }
    }

    /// The largest value a point may have and still count as on zero.
    fn near_zero(&self) -> Option<f64> {
        match self {
            Axis::Linear { top, .. } => Some(top * NEAR_ZERO),
            Axis::Log { .. } => None,
        }
    }
}

/// Pixel sizes of the picture.
const WIDTH: u32 = 900;
const HEADER: u32 = 54;
const MAIN_PLOT: u32 = 466;
const PANEL_CAPTION: u32 = 22;
const PANEL_PLOT: u32 = 200;
const LEGEND_ROW: u32 = 20;
const TICK_SPACING: u32 = 45;
const NOTE_LINE: u32 = 16;
const BAND_PAD: u32 = 8;
const LEFT: i32 = 20;
const FONT_SIZE: f64 = 12.0;
/// A generous average advance of a character of the legend and the notes: plotters draws font
/// size s at s / 1.24 pixels, and the SVG's reader picks the font, so widths are estimates.
const CHAR_WIDTH: f64 = 0.62 * FONT_SIZE / 1.24;
const LEGEND_KEY: u32 = 26;
/// The length of a legend entry's line.
const LEGEND_LINE: i32 = 20;
/// The half size of a point's marker, in pixels.
const MARKER: f64 = 5.0;
/// The dash and gap, in pixels, of a chart's first, second, ... dashed series: a plain dash, dots,
/// a long dash, sparse short dashes, a very long dash, a middling dash with a wide gap, fine dots.
const DASHES: [(u32, u32); 7] = [(6, 4), (2, 3), (12, 4), (4, 8), (18, 4), (8, 7), (1, 3)];
/// The height of a value printed on the chart, in pixels: plotters draws font size s at s / 1.24.
const TEXT_HEIGHT: f64 = FONT_SIZE / 1.24;
const LEGEND_GAP: u32 = 24;

/// Everything decided before drawing: a function of the chart's data alone.
#[derive(Clone, Debug)]
struct Layout {
    /// Per series, per point: the plotted (x on the drawn axis, y), or None when left off.
    plotted: Vec<Vec<Option<(f64, f64)>>>,
    x_range: (f64, f64),
    x_ticks: Vec<f64>,
    y: Axis,
    /// Series lying wholly near zero, redrawn on their own scale.
    own_scale: Vec<usize>,
    own_axis: Option<Axis>,
    legend_columns: usize,
    legend_column_width: u32,
    notes: Vec<String>,
}

impl Layout {
    fn legend_rows(&self, entries: usize) -> u32 {
        entries.div_ceil(self.legend_columns.max(1)) as u32
    }
}

/// A point's value on the chart, or why it has no place there.
enum Plottable {
    At(f64),
    Not(String),
}

impl LineChart<'_> {
    /// Draw the chart into the SVG file `path`.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        self.draw(path).map_err(|source| ReportError::Chart {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The points left off the chart, with the reason, in series and x order.
    pub fn omitted(&self) -> Vec<Omitted> {
        let mut omitted = Vec::new();
        for series in &self.series {
            for (x, y) in &series.points {
                if let Plottable::Not(reason) = self.plottable(y) {
                    omitted.push(Omitted {
                        series: series.name.clone(),
                        x: *x,
                        reason,
                    });
                }
            }
        }
        omitted
    }

    /// The notes printed under the chart, one per reason, before wrapping.
    pub fn notes(&self) -> Vec<String> {
        let omitted = self.omitted();
        let mut reasons: Vec<&str> = Vec::new();
        for o in &omitted {
            if !reasons.contains(&o.reason.as_str()) {
                reasons.push(&o.reason);
            }
        }
        reasons
            .into_iter()
            .map(|reason| {
                // Series left off at the same x values are named together.
                let mut groups: Vec<(Vec<f64>, Vec<&str>)> = Vec::new();
                for series in &self.series {
                    let xs: Vec<f64> = omitted
                        .iter()
                        .filter(|o| o.reason == reason && o.series == series.name)
                        .map(|o| o.x)
                        .collect();
                    if xs.is_empty() {
                        continue;
                    }
                    match groups.iter_mut().find(|(group_xs, _)| *group_xs == xs) {
                        Some((_, names)) => names.push(&series.name),
                        None => groups.push((xs, vec![&series.name])),
                    }
                }
                let items: Vec<String> = groups
                    .iter()
                    .map(|(xs, names)| format!("{} at {}", and_list(names), self.x_values(xs)))
                    .collect();
                format!("not plotted ({reason}): {}", items.join("; "))
            })
            .collect()
    }

    /// "1 thread", "16 and 32 threads".
    fn x_values(&self, xs: &[f64]) -> String {
        let labels: Vec<String> = xs.iter().map(|&x| axis_label(x)).collect();
        let unit = if xs == [1.0] { self.x_unit.0 } else { self.x_unit.1 };
        format!("{} {unit}", and_list(&labels))
    }

    /// The value to draw, or why there is none.
    fn plottable(&self, y: &Y) -> Plottable {
        match y {
            Y::Undefined(reason) => Plottable::Not(reason.clone()),
            Y::Value(v) if !v.is_finite() => Plottable::Not("no value".into()),
            Y::Value(v) if self.log_y && *v <= 0.0 => {
                Plottable::Not(format!("{} has no place on a log axis", axis_label(*v)))
            }
            Y::Value(v) => Plottable::At(*v),
        }
    }

    fn layout(&self) -> Layout {
        let to_x = |x: f64| if self.log2_x { x.max(1e-9).log2() } else { x };
        let plotted: Vec<Vec<Option<(f64, f64)>>> = self
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .map(|(x, y)| match self.plottable(y) {
                        Plottable::At(y) => Some((to_x(*x), y)),
                        Plottable::Not(_) => None,
                    })
                    .collect()
            })
            .collect();
        // The x axis spans every point, plotted or not: a configuration left off keeps its place.
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| to_x(p.0)))
            .collect();
        let x_min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let x_max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (x_min, x_max) = if x_min.is_finite() {
            (x_min, x_max.max(x_min + 1.0))
        } else {
            (0.0, 1.0)
        };
        let pad = (x_max - x_min) * 0.05;
        let x_ticks = if self.log2_x {
            (x_min.ceil() as i64..=x_max.floor() as i64).map(|e| e as f64).collect()
        } else {
            linear_ticks(x_min, x_max, 8)
        };
        let max_of = |indices: &mut dyn Iterator<Item = usize>| -> f64 {
            indices
                .flat_map(|i| plotted[i].iter().flatten().map(|p| p.1))
                .fold(0.0, f64::max)
        };
        let y_max = max_of(&mut (0..self.series.len()));
        let y = if self.log_y {
            let positive = plotted
                .iter()
                .flatten()
                .flatten()
                .map(|p| p.1)
                .fold(f64::INFINITY, f64::min);
            // Down to the power of ten at or below the smallest value, so the lowest points have
            // a labelled tick beneath them.
            let low = if positive.is_finite() {
                (positive / 2.0).min(10f64.powf(positive.log10().floor()))
            } else {
                0.001
            };
            let high = y_max.max(low) * 2.0;
            Axis::Log {
                low,
                high,
                ticks: log_ticks(low, high),
            }
        } else {
            Axis::linear(y_max, MAIN_PLOT)
        };
        let own_scale: Vec<usize> = match y.near_zero() {
            Some(limit) => (0..self.series.len())
                .filter(|&i| {
                    let max = max_of(&mut std::iter::once(i));
                    max > 0.0 && max < limit
                })
                .collect(),
            None => Vec::new(),
        };
        let own_axis =
            (!own_scale.is_empty()).then(|| Axis::linear(max_of(&mut own_scale.iter().copied()), PANEL_PLOT));
        let longest_name = self.series.iter().map(|s| s.name.chars().count()).max().unwrap_or(0);
        let legend_column_width = LEGEND_KEY + text_width(longest_name) + LEGEND_GAP;
        let fit = ((WIDTH - 2 * LEFT as u32) / legend_column_width).max(1) as usize;
        let rows = self.series.len().div_ceil(fit).max(1);
        let legend_columns = self.series.len().div_ceil(rows).max(1);
        let note_chars = ((WIDTH - 2 * LEFT as u32) as f64 / CHAR_WIDTH) as usize;
        let notes = self.notes().iter().flat_map(|n| wrap(n, note_chars)).collect();
        Layout {
            plotted,
            x_range: (x_min - pad, x_max + pad),
            x_ticks,
            y,
            own_scale,
            own_axis,
            legend_columns,
            legend_column_width,
            notes,
        }
    }

    fn draw(&self, path: &Path) -> Result<(), DrawError> {
        let layout = self.layout();
        let panel = if layout.own_axis.is_some() {
            PANEL_CAPTION + PANEL_PLOT
        } else {
            0
        };
        let legend = BAND_PAD + layout.legend_rows(self.series.len()) * LEGEND_ROW;
        let notes = if layout.notes.is_empty() {
            0
        } else {
            BAND_PAD + layout.notes.len() as u32 * NOTE_LINE
        };
        let height = HEADER + MAIN_PLOT + panel + legend + notes + BAND_PAD;
        let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (header, rest) = root.split_vertically(HEADER);
        header.draw(&Text::new(self.title, (LEFT, 8), ("sans-serif", 18)))?;
        header.draw(&Text::new(self.subtitle, (LEFT, 32), grey(12.0)))?;
        let (main, rest) = rest.split_vertically(MAIN_PLOT);
        let all: Vec<usize> = (0..self.series.len()).collect();
        // A series on its own scale has its values read in its panel, not labelled on zero here.
        let readable: Vec<usize> = all.iter().copied().filter(|i| !layout.own_scale.contains(i)).collect();
        self.plot(&main, &layout, &layout.y, &all, &readable)?;
        let rest = match &layout.own_axis {
            Some(axis) => {
                let (caption, rest) = rest.split_vertically(PANEL_CAPTION);
                let names: Vec<&str> = layout.own_scale.iter().map(|&i| self.series[i].name.as_str()).collect();
                caption.draw(&Text::new(
                    format!(
                        "{} again on {} own scale (flat on zero above: under {}% of its axis)",
                        and_list(&names),
                        if names.len() == 1 { "its" } else { "their" },
                        axis_label(NEAR_ZERO * 100.0)
                    ),
                    (LEFT, 4),
                    grey(FONT_SIZE),
                ))?;
                let (plot, rest) = rest.split_vertically(PANEL_PLOT);
                self.plot(&plot, &layout, axis, &layout.own_scale, &layout.own_scale)?;
                rest
            }
            None => rest,
        };
        let (legend_area, notes_area) = rest.split_vertically(legend);
        self.draw_legend(&legend_area, &layout)?;
        for (i, line) in layout.notes.iter().enumerate() {
            notes_area.draw(&Text::new(
                line.as_str(),
                (LEFT, (BAND_PAD + i as u32 * NOTE_LINE) as i32),
                grey(FONT_SIZE),
            ))?;
        }
        root.present()?;
        Ok(())
    }

    /// One plot of `series` on `area` with the y axis `axis`; the points of `labelled` near zero
    /// get their values printed.
    fn plot(
        &self,
        area: &Area,
        layout: &Layout,
        axis: &Axis,
        series: &[usize],
        labelled: &[usize],
    ) -> Result<(), DrawError> {
        let (x_low, x_high) = layout.x_range;
        let x = Ticked::new(RangedCoordf64::from(x_low..x_high), &layout.x_ticks);
        match axis {
            Axis::Linear { top, ticks } => {
                let y = Ticked::new(RangedCoordf64::from(0.0..*top), ticks);
                self.plot_on(
                    area,
                    layout,
                    x,
                    y,
                    series,
                    axis.near_zero().map(|limit| (limit, labelled)),
                )
            }
            Axis::Log { low, high, ticks } => {
                let y = Ticked::new(LogCoord::from((*low..*high).log_scale()), ticks);
                self.plot_on(area, layout, x, y, series, None)
            }
        }
    }

    fn plot_on<YR: Ranged<ValueType = f64>>(
        &self,
        area: &Area,
        layout: &Layout,
        x: Ticked<RangedCoordf64>,
        y: Ticked<YR>,
        series: &[usize],
        near_zero: Option<(f64, &[usize])>,
    ) -> Result<(), DrawError> {
        let mut chart = ChartBuilder::on(area)
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x, y)?;
        let x_label = |v: &f64| {
            if self.log2_x {
                power_of_two_label(*v)
            } else {
                axis_label(*v)
            }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .light_line_style(WHITE)
            .x_label_formatter(&x_label)
            .y_label_formatter(&|v| axis_label(*v))
            .draw()?;
        // Markers that would lie on each other (near-equal values at one x) are set side by side.
        let markers: Vec<(usize, (f64, f64))> = series
            .iter()
            .flat_map(|&i| layout.plotted[i].iter().flatten().map(move |&p| (i, p)))
            .collect();
        let dodged = dodges(&markers.iter().map(|(_, p)| chart.backend_coord(p)).collect::<Vec<_>>());
        for &i in series {
            let s = &self.series[i];
            let style = s.colour.stroke_width(2);
            // The line breaks at a point left off: one stretch per run of plotted points.
            for stretch in layout.plotted[i].split(Option::is_none) {
                let points: Vec<(f64, f64)> = stretch.iter().flatten().copied().collect();
                match self.dash(i) {
                    Some((dash, gap)) => {
                        chart.draw_series(DashedLineSeries::new(points, dash, gap, style))?;
                    }
                    None => {
                        chart.draw_series(LineSeries::new(points, style))?;
                    }
                }
            }
        }
        for (&(i, p), &dx) in markers.iter().zip(&dodged) {
            let colour = self.series[i].colour;
            chart.draw_series(std::iter::once(
                EmptyElement::at(p) + Circle::new((dx, 0), 3, colour.filled()),
            ))?;
            for shape in marker(i, colour, dx) {
                chart.draw_series(std::iter::once(EmptyElement::at(p) + shape))?;
            }
        }
        // Values too close to zero to read: printed beside the point, above or below it, where
        // no line, marker or other value crosses the text.
        if let Some((limit, labelled)) = near_zero {
            let to_pixel = |p: &(f64, f64)| {
                let (x, y) = chart.backend_coord(p);
                (x as f64, y as f64)
            };
            let lines: Vec<Vec<(f64, f64)>> = series
                .iter()
                .flat_map(|&i| layout.plotted[i].split(Option::is_none))
                .map(|stretch| stretch.iter().flatten().map(to_pixel).collect())
                .collect();
            let (_, y_pixels) = chart.plotting_area().get_pixel_range();
            let bounds = (y_pixels.start as f64, y_pixels.end as f64);
            let mut taken: Vec<Box2> = markers
                .iter()
                .zip(&dodged)
                .map(|((_, p), &dx)| {
                    let (x, y) = to_pixel(p);
                    Box2::around(x + dx as f64, y, MARKER + 1.0, MARKER + 1.0)
                })
                .collect();
            let mut labels = Vec::new();
            for &i in labelled {
                for &(px, py) in layout.plotted[i].iter().flatten() {
                    if py.abs() >= limit {
                        continue;
                    }
                    let text = format!("{py:.prec$}", prec = self.y_decimals);
                    let (x, y) = to_pixel(&(px, py));
                    let (offset, label) = place_label(x, y, text.chars().count(), bounds, &lines, &taken);
                    taken.push(label);
                    let corners = [
                        ((label.left - x) as i32, (label.top - y) as i32),
                        ((label.right - x) as i32, (label.bottom - y) as i32),
                    ];
                    labels.push((i, (px, py), text, offset, corners));
                }
            }
            for (i, point, text, offset, corners) in labels {
                let font = ("sans-serif", FONT_SIZE)
                    .into_font()
                    .color(&self.series[i].colour)
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                // On white: no grid line runs through the digits either.
                chart.draw_series(std::iter::once(
                    EmptyElement::at(point) + Rectangle::new(corners, WHITE.filled()),
                ))?;
                chart.draw_series(std::iter::once(
                    EmptyElement::at(point) + Text::new(text, (0, offset), font),
                ))?;
            }
        }
        Ok(())
    }

    /// The dash and gap of series `i`'s line in pixels, or None for a solid line: each dashed
    /// series of a chart its own pattern, so lines with near-equal values stay apart.
    fn dash(&self, i: usize) -> Option<(u32, u32)> {
        if !self.series[i].dashed {
            return None;
        }
        let rank = self.series[..i].iter().filter(|s| s.dashed).count();
        Some(DASHES[rank % DASHES.len()])
    }

    /// The legend: a grid under the plots, row by row in series order.
    fn draw_legend(&self, area: &Area, layout: &Layout) -> Result<(), DrawError> {
        for (i, s) in self.series.iter().enumerate() {
            let (row, column) = (i / layout.legend_columns, i % layout.legend_columns);
            let x = LEFT + (column as u32 * layout.legend_column_width) as i32;
            let y = (BAND_PAD + row as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            let style = s.colour.stroke_width(2);
            // The key is the line as drawn: its dash pattern and its marker's outline.
            let key = vec![(x, y), (x + LEGEND_LINE, y)];
            match self.dash(i) {
                Some((dash, gap)) => area.draw(&plotters::element::DashedPathElement::new(key, dash, gap, style))?,
                None => area.draw(&PathElement::new(key, style))?,
            }
            // The marker's outline (every point also has a dot, not repeated here: a circle in
            // the SVG is a data point).
            let middle = (x + LEGEND_LINE / 2, y);
            for shape in marker(i, s.colour, 0) {
                area.draw(&(EmptyElement::at(middle) + shape))?;
            }
            area.draw(&Text::new(
                s.name.as_str(),
                (x + LEGEND_KEY as i32, y),
                ("sans-serif", FONT_SIZE)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        Ok(())
    }
}

/// The outline drawn around the filled dot of series `i`'s points (and its legend key): none,
/// a square, a triangle, a diamond, a triangle pointing down, a cross, a plus, by the series'
/// place on the chart, so that lines lying on each other can still be told apart; `dx` pixels
/// right of the point.
fn marker(i: usize, colour: RGBColor, dx: i32) -> Vec<PathElement<(i32, i32)>> {
    let style = colour.stroke_width(1);
    let m = MARKER as i32;
    let outlines: Vec<Vec<(i32, i32)>> = match i % 7 {
        0 => vec![],
        1 => vec![vec![(-m, -m), (m, -m), (m, m), (-m, m), (-m, -m)]],
        2 => vec![vec![(0, -m - 1), (m + 1, m), (-m - 1, m), (0, -m - 1)]],
        3 => vec![vec![(0, -m - 1), (m + 1, 0), (0, m + 1), (-m - 1, 0), (0, -m - 1)]],
        4 => vec![vec![(0, m + 1), (m + 1, -m), (-m - 1, -m), (0, m + 1)]],
        5 => vec![vec![(-m, -m), (m, m)], vec![(-m, m), (m, -m)]],
        _ => vec![vec![(-m - 1, 0), (m + 1, 0)], vec![(0, -m - 1), (0, m + 1)]],
    };
    outlines
        .into_iter()
        .map(|o| PathElement::new(o.into_iter().map(|(x, y)| (x + dx, y)).collect::<Vec<_>>(), style))
        .collect()
}

/// The horizontal offset, in pixels, of each marker at `points` (pixels, in drawing order):
/// a marker that would cover one placed before it at the same x moves the least it must, right
/// before left, to lie beside it, but never as far as halfway to the next x (where it would stay
/// on the point, covered).
fn dodges(points: &[(i32, i32)]) -> Vec<i32> {
    let size = 2 * MARKER as i32 + 3;
    let mut xs: Vec<i32> = points.iter().map(|p| p.0).collect();
    xs.sort_unstable();
    xs.dedup();
    let gap = xs.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(i32::MAX);
    let reach = (gap / 2).saturating_sub(MARKER as i32 + 1);
    let mut placed: Vec<(i32, i32, i32)> = Vec::new();
    points
        .iter()
        .map(|&(x, y)| {
            let free = |dx: i32| {
                placed
                    .iter()
                    .all(|&(px, dpx, py)| px != x || (dpx - dx).abs() >= size || (py - y).abs() >= size)
            };
            let dx = (0..)
                .flat_map(|k: i32| [k * size, -(k + 1) * size])
                .take_while(|dx| dx.abs() <= reach.max(0))
                .find(|&dx| free(dx))
                .unwrap_or(0);
            placed.push((x, dx, y));
            dx
        })
        .collect()
}

/// A box in pixels: left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Box2 {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
}

impl Box2 {
    fn around(x: f64, y: f64, half_width: f64, half_height: f64) -> Box2 {
        Box2 {
            left: x - half_width,
            top: y - half_height,
            right: x + half_width,
            bottom: y + half_height,
        }
    }

    fn overlaps(&self, other: &Box2) -> bool {
        self.left < other.right && other.left < self.right && self.top < other.bottom && other.top < self.bottom
    }

    /// Does the segment from `a` to `b` pass through the box? (Liang-Barsky clipping.)
    fn crossed_by(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, a.0 - self.left),
            (dx, self.right - a.0),
            (-dy, a.1 - self.top),
            (dy, self.bottom - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let t = q / p;
                if p < 0.0 {
                    t0 = t0.max(t);
                } else {
                    t1 = t1.min(t);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// Where a value of `chars` characters printed for the point at pixel (`x`, `y`) goes: the
/// vertical offset of the text's bottom from the point, and the box the text takes. The first
/// place, nearest the point and above before below, where no line of `lines` crosses the text
/// and it covers nothing `taken`, within `bounds` (the plot's top and bottom pixel); the place
/// just above the point when there is none.
fn place_label(
    x: f64,
    y: f64,
    chars: usize,
    bounds: (f64, f64),
    lines: &[Vec<(f64, f64)>],
    taken: &[Box2],
) -> (i32, Box2) {
    let half_width = text_width(chars) as f64 / 2.0 + 1.0;
    let boxed = |offset: i32| {
        let bottom = y + offset as f64;
        Box2 {
            left: x - half_width,
            top: bottom - TEXT_HEIGHT - 1.0,
            right: x + half_width,
            bottom: bottom + 1.0,
        }
    };
    let step = TEXT_HEIGHT.ceil() as i32 + 3;
    let first_above = -(MARKER as i32) - 3;
    let first_below = MARKER as i32 + 3 + TEXT_HEIGHT.ceil() as i32;
    let candidates = (0..12).flat_map(|k| [first_above - k * step, first_below + k * step]);
    for offset in candidates {
        let label = boxed(offset);
        if label.top < bounds.0 || label.bottom > bounds.1 {
            continue;
        }
        let crossed = lines
            .iter()
            .any(|line| line.windows(2).any(|w| label.crossed_by(w[0], w[1])));
        if !crossed && !taken.iter().any(|t| t.overlaps(&label)) {
            return (offset, label);
        }
    }
    (first_above, boxed(first_above))
}

/// An axis with the ticks the layout chose (plotters' own `WithKeyPoints` cannot take a label
/// formatter on an f64 axis).
struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ticked<R> {
    fn new(inner: R, ticks: &[f64]) -> Self {
        Ticked {
            inner,
            ticks: ticks.to_vec(),
        }
    }
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    /// The ticks, labelled; no light mesh lines between them.
    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

fn grey(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&RGBColor(90, 90, 90))
}

fn text_width(chars: usize) -> u32 {
    (chars as f64 * CHAR_WIDTH).ceil() as u32
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[impl AsRef<str>]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", init.join(", "), last.as_ref())
        }
    }
}

/// Break `text` at spaces into lines of at most `width` characters (a longer word stands alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests;
