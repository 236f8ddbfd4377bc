//! The other families' models behind one interface, so that the command line, the matrix and
//! a user's crate run any of them without naming its type: [`FamilyCheck`], and the list of
//! the registry's locks that have one ([`RegisteredModel`], listed in `locks.rs` beside the
//! locks' [`ModelFamily`] impls).

use cassalock::registry::Lock;

use super::{FamilyModel, FamilyMutants, ModelFamily};
use crate::check::{check, CheckedModel, Limits, Report};
use crate::{Fault, Mutant, Spec, SpecError};

/// A family model ready to run, whatever its lock.
pub trait FamilyCheck: Send + Sync {
    /// Check it within `limits`.
    fn check(&self, limits: Limits) -> Report;
    /// The claim IDs it checks (properties and liveness obligations).
    fn claims(&self) -> Vec<String>;
    /// The claims of its lock it leaves out at this size, each with why and the flag that
    /// checks it.
    fn left_out(&self) -> Vec<(&'static str, String)>;
    /// Its title line.
    fn title(&self) -> String;
    /// Serve stateright's Explorer on `address` (blocks).
    fn explore(self: Box<Self>, address: std::net::SocketAddr);
}

impl<F: ModelFamily> FamilyCheck for FamilyModel<F> {
    fn check(&self, limits: Limits) -> Report {
        check(self, limits)
    }

    fn claims(&self) -> Vec<String> {
        self.claim_ids()
    }

    fn left_out(&self) -> Vec<(&'static str, String)> {
        FamilyModel::left_out(self)
    }

    fn title(&self) -> String {
        CheckedModel::title(self)
    }

    fn explore(self: Box<Self>, address: std::net::SocketAddr) {
        use stateright::Model;
        self.checker().serve(address);
    }
}

/// What the model checker knows of a lock of the registry that has a family model.
#[derive(Clone, Copy)]
pub struct RegisteredModel {
    pub lock: Lock,
    /// Its name on the command line (`check --model`).
    pub name: &'static str,
    /// What it checks, in a line (`check --help`).
    pub help: &'static str,
    /// `--extend` applies ([`ModelFamily::EXTENDS`]).
    pub extends: bool,
    /// Its holders renew in the background ([`ModelFamily::RENEWAL_LANE`]).
    pub renews: bool,
    /// It promises its waiters first come, first served ([`ModelFamily::FIFO`]).
    pub fifo: bool,
    /// The faults it has.
    pub supports: fn(Fault) -> bool,
    /// Switch on a client bug ([`ModelFamily::plant`]).
    pub plant: fn(Mutant, &mut FamilyMutants, bool) -> Result<bool, SpecError>,
    /// Build it from a spec.
    pub build: fn(&Spec) -> Result<Box<dyn FamilyCheck>, SpecError>,
    /// How the property matrix runs it under a fault ([`ModelFamily::matrix_line`]).
    pub matrix_line: fn(Fault) -> MatrixLine,
}

/// How the property matrix runs a lock's model under one fault, where the family's line does
/// not fit the lock: each field `None` keeps the family's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatrixLine {
    /// The line's words ("model, the server restarts (tree and sessions persist)").
    pub label: Option<&'static str>,
    /// Acquisitions per client, where the default (one each) cannot show the fault.
    pub acquisitions: Option<u8>,
    /// One more run in the same cell: its acquisitions per client and its words (a fair lock's
    /// F-order needs a client that comes back to the queue).
    pub also: Option<(u8, &'static str)>,
    /// Why the fault does not apply to this lock, where the model does not have it.
    pub not_applicable: Option<&'static str>,
}

impl RegisteredModel {
    /// `mutant` is a bug of this lock's client.
    pub fn plants(&self, mutant: Mutant) -> bool {
        (self.plant)(mutant, &mut FamilyMutants::default(), true).unwrap_or(true)
    }

    /// The entry of lock `F`.
    pub fn of<F: ModelFamily>() -> RegisteredModel {
        let lock = F::LOCK.unwrap_or_else(|| panic!("the {} model names its lock of the registry", F::MODEL));
        debug_assert_eq!(
            lock.entry().model,
            Some(F::MODEL),
            "a family model's name is its registry entry's"
        );
        RegisteredModel {
            lock,
            name: F::MODEL,
            help: F::HELP,
            extends: F::EXTENDS,
            renews: F::RENEWAL_LANE,
            fifo: F::FIFO,
            supports: F::supports,
            plant: F::plant,
            build: |spec| Ok(Box::new(crate::family_model::<F>(spec)?)),
            matrix_line: F::matrix_line,
        }
    }
}
