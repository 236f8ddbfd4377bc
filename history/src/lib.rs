//! # cassalock-history
//!
//! What happened in a lock run, and what it means: the judges and statistics that the model
//! checker, the simulator and the real-cluster runner share, so each claim is judged one way
//! whichever driver produced the history.

pub mod stats;
