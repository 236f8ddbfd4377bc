use super::*;

#[test]
fn numbers_print_in_their_shortest_form() {
    assert_eq!(shortest(50.0, 6), "50");
    assert_eq!(shortest(2.5, 6), "2.5");
    assert_eq!(shortest(0.1 + 0.2, 6), "0.3");
    assert_eq!(shortest(-0.0, 6), "0");
    assert_eq!(signed_seconds(30_000_000), "+30 s");
    assert_eq!(signed_seconds(-5_000_000), "\u{2212}5 s");
    assert_eq!(signed_seconds(14_200_000), "+14.2 s");
}

#[test]
fn a_clock_splits_at_its_jumps() {
    let spec = ClockSpec {
        offset_us: 30_000_000,
        jumps: vec![(5_800, -5_000_000), (90_000, 1_000_000), (500_000, 1)],
        ..ClockSpec::default()
    };
    let end = Duration::from_secs(100);
    let stretches = clock_stretches(&spec, end);
    assert_eq!(
        stretches,
        vec![
            ClockStretch {
                from: Duration::ZERO,
                to: Duration::from_millis(5_800),
                ahead_us: 30_000_000,
                jump_us: None,
            },
            ClockStretch {
                from: Duration::from_millis(5_800),
                to: Duration::from_secs(90),
                ahead_us: 25_000_000,
                jump_us: Some(-5_000_000),
            },
            ClockStretch {
                from: Duration::from_secs(90),
                to: end,
                ahead_us: 26_000_000,
                jump_us: Some(1_000_000),
            },
        ],
        "the jump after the run's end is left out"
    );
    assert_eq!(
        clock_labels(&spec, &stretches[1]),
        vec!["clock jumps \u{2212}5 s: +25 s ahead", "\u{2212}5 s"]
    );
}

#[test]
fn lanes_are_named_by_node_client_id_or_thread() {
    assert_eq!(Lane::parse("c3"), Some(Lane::Client(3)));
    assert_eq!(Lane::parse("c3-1"), Some(Lane::Client(3)));
    assert_eq!(Lane::parse("c12-0:4"), Some(Lane::Client(12)));
    assert_eq!(Lane::parse("r2"), Some(Lane::Replica(2)));
    assert_eq!(Lane::parse("ts0"), Some(Lane::TimeReplica(0)));
    assert_eq!(Lane::parse("resource"), None);
    assert!(Lane::Client(10) < Lane::Replica(0) && Lane::Client(2) < Lane::Client(10));
}

/// A real run's record names a believer by its locker, not its node: T1-server's mark goes on
/// the lane of the node it acquired on, as its holding bar does.
#[test]
fn a_t1_server_mark_of_a_real_run_is_drawn_on_the_node_its_believer_acquired_on() {
    use cassalock_judge::event::{Driver, ObservedRules, RunFacts};
    let at = |ms: u64, what: What| Event {
        at_ns: ms * 1_000_000,
        node: "c0".into(),
        clock_us: Some(ms * 1000),
        what,
    };
    let events = vec![
        at(
            1,
            What::Acquired {
                thread: "r7-p0-t0".into(),
                lock: "L".into(),
                token: "t".into(),
                valid_until_us: None,
                valid_until_at_ns: None,
            },
        ),
        at(
            5,
            What::ServerHolder {
                lock: "L".into(),
                holder: None,
                threads: Vec::new(),
                gone_at_ns: None,
            },
        ),
        at(
            6,
            What::Releasing {
                thread: "r7-p0-t0".into(),
                lock: "L".into(),
            },
        ),
    ];
    let header = Header::new(
        Driver::Real,
        "redis-set-nx",
        Clock::WallSinceEpoch,
        RunFacts {
            clients: 1,
            end_ns: 7_000_000,
            rules: Rules::Observed(ObservedRules {
                fencing: false,
                lease_lost_ends_it: false,
                call_bound_ms: None,
            }),
            ..RunFacts::default()
        },
    );
    let record = cassalock_judge::event::Record {
        header: header.clone(),
        events: events.clone(),
    };
    let judgement = cassalock_judge::judge(&record);
    let picture = Picture::new(&header, &events, &judgement);
    let unnamed: Vec<(Glyph, Lane)> = glyphs::marks(&picture)
        .into_iter()
        .filter(|(glyph, ..)| *glyph == Glyph::Unnamed)
        .map(|(glyph, _, lane)| (glyph, lane))
        .collect();
    assert_eq!(unnamed, [(Glyph::Unnamed, Lane::Client(0))]);
}

/// A client program's record: its library's lost notice and the resource's refusal of its
/// stale write are the marks C-lost and fencing are judged by; both are drawn on its lane, the
/// only holder's refused write as C-token's.
#[test]
fn a_client_programs_lost_notice_and_refused_writes_are_drawn() {
    use cassalock_judge::event::{Driver, ObservedRules, RunFacts};
    let at = |ms: u64, node: &str, what: What| Event {
        at_ns: ms * 1_000_000,
        node: node.into(),
        clock_us: Some(ms * 1000),
        what,
    };
    let write = |client: &str, token: &str, accepted: bool, stale: bool| What::Write {
        client: Some(client.into()),
        lock: Some("L".into()),
        token: token.into(),
        phase: None,
        accepted: Some(accepted),
        stale: Some(stale),
        acquisition: None,
    };
    let events = vec![
        at(
            2,
            "c1",
            What::LeaseLost {
                thread: "c1-1".into(),
                lock: "L".into(),
                why: "the connection state is LOST".into(),
            },
        ),
        at(3, "resource", write("c1", "1", false, true)),
        at(4, "resource", write("c2", "2", false, false)),
        at(5, "resource", write("c2", "2", true, false)),
    ];
    let header = Header::new(
        Driver::Real,
        "a client program",
        Clock::SimulatedSinceStart,
        RunFacts {
            clients: 3,
            end_ns: 7_000_000,
            rules: Rules::Observed(ObservedRules {
                fencing: true,
                lease_lost_ends_it: false,
                call_bound_ms: None,
            }),
            ..RunFacts::default()
        },
    );
    let record = cassalock_judge::event::Record {
        header: header.clone(),
        events: events.clone(),
    };
    let picture = Picture::new(&header, &events, &cassalock_judge::judge(&record));
    let mut marks: Vec<(Glyph, u128, Lane)> = glyphs::marks(&picture)
        .into_iter()
        .map(|(glyph, at, lane)| (glyph, at.as_millis(), lane))
        .collect();
    marks.sort_by_key(|(_, at, _)| *at);
    assert_eq!(
        marks,
        [
            (Glyph::LostSeen, 2, Lane::Client(1)),
            (Glyph::StaleRefused, 3, Lane::Client(1)),
            (Glyph::LegitRefused, 4, Lane::Client(2)),
        ]
    );
}

/// A model's axis counts steps: whole steps are labelled, never a half step between two.
#[test]
fn a_model_s_step_axis_labels_whole_steps_only() {
    use cassalock_judge::event::{Driver, ObservedRules, RunFacts};
    let svg_of = |clock: Clock| {
        let at = |step: u64, what: What| Event {
            at_ns: step * 1_000_000_000,
            node: "c0".into(),
            clock_us: None,
            what,
        };
        let events = vec![
            at(
                1,
                What::Acquired {
                    thread: "c0-1".into(),
                    lock: "L".into(),
                    token: "t".into(),
                    valid_until_us: None,
                    valid_until_at_ns: None,
                },
            ),
            at(
                2,
                What::Releasing {
                    thread: "c0-1".into(),
                    lock: "L".into(),
                },
            ),
        ];
        let header = Header::new(
            Driver::Real,
            "redis-set-nx",
            clock,
            RunFacts {
                clients: 1,
                end_ns: 3_000_000_000,
                rules: Rules::Observed(ObservedRules {
                    fencing: false,
                    lease_lost_ends_it: false,
                    call_bound_ms: None,
                }),
                ..RunFacts::default()
            },
        );
        let record = cassalock_judge::event::Record {
            header: header.clone(),
            events: events.clone(),
        };
        let judgement = cassalock_judge::judge(&record);
        let path = std::env::temp_dir().join(format!("cassalock-steps-{}-{clock:?}.svg", std::process::id()));
        write_record_svg(&Picture::new(&header, &events, &judgement), &path).expect("drawn");
        let svg = std::fs::read_to_string(&path).expect("written");
        let _ = std::fs::remove_file(&path);
        svg
    };
    // Every text the picture writes, trimmed.
    let texts = |svg: &str| -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|element| element.split_once('>'))
            .filter_map(|(_, rest)| rest.split_once("</text>"))
            .map(|(text, _)| text.trim().to_owned())
            .collect()
    };
    let steps = texts(&svg_of(Clock::ModelSteps));
    assert!(
        steps.iter().any(|t| t == "1") && steps.iter().any(|t| t == "2"),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|t| t == "0.5" || t == "1.5"),
        "no half step: {steps:?}"
    );
    // Seconds keep their fractions.
    let seconds = texts(&svg_of(Clock::SimulatedSinceStart));
    assert!(seconds.iter().any(|t| t == "0.5" || t == "1.5"), "{seconds:?}");
}
