//! Line charts as SVG (plotters). Output is a pure function of the data: same data, same bytes.

use std::path::Path;

use plotters::prelude::*;

use crate::ReportError;

/// What plotters' SVG backend fails with.
type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// One line on a chart.
pub struct Series {
    pub name: String,
    pub colour: RGBColor,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// A chart: x on a log-2 axis (thread counts) or a linear one, y linear or log.
pub struct LineChart<'a> {
    pub title: &'a str,
    /// Under the title: the parameters and seeds.
    pub subtitle: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// x on a log-2 axis labelled at powers of two (thread counts); otherwise linear.
    pub log2_x: bool,
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// On a log-2 axis the chart plots log2(x); label the whole exponents with 2^exponent.
fn power_of_two_label(exponent: &f64) -> String {
    let rounded = exponent.round();
    if (exponent - rounded).abs() < 1e-6 && (0.0..=62.0).contains(&rounded) {
        format!("{}", 1u64 << rounded as u32)
    } else {
        String::new()
    }
}

fn plain_label(x: &f64) -> String {
    format!("{x}")
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

impl LineChart<'_> {
    /// Draw the chart into the SVG file `path`.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        self.draw(path).map_err(|source| ReportError::Chart {
            path: path.to_path_buf(),
            source,
        })
    }

    fn draw(&self, path: &Path) -> Result<(), DrawError> {
        let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
        root.fill(&WHITE)?;
        let (header, body) = root.split_vertically(54);
        header.draw(&Text::new(self.title, (20, 8), ("sans-serif", 18)))?;
        header.draw(&Text::new(
            self.subtitle,
            (20, 32),
            ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)),
        ))?;
        let to_x = |x: f64| if self.log2_x { x.max(1e-9).log2() } else { x };
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| to_x(p.0)))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| y.is_finite())
            .collect();
        let x_min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let x_max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (x_min, x_max) = if x_min.is_finite() {
            (x_min, x_max.max(x_min + 1.0))
        } else {
            (0.0, 1.0)
        };
        let y_max = ys.iter().copied().fold(0.0, f64::max);
        let pad = (x_max - x_min) * 0.05;
        let x_range = (x_min - pad)..(x_max + pad);
        // One label per whole exponent on a log-2 axis; a handful on a linear one.
        let x_labels = if self.log2_x {
            (x_max - x_min).round() as usize + 1
        } else {
            8
        };
        let x_formatter: &dyn Fn(&f64) -> String = if self.log2_x { &power_of_two_label } else { &plain_label };
        let mut builder = ChartBuilder::on(&body);
        builder.margin(14).x_label_area_size(40).y_label_area_size(70);
        if self.log_y {
            let positive = ys.iter().copied().filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min);
            let y_min = if positive.is_finite() { positive / 2.0 } else { 0.001 };
            let mut chart = builder.build_cartesian_2d(x_range, (y_min..(y_max.max(y_min) * 2.0)).log_scale())?;
            chart
                .configure_mesh()
                .x_desc(self.x_label)
                .y_desc(self.y_label)
                .light_line_style(WHITE)
                .x_labels(x_labels)
                .x_label_formatter(x_formatter)
                .draw()?;
            self.draw_series(&mut chart, to_x)?;
        } else {
            let y_top = if y_max > 0.0 { y_max * 1.12 } else { 1.0 };
            let mut chart = builder.build_cartesian_2d(x_range, 0.0..y_top)?;
            chart
                .configure_mesh()
                .x_desc(self.x_label)
                .y_desc(self.y_label)
                .light_line_style(WHITE)
                .x_labels(x_labels)
                .x_label_formatter(x_formatter)
                .draw()?;
            self.draw_series(&mut chart, to_x)?;
        }
        root.present()?;
        Ok(())
    }

    fn draw_series<'a, DB: DrawingBackend + 'a, X, Y>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
        to_x: impl Fn(f64) -> f64,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
    where
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        for series in &self.series {
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|(_, y)| y.is_finite())
                .map(|&(x, y)| (to_x(x), y))
                .collect();
            let style = series.colour.stroke_width(2);
            let drawn = if series.dashed {
                chart.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))
            } else {
                chart.draw_series(LineSeries::new(points.clone(), style))
            };
            let (colour, dashed) = (series.colour, series.dashed);
            drawn?.label(series.name.clone()).legend(move |(x, y)| {
                // A dashed series gets a dashed key: two short strokes with a gap.
                let gap = if dashed { 4 } else { 0 };
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (7, 0)], colour.stroke_width(2))
                    + PathElement::new(vec![(7 + gap, 0), (18, 0)], colour.stroke_width(2))
            });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, series.colour.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 12))
            .draw()?;
        Ok(())
    }
}
