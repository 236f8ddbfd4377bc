//! Our own liveness check, on stateright's `Model` API.
//!
//! stateright judges `eventually` only at terminal states, so a thread that spins for ever in
//! a retry loop is never reported. This module does what a liveness checker must:
//!
//! 1. build the reachable graph breadth-first (so every stem is a shortest path), labelling
//!    each edge with the actor that took it and each state with the actors enabled in it and
//!    the obligations open in it ("thread 2 is waiting for the lock");
//! 2. for each obligation, find the strongly connected components of the subgraph where it
//!    stays open, with an iterative Tarjan (an explicit stack, so no recursion limit);
//! 3. report (a) a *deadlock*: a state with no successor at all while the obligation is open,
//!    or (b) a *weakly fair cycle* that never discharges it: an SCC in which every actor that
//!    is enabled in all of its states also takes a step somewhere inside it. Such an SCC holds
//!    a cycle that visits all its states and edges, on which no actor is starved of a step it
//!    was continuously offered; an SCC failing the test has no fair cycle at all, because every
//!    cycle inside it keeps that actor enabled and never lets it move;
//! 4. print the lasso: the shortest stem to the cycle, then a cycle through the SCC that takes
//!    a step of every continuously enabled actor.
//!
//! Limits: a state budget (a graph cut short reports "bounded", never "holds"), and 64 actors
//! and 64 obligations per model. States are identified by a 64-bit hash, as in stateright.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::Instant;

use stateright::Model;

/// A liveness obligation: while `open` holds for index `k`, something is owed ("thread k will
/// acquire"). `count` indices are checked (one per thread, or one for the whole system).
pub struct Obligation<M: Model> {
    /// The claim ID and its wording, e.g. "T2 every waiting thread acquires".
    pub name: &'static str,
    pub count: usize,
    pub open: fn(&M, &M::State, usize) -> bool,
    /// What index `k` stands for, in reports ("t2").
    pub subject: fn(usize) -> String,
}

/// Which fairness unit takes an action; `None` for actors bound by no fairness (the fault
/// injector may never act).
pub type FairActor = Option<u8>;

/// What the liveness check needs beyond `Model`.
pub trait Fairness: Model {
    fn fair_actor(&self, action: &Self::Action) -> FairActor;
    fn fair_actor_name(&self, actor: u8) -> String;
    /// Is this state at a bound of the model (the clock's last tick)? Counterexamples that
    /// depend on such states are reported as bounded.
    fn at_bound(&self, state: &Self::State) -> bool;
    /// Why a counterexample at the bound decides nothing, in a verdict's words.
    fn bound_reason(&self) -> String {
        "the only counterexamples reach the model's last clock tick, where time stops".into()
    }
}

struct Node<A> {
    parent: Option<(u32, A)>,
    /// Bit k: obligation index k (flattened) is open.
    open: u64,
    /// Bit a: fair actor a has an enabled action.
    enabled: u64,
    at_bound: bool,
    /// No action at all is enabled (a deadlock if an obligation is open).
    terminal: bool,
    edges: Vec<(u32, FairActor, A)>,
}

/// The reachable graph.
pub struct Graph<M: Model> {
    nodes: Vec<Node<M::Action>>,
    init_count: usize,
    /// Flattened obligations: (obligation number, index).
    slots: Vec<(usize, usize)>,
    /// The state budget ran out (or the visitor stopped it) before every state was expanded.
    pub truncated: bool,
    /// The visitor stopped the exploration.
    pub stopped_early: bool,
    /// The deadline passed before every state was expanded.
    pub timed_out: bool,
    /// The check's memory limit was passed before every state was expanded.
    pub out_of_memory: bool,
    /// [`Fairness::bound_reason`] of the model.
    bound_reason: String,
}

/// A counterexample to an obligation.
#[derive(Clone, Debug)]
pub struct Lasso<A> {
    pub obligation: &'static str,
    pub subject: String,
    /// From an initial state (its index in `init_states`) to the loop's entry.
    pub init: usize,
    pub stem: Vec<A>,
    /// Empty for a deadlock.
    pub cycle: Vec<A>,
    /// It passes through a state at the model's bound (e.g. the last tick).
    pub touches_bound: bool,
}

/// The verdict on one obligation.
#[derive(Clone, Debug)]
pub enum LivenessVerdict<A> {
    Holds,
    Violated(Box<Lasso<A>>),
    /// The graph was cut short, or every counterexample depends on the model's bound.
    Bounded {
        reason: String,
        lasso: Option<Box<Lasso<A>>>,
    },
}

/// How many entry states (nearest the initial state first) are tried for the shortest fair cycle.
const CYCLE_ENTRY_CANDIDATES: usize = 64;

/// A state's 64-bit fingerprint: aHash with fixed seeds, so a run explores the same graph every
/// time. Two states with one fingerprint would be taken for one (as in stateright, whose
/// fingerprints are aHash's too); our state counts are compared with stateright's after every
/// complete run, which such a collision in either would most likely break.
fn fingerprint<T: Hash>(value: &T) -> u64 {
    const SEEDS: [u64; 4] = [
        0x6361_7373_616c_6f63,
        0x6b5f_6772_6170_6831,
        0x0123_4567_89ab_cdef,
        0x0f1e_2d3c_4b5a_6978,
    ];
    ahash::RandomState::with_seeds(SEEDS[0], SEEDS[1], SEEDS[2], SEEDS[3]).hash_one(value)
}

/// Hashes a fingerprint, already a hash, to itself.
#[derive(Default)]
struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed with this; fold anything else in rather than lose it.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, fingerprint: u64) {
        self.0 = fingerprint;
    }
}

/// The graph's index from fingerprint to node id.
type FingerprintIndex = HashMap<u64, u32, BuildHasherDefault<FingerprintHasher>>;

impl<M> Graph<M>
where
    M: Model + Fairness,
    M::State: Hash,
    M::Action: Clone + PartialEq,
{
    /// Explore breadth-first, up to `max_states`.
    pub fn build(model: &M, obligations: &[Obligation<M>], max_states: usize) -> Self {
        Self::build_with(model, obligations, max_states, |_, _| false)
    }

    /// As [`Graph::build`], calling `visit` on every new state with its id.
    pub fn build_with(
        model: &M,
        obligations: &[Obligation<M>],
        max_states: usize,
        visit: impl FnMut(u32, &M::State) -> bool,
    ) -> Self {
        Self::build_within(model, obligations, max_states, None, visit)
    }

    /// As [`Graph::build_with`], also stopping (truncated, `timed_out`) at `deadline`.
    pub fn build_within(
        model: &M,
        obligations: &[Obligation<M>],
        max_states: usize,
        deadline: Option<Instant>,
        mut visit: impl FnMut(u32, &M::State) -> bool,
    ) -> Self {
        let slots: Vec<(usize, usize)> = obligations
            .iter()
            .enumerate()
            .flat_map(|(o, ob)| (0..ob.count).map(move |k| (o, k)))
            .collect();
        assert!(slots.len() <= 64, "at most 64 obligation indices");
        let mut graph = Graph {
            nodes: Vec::new(),
            init_count: 0,
            slots,
            truncated: false,
            stopped_early: false,
            timed_out: false,
            out_of_memory: false,
            bound_reason: model.bound_reason(),
        };
        let mut index = FingerprintIndex::default();
        let mut queue: VecDeque<(u32, M::State)> = VecDeque::new();
        for state in model.init_states() {
            let fp = fingerprint(&state);
            if index.contains_key(&fp) {
                continue;
            }
            let id = graph.add(model, obligations, &state, None);
            if visit(id, &state) {
                graph.truncated = true;
                graph.stopped_early = true;
                return graph;
            }
            index.insert(fp, id);
            queue.push_back((id, state));
        }
        graph.init_count = graph.nodes.len();
        let mut actions = Vec::new();
        let mut expanded = 0u64;
        while let Some((id, state)) = queue.pop_front() {
            // The clock is read every 1,024 expansions (a few milliseconds of work).
            expanded += 1;
            if expanded % 1024 == 0 && deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                graph.truncated = true;
                graph.timed_out = true;
                break;
            }
            // The check's memory guard (`memory::memory_allows`) fired: stop, as at a deadline.
            if !crate::memory::memory_allows() {
                graph.truncated = true;
                graph.out_of_memory = true;
                break;
            }
            actions.clear();
            model.actions(&state, &mut actions);
            let mut edges = Vec::with_capacity(actions.len());
            let mut enabled = 0u64;
            let mut terminal = true;
            for action in actions.drain(..) {
                let actor = model.fair_actor(&action);
                let Some(next) = model.next_state(&state, action.clone()) else {
                    continue;
                };
                terminal = false;
                if let Some(a) = actor {
                    enabled |= 1 << a;
                }
                let fp = fingerprint(&next);
                let to = match index.get(&fp) {
                    Some(&to) => to,
                    None => {
                        if graph.nodes.len() >= max_states {
                            graph.truncated = true;
                            continue;
                        }
                        let to = graph.add(model, obligations, &next, Some((id, action.clone())));
                        if visit(to, &next) {
                            graph.truncated = true;
                            graph.stopped_early = true;
                            return graph;
                        }
                        index.insert(fp, to);
                        queue.push_back((to, next));
                        to
                    }
                };
                edges.push((to, actor, action));
            }
            let node = &mut graph.nodes[id as usize];
            node.edges = edges;
            node.enabled = enabled;
            node.terminal = terminal;
        }
        graph
    }

    fn add(
        &mut self,
        model: &M,
        obligations: &[Obligation<M>],
        state: &M::State,
        parent: Option<(u32, M::Action)>,
    ) -> u32 {
        let mut open = 0u64;
        for (bit, &(o, k)) in self.slots.iter().enumerate() {
            if (obligations[o].open)(model, state, k) {
                open |= 1 << bit;
            }
        }
        self.nodes.push(Node {
            parent,
            open,
            enabled: 0,
            at_bound: model.at_bound(state),
            terminal: false,
            edges: Vec::new(),
        });
        u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 states")
    }

    /// The shortest path to `node`: the initial state's index and the actions.
    pub fn path_to(&self, node: u32) -> (usize, Vec<M::Action>) {
        let mut actions = Vec::new();
        let mut at = node;
        while let Some((parent, action)) = &self.nodes[at as usize].parent {
            actions.push(action.clone());
            at = *parent;
        }
        actions.reverse();
        (at as usize, actions)
    }

    pub fn state_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn edge_count(&self) -> usize {
        self.nodes.iter().map(|n| n.edges.len()).sum()
    }

    /// The deepest BFS level, counting the initial state as depth 1 (as stateright does).
    pub fn depth(&self) -> usize {
        let mut depth = vec![0usize; self.nodes.len()];
        let mut deepest = 0;
        for id in 0..self.nodes.len() {
            if let Some((parent, _)) = &self.nodes[id].parent {
                depth[id] = depth[*parent as usize] + 1;
                deepest = deepest.max(depth[id]);
            }
        }
        deepest + usize::from(!self.nodes.is_empty())
    }

    /// Check one obligation (all its indices).
    pub fn check(&self, obligations: &[Obligation<M>], which: usize) -> LivenessVerdict<M::Action> {
        let obligation = &obligations[which];
        let mut bounded: Option<Box<Lasso<M::Action>>> = None;
        for (bit, &(o, k)) in self.slots.iter().enumerate() {
            if o != which {
                continue;
            }
            if let Some(lasso) = self.find(bit, obligation, k) {
                if lasso.touches_bound {
                    bounded.get_or_insert(lasso);
                } else {
                    return LivenessVerdict::Violated(lasso);
                }
            }
        }
        if let Some(lasso) = bounded {
            return LivenessVerdict::Bounded {
                reason: self.bound_reason.clone(),
                lasso: Some(lasso),
            };
        }
        if self.truncated {
            let budget = if self.out_of_memory {
                "memory limit"
            } else if self.timed_out {
                "time"
            } else {
                "state budget"
            };
            return LivenessVerdict::Bounded {
                reason: format!("the {budget} ran out after {} states", self.nodes.len()),
                lasso: None,
            };
        }
        LivenessVerdict::Holds
    }

    fn open(&self, node: u32, bit: usize) -> bool {
        self.nodes[node as usize].open & (1 << bit) != 0
    }

    /// A deadlock or fair cycle with obligation `bit` open, preferring one off the bound.
    fn find(&self, bit: usize, obligation: &Obligation<M>, k: usize) -> Option<Box<Lasso<M::Action>>> {
        let mut fallback = None;
        // (a) Deadlocks: expanded, open, no successor at all. BFS order: the first is nearest.
        for (id, node) in self.nodes.iter().enumerate() {
            if node.terminal && node.open & (1 << bit) != 0 {
                let lasso = self.lasso(id as u32, Vec::new(), obligation, k);
                if !lasso.touches_bound {
                    return Some(lasso);
                }
                fallback.get_or_insert(lasso);
            }
        }
        // (b) Weakly fair cycles inside the open subgraph.
        for component in self.components(bit) {
            if let Some(cycle) = self.fair_cycle(&component, bit) {
                let entry = cycle.0;
                let lasso = self.lasso(entry, cycle.1, obligation, k);
                if !lasso.touches_bound {
                    return Some(lasso);
                }
                fallback.get_or_insert(lasso);
            }
        }
        fallback
    }

    /// Strongly connected components (with at least one internal edge) of the subgraph of
    /// nodes where `bit` is open. Iterative Tarjan.
    fn components(&self, bit: usize) -> Vec<Vec<u32>> {
        const UNVISITED: u32 = u32::MAX;
        let n = self.nodes.len();
        let mut index = vec![UNVISITED; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut next_index = 0u32;
        let mut found = Vec::new();
        // Call stack: (node, next edge position).
        let mut calls: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != UNVISITED || !self.open(root, bit) {
                continue;
            }
            calls.push((root, 0));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(top) = calls.len().checked_sub(1) {
                let (v, position) = calls[top];
                let edges = &self.nodes[v as usize].edges;
                if position < edges.len() {
                    calls[top].1 += 1;
                    let w = edges[position].0;
                    if !self.open(w, bit) {
                        continue;
                    }
                    if index[w as usize] == UNVISITED {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        calls.push((w, 0));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                } else {
                    calls.pop();
                    if let Some(&(parent, _)) = calls.last() {
                        low[parent as usize] = low[parent as usize].min(low[v as usize]);
                    }
                    if low[v as usize] == index[v as usize] {
                        let mut component = Vec::new();
                        loop {
                            let w = stack.pop().expect("v is on the stack");
                            on_stack[w as usize] = false;
                            component.push(w);
                            if w == v {
                                break;
                            }
                        }
                        let has_internal_edge =
                            component.len() > 1 || self.nodes[v as usize].edges.iter().any(|e| e.0 == v);
                        if has_internal_edge {
                            found.push(component);
                        }
                    }
                }
            }
        }
        found
    }

    /// If `component` holds a weakly fair cycle, return an entry node and a cycle through it
    /// that takes a step of every continuously enabled actor.
    fn fair_cycle(&self, component: &[u32], bit: usize) -> Option<(u32, Vec<M::Action>)> {
        let members: std::collections::HashSet<u32> = component.iter().copied().collect();
        let enabled_everywhere = component
            .iter()
            .fold(u64::MAX, |acc, &v| acc & self.nodes[v as usize].enabled);
        let mut stepped = 0u64;
        for &v in component {
            for (to, actor, _) in &self.nodes[v as usize].edges {
                if let Some(a) = actor {
                    if members.contains(to) && self.open(*to, bit) {
                        stepped |= 1 << a;
                    }
                }
            }
        }
        if enabled_everywhere & !stepped != 0 {
            return None; // some actor is enabled throughout but never moves: no fair cycle here
        }
        // Prefer the shortest cycle, through one of the members nearest an initial state, that
        // is itself fair: every actor enabled in all of *its* states steps on it.
        let mut candidates: Vec<u32> = component.to_vec();
        candidates.sort_unstable();
        let mut best: Option<(u32, Vec<M::Action>)> = None;
        for &entry in candidates.iter().take(CYCLE_ENTRY_CANDIDATES) {
            let Some((cycle, stepped_on_cycle, enabled_on_cycle)) = self.shortest_cycle(entry, &members) else {
                continue;
            };
            if enabled_on_cycle & !stepped_on_cycle == 0 && best.as_ref().is_none_or(|(_, b)| cycle.len() < b.len()) {
                best = Some((entry, cycle));
            }
        }
        if best.is_some() {
            return best;
        }
        // Otherwise stitch one: for every actor enabled somewhere in the SCC, visit a state
        // where it is disabled, or (if it never is) take one of its steps.
        let entry = candidates[0];
        let enabled_somewhere = component
            .iter()
            .fold(0u64, |acc, &v| acc | self.nodes[v as usize].enabled);
        let mut cycle = Vec::new();
        let mut at = entry;
        for a in 0..64u8 {
            if enabled_somewhere & (1 << a) == 0 {
                continue;
            }
            if let Some(&resting) = component
                .iter()
                .find(|&&v| self.nodes[v as usize].enabled & (1 << a) == 0)
            {
                cycle.extend(self.path_within(at, resting, &members));
                at = resting;
                continue;
            }
            let (from, to, action) = component
                .iter()
                .flat_map(|&v| self.nodes[v as usize].edges.iter().map(move |e| (v, e)))
                .find(|(_, (to, actor, _))| *actor == Some(a) && members.contains(to))
                .map(|(v, (to, _, action))| (v, *to, action.clone()))
                .expect("stepped covers every continuously enabled actor");
            cycle.extend(self.path_within(at, from, &members));
            cycle.push(action);
            at = to;
        }
        cycle.extend(self.path_within(at, entry, &members));
        if cycle.is_empty() {
            // Every actor is disabled somewhere at the entry itself: any cycle through it is fair.
            let (to, action) = self.nodes[entry as usize]
                .edges
                .iter()
                .find(|(to, _, _)| members.contains(to))
                .map(|(to, _, action)| (*to, action.clone()))
                .expect("an SCC with an internal edge");
            cycle.push(action);
            cycle.extend(self.path_within(to, entry, &members));
        }
        Some((entry, cycle))
    }

    /// The shortest cycle from `entry` back to itself inside `members`, with the actors that
    /// step on it and the actors enabled in every one of its states.
    fn shortest_cycle(
        &self,
        entry: u32,
        members: &std::collections::HashSet<u32>,
    ) -> Option<(Vec<M::Action>, u64, u64)> {
        let mut previous: HashMap<u32, (u32, FairActor, M::Action)> = HashMap::new();
        let mut queue = VecDeque::from([entry]);
        while let Some(v) = queue.pop_front() {
            for (w, actor, action) in &self.nodes[v as usize].edges {
                if !members.contains(w) {
                    continue;
                }
                if *w == entry {
                    let mut path = vec![action.clone()];
                    let mut stepped = actor.map_or(0, |a| 1u64 << a);
                    let mut enabled = self.nodes[entry as usize].enabled;
                    let mut at = v;
                    while at != entry {
                        enabled &= self.nodes[at as usize].enabled;
                        let (p, actor, action) = previous.get(&at).expect("on the path").clone();
                        path.push(action);
                        stepped |= actor.map_or(0, |a| 1u64 << a);
                        at = p;
                    }
                    path.reverse();
                    return Some((path, stepped, enabled));
                }
                if previous.contains_key(w) {
                    continue;
                }
                previous.insert(*w, (v, *actor, action.clone()));
                queue.push_back(*w);
            }
        }
        None
    }

    /// Shortest path of actions from `from` to `to` staying inside `members`.
    fn path_within(&self, from: u32, to: u32, members: &std::collections::HashSet<u32>) -> Vec<M::Action> {
        if from == to {
            return Vec::new();
        }
        let mut previous: HashMap<u32, (u32, M::Action)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            for (w, _, action) in &self.nodes[v as usize].edges {
                if !members.contains(w) || *w == from || previous.contains_key(w) {
                    continue;
                }
                previous.insert(*w, (v, action.clone()));
                if *w == to {
                    let mut path = Vec::new();
                    let mut at = to;
                    while at != from {
                        let (p, action) = previous.remove(&at).expect("on the path");
                        path.push(action);
                        at = p;
                    }
                    path.reverse();
                    return path;
                }
                queue.push_back(*w);
            }
        }
        unreachable!("members of one SCC reach each other")
    }

    fn lasso(&self, entry: u32, cycle: Vec<M::Action>, obligation: &Obligation<M>, k: usize) -> Box<Lasso<M::Action>> {
        let mut stem = Vec::new();
        let mut at = entry;
        let mut touches_bound = self.nodes[entry as usize].at_bound;
        while let Some((parent, action)) = &self.nodes[at as usize].parent {
            stem.push(action.clone());
            at = *parent;
        }
        stem.reverse();
        // Walk the cycle's states to see whether any sits at the bound.
        let mut v = entry;
        for action in &cycle {
            if let Some((to, _, _)) = self.nodes[v as usize].edges.iter().find(|(_, _, a)| a == action) {
                v = *to;
                touches_bound |= self.nodes[v as usize].at_bound;
            }
        }
        Box::new(Lasso {
            obligation: obligation.name,
            subject: (obligation.subject)(k),
            init: at as usize,
            stem,
            cycle,
            touches_bound,
        })
    }

    /// How many initial states there are.
    pub fn init_count(&self) -> usize {
        self.init_count
    }
}

impl<A> Lasso<A> {
    pub fn len(&self) -> usize {
        self.stem.len() + self.cycle.len()
    }

    pub fn is_deadlock(&self) -> bool {
        self.cycle.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
