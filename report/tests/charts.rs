//! What every chart promises a reader, checked on the SVG it writes: the legend never covers
//! data, axes read 1, 10, 100, 1k (never "100000.0"), a value that does not exist is not drawn
//! and the chart says so, and a line flat on zero is drawn again on its own scale.

use std::path::PathBuf;

use cassalock_report::charts::{colour, LineChart, Series, Y};

const THREADS: [f64; 6] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

fn series(index: usize, name: &str, dashed: bool, values: [Option<f64>; 6]) -> Series {
    Series {
        name: name.into(),
        colour: colour(index),
        dashed,
        points: THREADS
            .iter()
            .zip(values)
            .map(|(&x, y)| (x, y.map_or_else(|| Y::Undefined("0 acquisitions".into()), Y::Value)))
            .collect(),
    }
}

fn chart(log_y: bool, decimals: usize, series: Vec<Series>) -> LineChart<'static> {
    LineChart {
        title: "a chart",
        subtitle: "its parameters",
        x_label: "threads",
        y_label: "value",
        x_unit: ("thread", "threads"),
        log2_x: true,
        log_y,
        y_decimals: decimals,
        series,
    }
}

/// The SVG of `chart`, written to a directory of its own and read back.
fn render(chart: &LineChart, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("cassalock-charts-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path: PathBuf = dir.join(name);
    chart.write(&path).expect("chart written");
    let svg = std::fs::read_to_string(&path).expect("svg");
    std::fs::remove_dir_all(&dir).ok();
    svg
}

/// The value of attribute `name` in an SVG element's text.
fn attribute(element: &str, name: &str) -> Option<f64> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = start + element[start..].find('"')?;
    element[start..end].parse().ok()
}

/// Every element of `kind` (`circle`, `text`, ...) with its text, until the next element.
fn elements<'a>(svg: &'a str, kind: &str) -> Vec<&'a str> {
    svg.split('<').filter(|e| e.starts_with(&format!("{kind} "))).collect()
}

/// The y of the text element that reads `text`.
fn text_y(svg: &str, text: &str) -> f64 {
    elements(svg, "text")
        .into_iter()
        .find(|e| e.split_once('>').map(|(_, t)| t.trim()) == Some(text))
        .and_then(|e| attribute(e, "y"))
        .unwrap_or_else(|| panic!("no text {text:?} in the chart"))
}

/// The lowest (largest y) pixel of any data point (every plotted value has a circle, and the lines
/// run between them).
fn lowest_data(svg: &str) -> f64 {
    elements(svg, "circle")
        .into_iter()
        .filter_map(|e| attribute(e, "cy"))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// Requests per acquisition and per handoff, as in fairness-requests.svg: eight series, a log axis.
fn requests() -> Vec<Series> {
    vec![
        series(
            0,
            "old GetLock per acquisition",
            false,
            [9.0, 12.0, 17.9, 30.8, 62.4, 241.3].map(Some),
        ),
        series(
            1,
            "queue GetLock per acquisition",
            false,
            [8.0, 10.0, 14.2, 22.8, 39.9, 73.4].map(Some),
        ),
        series(
            2,
            "old TryLock per acquisition",
            false,
            [Some(9.0), Some(23.8), Some(51.6), Some(266.4), Some(27337.7), None],
        ),
        series(
            3,
            "queue TryGetLock per acquisition",
            false,
            [9.0, 14.3, 26.0, 49.5, 96.6, 190.6].map(Some),
        ),
        series(
            0,
            "old GetLock per handoff",
            true,
            [None, Some(167.5), Some(55.6), Some(50.3), Some(79.4), Some(258.9)],
        ),
        series(
            1,
            "queue GetLock per handoff",
            true,
            [None, Some(10.1), Some(14.3), Some(22.9), Some(40.1), Some(73.8)],
        ),
    ]
}

#[test]
fn the_legend_lies_under_every_data_point() {
    let svg = render(&chart(true, 1, requests()), "legend.svg");
    let lowest = lowest_data(&svg);
    for name in ["old GetLock per acquisition", "queue GetLock per handoff"] {
        assert!(
            text_y(&svg, name) > lowest,
            "the legend entry {name:?} at y {} is above data at y {lowest}",
            text_y(&svg, name)
        );
    }
}

#[test]
fn a_log_axis_reads_1_10_100_1k() {
    let svg = render(&chart(true, 1, requests()), "log-axis.svg");
    for label in ["10", "100", "1k", "10k"] {
        text_y(&svg, label);
    }
    for text in elements(&svg, "text") {
        let shown = text.split_once('>').map_or("", |(_, t)| t.trim());
        assert!(!shown.ends_with(".0"), "an axis label reads {shown:?}");
    }
}

#[test]
fn a_linear_axis_reads_the_shortest_form() {
    let jain = vec![series(
        0,
        "old GetLock",
        false,
        [1.0, 0.941, 0.948, 0.911, 0.861, 0.62].map(Some),
    )];
    let svg = render(&chart(false, 3, jain), "linear-axis.svg");
    for label in ["0", "0.2", "0.4", "0.6", "0.8", "1"] {
        text_y(&svg, label);
    }
    assert!(!svg.contains("0.6000"), "a tick computed as 3 x 0.2 reads 0.6");
}

#[test]
fn an_undefined_value_breaks_the_line_and_is_named_under_the_chart() {
    let chart = chart(true, 1, requests());
    let svg = render(&chart, "undefined.svg");
    let notes = chart.notes();
    assert_eq!(
        notes,
        ["not plotted (0 acquisitions): old TryLock per acquisition at 32 threads; old GetLock per handoff and queue GetLock per handoff at 1 thread"]
    );
    // The note is on the chart (wrapped at spaces), and no point stands for the missing values.
    let on_chart: Vec<&str> = elements(&svg, "text")
        .into_iter()
        .filter_map(|e| e.split_once('>').map(|(_, t)| t.trim()))
        .collect();
    assert!(
        on_chart.join(" ").contains(&notes[0]),
        "the note is drawn: {on_chart:?}"
    );
    let defined: usize = chart
        .series
        .iter()
        .map(|s| s.points.iter().filter(|p| matches!(p.1, Y::Value(_))).count())
        .sum();
    assert_eq!(elements(&svg, "circle").len(), defined, "one point per defined value");
}

#[test]
fn zero_on_a_log_axis_is_not_drawn() {
    let runs = vec![series(
        2,
        "old TryLock",
        false,
        [189.0, 5.0, 6.0, 3.0, 1.0, 0.0].map(Some),
    )];
    let chart = chart(true, 0, runs);
    assert_eq!(
        chart.notes(),
        ["not plotted (0 has no place on a log axis): old TryLock at 32 threads"]
    );
    let svg = render(&chart, "zero-on-log.svg");
    assert_eq!(elements(&svg, "circle").len(), 5);
}

#[test]
fn a_line_flat_on_zero_gets_its_own_scale_and_near_zero_values_are_printed() {
    let overtakes = vec![
        series(
            0,
            "old GetLock",
            false,
            [0.0, 0.926, 2.334, 4.626, 9.01, 16.441].map(Some),
        ),
        series(
            1,
            "queue GetLock",
            false,
            [0.0, 0.005, 0.003, 0.036, 0.108, 0.306].map(Some),
        ),
    ];
    let svg = render(&chart(false, 3, overtakes), "own-scale.svg");
    let caption = "queue GetLock again on its own scale (flat on zero above: under 3% of its axis)";
    let panel = text_y(&svg, caption);
    // The panel has a y axis of its own, labelled up to the series' largest value.
    assert!(text_y(&svg, "0.3") > panel, "the panel's axis reaches 0.3");
    // Old GetLock's 0 at one thread is on zero: its value is printed.
    text_y(&svg, "0.000");

    let throughput = vec![
        series(0, "old GetLock", false, [3.13, 2.94, 2.79, 2.56, 2.12, 0.98].map(Some)),
        series(2, "old TryLock", false, [3.13, 2.32, 2.12, 0.84, 0.02, 0.0].map(Some)),
    ];
    let svg = render(&chart(false, 2, throughput), "near-zero.svg");
    text_y(&svg, "0.02");
    text_y(&svg, "0.00");
    assert!(!svg.contains("own scale"), "no series lies wholly on zero");
}

#[test]
fn a_chart_is_a_function_of_its_data() {
    let first = render(&chart(true, 1, requests()), "same-1.svg");
    let second = render(&chart(true, 1, requests()), "same-2.svg");
    assert!(first == second, "two charts of the same data differ");
}
