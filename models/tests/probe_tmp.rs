use cassalock_models::check::Limits;
use cassalock_models::*;
#[test]
fn probe() {
    let only: Option<String> = std::env::var("PROBE").ok();
    let mut specs = vec![];
    for model in ModelName::ALL {
        for fault in Fault::ALL {
            for mutant in [None, Some(Mutant::M1), Some(Mutant::K3)] {
                for fencing in [false, true] {
                    let mut s = Spec::new(model);
                    s.fault = fault;
                    s.mutant = mutant;
                    s.fencing = fencing;
                    specs.push(s);
                }
            }
        }
    }
    for spec in specs {
        let label = format!(
            "{} {} {:?} fencing={}",
            spec.model.name(),
            spec.fault.name(),
            spec.mutant.map(|m| m.name()),
            spec.fencing
        );
        if let Some(o) = &only {
            if !label.contains(o.as_str()) {
                continue;
            }
        }
        let Ok(model) = build(&spec) else { continue };
        let t = std::time::Instant::now();
        let report = model.check(Limits {
            max_states: 3_000_000,
            max_seconds: 120,
            checker_threads: 2,
        });
        let rows: Vec<String> = report
            .rows
            .iter()
            .map(|r| format!("{}={}", r.property.split(' ').next().unwrap(), r.verdict))
            .collect();
        println!(
            "{label:<45} {:>9} states {:>7.2}s | {} | {}",
            report.graph_states,
            t.elapsed().as_secs_f64(),
            rows.join(", "),
            report
                .figures
                .iter()
                .map(|f| f.0.clone())
                .collect::<Vec<_>>()
                .join("; ")
        );
        for e in &report.internal_errors {
            println!("   INTERNAL {e}");
        }
    }
}
