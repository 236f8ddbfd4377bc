//! The memory guard of `check`: a run whose process passes `Limits::max_memory_bytes` is cut
//! and says so; it never reports "holds" for what it did not explore. Its own test binary: the
//! guard's flag is process-wide (resident memory is), and would cut checks running beside it.

use cassalock::registry::Lock;
use cassalock_models::check::{Limits, StoppedBy, Verdict};
use cassalock_models::{build, Fault, ModelName, Runnable, Spec};

/// Three threads: a world of half a second, whose whole run the guard must leave alone, and
/// which a 1 MiB limit cuts at once.
fn skewed_getlock() -> Runnable {
    build(&Spec {
        threads: Some(3),
        acquisitions: Some(1),
        fault: Fault::Skew,
        ..Spec::new(ModelName::Lock(Lock::Queue))
    })
    .expect("a valid spec")
}

#[test]
fn a_check_past_its_memory_limit_is_bounded_and_names_the_memory() {
    let model = skewed_getlock();
    let whole = model.check(Limits::default());
    assert!(whole.complete, "{whole}");
    assert_eq!(whole.stopped_by, None);
    // One MiB: the process is past it before the first state is expanded.
    let cut = model.check(Limits {
        max_memory_bytes: 1 << 20,
        ..Limits::default()
    });
    assert!(!cut.complete, "{cut}");
    assert_eq!(cut.stopped_by, Some(StoppedBy::Memory), "{cut}");
    assert!(cut.internal_errors.is_empty(), "{:?}", cut.internal_errors);
    assert!(cut.stateright_states < whole.stateright_states, "{cut}");
    for row in &cut.rows {
        match (&row.verdict, row.kind) {
            (Verdict::Violated, _) => {}
            // stateright's properties, and our graph's liveness obligations, which it also cut.
            (Verdict::Bounded(reason), "always") => assert!(reason.contains("memory limit of 1 MiB"), "{reason}"),
            (Verdict::Bounded(reason), "liveness") => assert!(reason.contains("memory limit"), "{reason}"),
            (other, _) => panic!("{}: {other} after a run cut by memory", row.property),
        }
    }
    assert!(cut.graph_states < whole.graph_states, "our graph stopped too: {cut}");
    // The flag is cleared when the check ends: the next one runs whole again.
    let again = model.check(Limits::default());
    assert!(again.complete, "{again}");
    assert_eq!(again.stateright_states, whole.stateright_states);
}
