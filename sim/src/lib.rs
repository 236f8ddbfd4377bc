//! # cassalock-sim
//!
//! A madsim simulation of a Cassandra cluster running the real cassalock code, and the
//! `cassalock` command. The simulation exists only in the simulation build (`--cfg madsim`,
//! the default here); the real-cluster build compiles the command without it.

pub mod real;
pub mod report;
#[cfg(madsim)]
pub mod sim;
