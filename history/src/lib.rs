//! # cassalock-history
//!
//! What happened in a lock run, and what it means: the judges and statistics that the model
//! checker, the simulator and the real-cluster runner share, so each claim is judged one way
//! whichever driver produced the history.
//!
//! - [`claims`]: the claim IDs ([`ClaimId`]) and a claim's typed verdict;
//! - [`holding`]: holding intervals on a named clock and the one T1-belief judge;
//! - [`k3`]: the one K3 definition (a released lock stays taken by nobody);
//! - [`stats`]: the report statistics.

pub mod claims;
pub mod holding;
pub mod k3;
pub mod stats;
pub mod text;

pub use claims::{AsClaim, Aspect, ClaimId, ClaimVerdict};
