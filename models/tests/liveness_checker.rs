//! The fair-cycle check on toy models whose answer is known by construction.

use cassalock_models::liveness::{Fairness, Graph, LivenessVerdict, Obligation};
use stateright::Model;

/// A toy: a state is a small number; each action is (actor, target state).
#[derive(Clone)]
struct Toy {
    /// (from, actor, to) edges; actor `None` is unfair (a fault injector).
    edges: Vec<(u8, Option<u8>, u8)>,
    /// States where the obligation is open.
    open: Vec<u8>,
    bound: Option<u8>,
}

impl Model for Toy {
    type State = u8;
    type Action = (Option<u8>, u8);

    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }

    fn actions(&self, state: &u8, actions: &mut Vec<(Option<u8>, u8)>) {
        for &(from, actor, to) in &self.edges {
            if from == *state {
                actions.push((actor, to));
            }
        }
    }

    fn next_state(&self, _: &u8, action: (Option<u8>, u8)) -> Option<u8> {
        Some(action.1)
    }
}

impl Fairness for Toy {
    fn fair_actor(&self, action: &(Option<u8>, u8)) -> Option<u8> {
        action.0
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        format!("a{actor}")
    }

    fn at_bound(&self, state: &u8) -> bool {
        self.bound == Some(*state)
    }
}

fn open(model: &Toy, state: &u8, _: usize) -> bool {
    model.open.contains(state)
}

fn verdict(toy: &Toy) -> LivenessVerdict<(Option<u8>, u8)> {
    let obligations = vec![Obligation {
        name: "X waits",
        count: 1,
        open,
        subject: |_| "the waiter".into(),
    }];
    Graph::build(toy, &obligations, 1000).check(&obligations, 0)
}

#[test]
fn a_deadlock_with_the_obligation_open_is_reported() {
    // 0 -> 1, and 1 has no successor while the obligation is open.
    let toy = Toy {
        edges: vec![(0, Some(0), 1)],
        open: vec![0, 1],
        bound: None,
    };
    let LivenessVerdict::Violated(lasso) = verdict(&toy) else {
        panic!("a deadlock")
    };
    assert!(lasso.is_deadlock());
    assert_eq!(lasso.stem, [(Some(0), 1)]);
}

#[test]
fn a_cycle_that_starves_a_continuously_enabled_actor_is_not_a_counterexample() {
    // Actor 0 spins 0 -> 0 for ever while actor 1, enabled at 0 all along, could discharge the
    // obligation (0 -> 2). Weak fairness makes actor 1 move eventually: no violation.
    let toy = Toy {
        edges: vec![(0, Some(0), 0), (0, Some(1), 2)],
        open: vec![0],
        bound: None,
    };
    assert!(
        matches!(verdict(&toy), LivenessVerdict::Holds),
        "weak fairness rules out the spin"
    );
}

#[test]
fn a_fair_cycle_that_never_discharges_is_reported_as_a_lasso() {
    // Two actors take turns 0 -> 1 -> 0; each is disabled half the time, both step: fair.
    // The obligation is discharged only by an unfair fault (1 -> 2), which need never happen.
    let toy = Toy {
        edges: vec![(0, Some(0), 1), (1, Some(1), 0), (1, None, 2)],
        open: vec![0, 1],
        bound: None,
    };
    let LivenessVerdict::Violated(lasso) = verdict(&toy) else {
        panic!("a fair cycle")
    };
    assert!(!lasso.is_deadlock());
    let actors: Vec<Option<u8>> = lasso.cycle.iter().map(|a| a.0).collect();
    assert!(actors.contains(&Some(0)) && actors.contains(&Some(1)), "{actors:?}");
}

#[test]
fn an_actor_enabled_everywhere_in_the_cycle_must_step_in_the_printed_cycle() {
    // The SCC {0, 1, 2}: actor 0 cycles 0->1->0; actor 1 is enabled in 0 and 1 (moving 0->2,
    // 1->2) and actor 0 moves 2->0. A fair cycle must include a step of actor 1.
    let toy = Toy {
        edges: vec![
            (0, Some(0), 1),
            (1, Some(0), 0),
            (0, Some(1), 2),
            (1, Some(1), 2),
            (2, Some(0), 0),
        ],
        open: vec![0, 1, 2],
        bound: None,
    };
    let LivenessVerdict::Violated(lasso) = verdict(&toy) else {
        panic!("fair cycle exists")
    };
    assert!(
        lasso.cycle.iter().any(|a| a.0 == Some(1)),
        "actor 1 is enabled in 0 and 1 and must step: {:?}",
        lasso.cycle
    );
}

#[test]
fn counterexamples_only_at_the_bound_are_reported_as_bounded() {
    // The only deadlock is the bound state 1 (where the model's clock stops).
    let toy = Toy {
        edges: vec![(0, Some(0), 1)],
        open: vec![0, 1],
        bound: Some(1),
    };
    assert!(matches!(verdict(&toy), LivenessVerdict::Bounded { .. }));
}

#[test]
fn a_long_chain_needs_no_recursion() {
    // 200 000 states in one open cycle: the iterative Tarjan must not overflow the stack.
    let n: u32 = 200_000;
    #[derive(Clone)]
    struct Ring(u32);
    impl Model for Ring {
        type State = u32;
        type Action = u32;
        fn init_states(&self) -> Vec<u32> {
            vec![0]
        }
        fn actions(&self, _: &u32, actions: &mut Vec<u32>) {
            actions.push(0);
        }
        fn next_state(&self, state: &u32, _: u32) -> Option<u32> {
            Some((state + 1) % self.0)
        }
    }
    impl Fairness for Ring {
        fn fair_actor(&self, _: &u32) -> Option<u8> {
            Some(0)
        }
        fn fair_actor_name(&self, _: u8) -> String {
            "a0".into()
        }
        fn at_bound(&self, _: &u32) -> bool {
            false
        }
    }
    let obligations = vec![Obligation::<Ring> {
        name: "ring",
        count: 1,
        open: |_, _, _| true,
        subject: |_| "it".into(),
    }];
    let graph = Graph::build(&Ring(n), &obligations, 1_000_000);
    assert_eq!(graph.state_count(), n as usize);
    let LivenessVerdict::Violated(lasso) = graph.check(&obligations, 0) else {
        panic!()
    };
    assert_eq!(lasso.cycle.len(), n as usize);
}
