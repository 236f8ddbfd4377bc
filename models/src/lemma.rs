//! # lemma: two writers, one row (Lemma 1)
//!
//! Lemma 1 is the brick every lock in the thesis is built on: if threads A and B each write one
//! cell to the same row and then read the row, at least one of them sees both cells. The proof
//! is one line of linearizability: if A missed B's cell, B wrote after A read, so after A wrote;
//! then B's read, later still, sees A's cell.
//!
//! The model runs N threads (2 or 3) against one linearizable `RowStore` (the library's), each
//! doing exactly that: write its cell, read the row. The N-thread version of the claim is that
//! at least one thread sees all N cells, which holds for the same reason: the last thread to
//! write reads after every write.
//!
//! # What is checked
//!
//! | property | kind | meaning |
//! |---|---|---|
//! | L1 | always | once every thread has read, at least one saw every cell |
//! | L1-not-vacuous | sometimes | some thread can see only its own cell (so L1 says something) |
//!
//! The lemma fails without linearizability (K2: writes and reads at consistency ONE); the
//! simulator shows that against replicas.

use cassalock::store::{CellWrite, RowStore, StoreOp, StoreReply, StoreRequest};
use stateright::{Model, Property};

use crate::check::CheckedModel;
use crate::liveness::{Fairness, Obligation};

const ROW: &str = "r";

/// A lemma thread: write, then read; what it saw (bit j: thread j's cell).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Writer {
    pub wrote: bool,
    pub saw: Option<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LemmaState {
    pub store: RowStore,
    pub writers: Vec<Writer>,
}

#[derive(Clone, Debug)]
pub struct LemmaModel {
    pub threads: u8,
}

impl LemmaModel {
    fn request(&self, state: &LemmaState, i: usize) -> StoreRequest {
        if state.writers[i].wrote {
            StoreOp::ReadSlice {
                row: ROW.into(),
                start: String::new(),
                count: u32::from(self.threads) + 1,
            }
        } else {
            StoreOp::Write {
                row: ROW.into(),
                cells: vec![CellWrite {
                    column: format!("t{i}"),
                    value: format!("t{i}"),
                    ttl_s: None,
                }],
                timestamp: state.store.max_timestamp_us().unwrap_or(0) + 1,
            }
        }
    }

    fn step(&self, state: &LemmaState, i: usize) -> (LemmaState, String) {
        let mut next = state.clone();
        let request = self.request(state, i);
        let reply = request.apply_to(&mut next.store, 0);
        let writer = &mut next.writers[i];
        let line = match reply {
            StoreReply::Done => {
                writer.wrote = true;
                format!("writes its cell: {request}")
            }
            StoreReply::Slice(cells) => {
                let mut saw = 0u8;
                for cell in &cells {
                    if let Some(j) = cell.column.strip_prefix('t').and_then(|j| j.parse::<u8>().ok()) {
                        saw |= 1 << j;
                    }
                }
                writer.saw = Some(saw);
                let names: Vec<&str> = cells.iter().map(|c| c.column.as_str()).collect();
                format!("reads the row: {request} -> [{}]", names.join(", "))
            }
        };
        (next, line)
    }
}

fn l1(model: &LemmaModel, state: &LemmaState) -> bool {
    let all = (1u8 << model.threads) - 1;
    let finished = state.writers.iter().all(|w| w.saw.is_some());
    !finished || state.writers.iter().any(|w| w.saw == Some(all))
}

fn someone_saw_only_itself(_: &LemmaModel, state: &LemmaState) -> bool {
    state.writers.iter().enumerate().any(|(i, w)| w.saw == Some(1 << i))
}

impl Model for LemmaModel {
    type State = LemmaState;
    type Action = u8;

    /// Every state is inside, until the check's memory guard fires (`check::memory_allows`).
    fn within_boundary(&self, _: &Self::State) -> bool {
        crate::check::memory_allows()
    }

    fn init_states(&self) -> Vec<LemmaState> {
        vec![LemmaState {
            store: RowStore::new(),
            writers: vec![
                Writer {
                    wrote: false,
                    saw: None
                };
                usize::from(self.threads)
            ],
        }]
    }

    fn actions(&self, state: &LemmaState, actions: &mut Vec<u8>) {
        for (i, writer) in state.writers.iter().enumerate() {
            if writer.saw.is_none() {
                actions.push(i as u8);
            }
        }
    }

    fn next_state(&self, state: &LemmaState, action: u8) -> Option<LemmaState> {
        Some(self.step(state, usize::from(action)).0)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("L1 once all have read, one thread saw every cell", l1),
            Property::sometimes(
                "L1-not-vacuous a thread can see only its own cell",
                someone_saw_only_itself,
            ),
        ]
    }
}

impl Fairness for LemmaModel {
    fn fair_actor(&self, action: &u8) -> Option<u8> {
        Some(*action)
    }

    fn fair_actor_name(&self, actor: u8) -> String {
        format!("t{actor}")
    }

    fn at_bound(&self, _: &LemmaState) -> bool {
        false
    }
}

impl CheckedModel for LemmaModel {
    fn title(&self) -> String {
        format!(
            "lemma (Lemma 1) | {} threads each write one cell to row r, then read it | linearizable store",
            self.threads
        )
    }

    fn obligations(&self) -> Vec<Obligation<Self>> {
        Vec::new()
    }

    fn clock_bound(&self) -> Option<u8> {
        None
    }

    fn describe_step(&self, state: &LemmaState, action: &u8) -> (LemmaState, Vec<String>) {
        let (next, line) = self.step(state, usize::from(*action));
        (next, vec![line])
    }

    fn describe_state(&self, state: &LemmaState) -> String {
        let seen: Vec<String> = state
            .writers
            .iter()
            .enumerate()
            .map(|(i, w)| match w.saw {
                None if w.wrote => format!("t{i} wrote"),
                None => format!("t{i} idle"),
                Some(mask) => format!(
                    "t{i} saw {}",
                    (0..self.threads)
                        .filter(|j| mask & (1 << j) != 0)
                        .map(|j| format!("t{j}"))
                        .collect::<Vec<_>>()
                        .join("+")
                ),
            })
            .collect();
        seen.join(" | ")
    }

    fn actor(&self, action: &u8) -> String {
        format!("t{action}")
    }
}
