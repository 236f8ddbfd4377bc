use super::*;

#[test]
fn axis_labels_are_the_shortest_exact_form() {
    let labels: Vec<String> = [
        0.0,
        0.5,
        2.5,
        50.0,
        0.1 * 3.0,
        100.0,
        1000.0,
        1500.0,
        10_000.0,
        100_000.0,
        1e6,
        -0.0,
    ]
    .map(axis_label)
    .to_vec();
    assert_eq!(
        labels,
        ["0", "0.5", "2.5", "50", "0.3", "100", "1k", "1.5k", "10k", "100k", "1M", "0"]
    );
}

#[test]
fn log_ticks_are_powers_of_ten_and_fill_in_short_ranges() {
    assert_eq!(log_ticks(0.5, 414.0), [1.0, 10.0, 100.0]);
    assert_eq!(log_ticks(4.0, 54_000.0), [10.0, 100.0, 1000.0, 10_000.0]);
    assert_eq!(log_ticks(150.0, 1200.0), [200.0, 500.0, 1000.0]);
}

#[test]
fn linear_ticks_are_round_steps_from_zero() {
    assert_eq!(
        linear_ticks(0.0, 1.12, 8),
        [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    );
    assert_eq!(linear_ticks(0.0, 18.4, 8), [0.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5]);
}

#[test]
fn wrap_breaks_at_spaces() {
    assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
    assert_eq!(wrap("aaaaaaa b", 3), ["aaaaaaa", "b"]);
}

/// The SVG of `chart`, written to a directory of its own and read back.
fn svg_of(chart: &LineChart, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("cassalock-charts-unit-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    chart.write(&path).expect("chart written");
    let svg = std::fs::read_to_string(&path).expect("svg");
    std::fs::remove_dir_all(&dir).ok();
    svg
}

/// Each element of `kind` ("polyline", "text", ...) up to the next element.
fn elements<'a>(svg: &'a str, kind: &str) -> Vec<&'a str> {
    svg.split('<').filter(|e| e.starts_with(&format!("{kind} "))).collect()
}

fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + element[start..].find('"')?;
    Some(&element[start..end])
}

fn hex(colour: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2)
}

/// The points of a polyline, in pixels.
fn polyline_points(element: &str) -> Vec<(f64, f64)> {
    attribute(element, "points")
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|p| p.split_once(','))
        .map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap()))
        .collect()
}

fn chart_of(series: Vec<Series>, log_y: bool) -> LineChart<'static> {
    LineChart {
        title: "a chart",
        subtitle: "its parameters",
        x_label: "threads",
        y_label: "value",
        x_unit: ("thread", "threads"),
        log2_x: true,
        log_y,
        y_decimals: 2,
        series,
    }
}

fn series_of(index: usize, dashed: bool, values: &[f64]) -> Series {
    Series {
        name: format!("series {index}"),
        colour: colour_of_sixteen(index),
        dashed,
        points: values
            .iter()
            .enumerate()
            .map(|(k, &v)| ((1u32 << k) as f64, Y::Value(v)))
            .collect(),
    }
}

#[test]
fn dashed_lines_with_near_equal_values_each_have_their_own_dash_and_marker() {
    // Three stores at about 74 acquisitions/s, as Redis SET NX, Redlock and Memcached were.
    let near: Vec<Series> = [
        [73.0, 74.0, 74.5, 73.5],
        [74.0, 74.5, 75.0, 74.0],
        [73.5, 74.0, 74.0, 73.0],
    ]
    .iter()
    .enumerate()
    .map(|(i, values)| series_of(i, true, values))
    .collect();
    let colours: Vec<String> = near.iter().map(|s| hex(s.colour)).collect();
    let svg = svg_of(&chart_of(near, true), "near-equal.svg");
    // Per series, read from the SVG: its most common dash length, and its marker outlines
    // (the number of corners of each polyline that is not a dash, and whether it has a rect).
    let signatures: Vec<(i64, Vec<usize>, bool)> = colours
        .iter()
        .map(|colour| {
            let stroke = format!("stroke=\"{colour}\"");
            let mut dash_lengths: Vec<i64> = Vec::new();
            let mut outlines: Vec<usize> = Vec::new();
            for line in elements(&svg, "polyline").into_iter().filter(|e| e.contains(&stroke)) {
                let points = polyline_points(line);
                if points.len() == 2 {
                    let (dx, dy) = (points[1].0 - points[0].0, points[1].1 - points[0].1);
                    dash_lengths.push(dx.hypot(dy).round() as i64);
                } else {
                    outlines.push(points.len());
                }
            }
            let mode = dash_lengths
                .iter()
                .copied()
                .max_by_key(|d| (dash_lengths.iter().filter(|e| *e == d).count(), *d))
                .unwrap_or(0);
            outlines.sort_unstable();
            outlines.dedup();
            let rect = elements(&svg, "rect").iter().any(|e| e.contains(&stroke));
            (mode, outlines, rect)
        })
        .collect();
    for (a, first) in signatures.iter().enumerate() {
        for second in &signatures[a + 1..] {
            assert_ne!(first.0, second.0, "two series share a dash: {signatures:?}");
            assert!(
                (first.1.clone(), first.2) != (second.1.clone(), second.2),
                "two series share a marker: {signatures:?}"
            );
        }
    }
    assert!(
        colours.iter().enumerate().all(|(i, c)| !colours[..i].contains(c)),
        "colours repeat: {colours:?}"
    );
}

#[test]
fn a_value_printed_near_zero_is_not_crossed_by_a_line() {
    // The near-zero points of series 1 are printed; series 2 runs 0.3 above them, where the
    // value would be printed just above its point.
    let series = vec![
        series_of(0, false, &[10.0, 10.0, 10.0, 10.0, 10.0]),
        series_of(1, false, &[0.1, 0.1, 0.1, 0.1, 2.0]),
        series_of(2, false, &[0.4, 0.4, 0.4, 0.4, 0.4]),
    ];
    let strokes: Vec<String> = series.iter().map(|s| format!("stroke=\"{}\"", hex(s.colour))).collect();
    let labels_fill = format!("fill=\"{}\"", hex(series[1].colour));
    let svg = svg_of(&chart_of(series, false), "labels.svg");
    let segments: Vec<((f64, f64), (f64, f64))> = elements(&svg, "polyline")
        .into_iter()
        .filter(|e| strokes.iter().any(|s| e.contains(s.as_str())))
        .flat_map(|e| {
            let points = polyline_points(e);
            points.windows(2).map(|w| (w[0], w[1])).collect::<Vec<_>>()
        })
        .collect();
    let labels: Vec<&str> = elements(&svg, "text")
        .into_iter()
        .filter(|e| e.contains(labels_fill.as_str()) && e.split_once('>').map(|(_, t)| t.trim()) == Some("0.10"))
        .collect();
    assert_eq!(labels.len(), 4, "each near-zero point is printed");
    for label in labels {
        let x: f64 = attribute(label, "x").unwrap().parse().unwrap();
        let y: f64 = attribute(label, "y").unwrap().parse().unwrap();
        // The text's bottom is at y (anchored at the bottom), its middle half a height above.
        let middle = y - TEXT_HEIGHT / 2.0;
        for &(a, b) in &segments {
            if (a.0.min(b.0)..=a.0.max(b.0)).contains(&x) && a.0 != b.0 {
                let line_y = a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0);
                assert!(
                    (line_y - middle).abs() >= TEXT_HEIGHT / 2.0,
                    "a line at y {line_y} crosses the value printed at ({x}, {y})"
                );
            }
        }
    }
}
