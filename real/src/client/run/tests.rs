use super::*;

#[test]
fn the_resource_refuses_a_lower_fencing_token_and_only_counts_a_late_random_one() {
    let mut fenced = Resource::default();
    assert_eq!(fenced.write(Order::Fencing(1, "5".into()), true), (true, false));
    assert_eq!(fenced.write(Order::Fencing(1, "4".into()), true), (false, true));
    assert_eq!(fenced.write(Order::Fencing(2, "10".into()), true), (true, false));
    let mut random = Resource::default();
    assert_eq!(random.write(Order::Acquired(20, 1), false), (true, false));
    assert_eq!(random.write(Order::Acquired(10, 0), false), (true, true));
    assert_eq!(random.write(Order::Acquired(30, 0), false), (true, false));
}

fn spec() -> ClientSpec {
    ClientSpec {
        command: "true".into(),
        clients: 2,
        acquisitions: 3,
        call: Call::Lock,
        try_wait_ms: 100,
        lease_ms: Some(1000),
        hold_ms: 10,
        max_wait: Duration::from_secs(1),
        start_timeout: Duration::from_secs(1),
        run_limit: None,
        fencing: true,
        pause: None,
        server_fault: None,
        proxy: Vec::new(),
        lock_name: "k".into(),
        next_caller_wait_ms: Some(1000),
        server_reading: None,
    }
}

#[test]
fn a_spec_is_refused_with_the_flag_named() {
    assert_eq!(check(&spec()), Ok(()));
    for (bad, flag) in [
        (ClientSpec { clients: 0, ..spec() }, "--threads 0"),
        (ClientSpec { clients: 65, ..spec() }, "--threads 65"),
        (
            ClientSpec {
                acquisitions: 200_000,
                ..spec()
            },
            "--acquisitions 200000",
        ),
        (
            ClientSpec {
                lease_ms: Some(0),
                ..spec()
            },
            "--lease-ms 0",
        ),
        (
            ClientSpec {
                command: " ".into(),
                ..spec()
            },
            "--client needs",
        ),
        (
            ClientSpec {
                pause: Some(Pause {
                    at_acquisition: 7,
                    ms: 10,
                    whom: Paused::Holder,
                    how: Halt::Stopped,
                }),
                ..spec()
            },
            "--pause-at 7",
        ),
        (
            ClientSpec {
                clients: 1,
                pause: Some(Pause {
                    at_acquisition: 1,
                    ms: 10,
                    whom: Paused::Waiter,
                    how: Halt::Stopped,
                }),
                ..spec()
            },
            "--pause-waiter-ms needs a waiter",
        ),
        (
            ClientSpec {
                pause: Some(Pause {
                    at_acquisition: 1,
                    ms: 10,
                    whom: Paused::Holder,
                    how: Halt::CutOff,
                }),
                ..spec()
            },
            "--cut-off-holder-ms needs --proxy",
        ),
        (
            ClientSpec {
                proxy: vec!["127.0.0.1:16380".into()],
                ..spec()
            },
            "--proxy 127.0.0.1:16380 does not appear",
        ),
    ] {
        let refused = check(&bad).unwrap_err();
        assert!(refused.0.starts_with(flag), "{refused}");
    }
}
