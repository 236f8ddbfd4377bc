use cassalock_models::check::Limits;
use cassalock_models::*;
#[test]
fn one() {
    let model = match std::env::var("M").unwrap().as_str() {
        "getlock" => ModelName::GetLock,
        "trygetlock" => ModelName::TryGetLock,
        "old" => ModelName::Old,
        "globaltime" => ModelName::GlobalTime,
        _ => ModelName::Lemma,
    };
    let mut spec = Spec::new(model);
    spec.fault = Fault::ALL
        .into_iter()
        .find(|f| f.name() == std::env::var("F").unwrap_or("none".into()))
        .unwrap();
    spec.mutant = match std::env::var("MU").ok().as_deref() {
        Some("m1") => Some(Mutant::M1),
        Some("k3") => Some(Mutant::K3),
        _ => None,
    };
    spec.fencing = std::env::var("FENCE").is_ok();
    spec.threads = std::env::var("N").ok().map(|n| n.parse().unwrap());
    spec.acquisitions = std::env::var("K").ok().map(|n| n.parse().unwrap());
    let report = build(&spec).unwrap().check(Limits {
        max_states: 3_000_000,
        max_seconds: 120,
        checker_threads: 2,
    });
    println!("{report}");
}
