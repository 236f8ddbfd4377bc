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
        use stateright::Model;
        let names = self
            .properties()
            .into_iter()
            .map(|p| p.name)
            .chain(self.obligations().into_iter().map(|o| o.name));
        names
            .map(|name| name.split_whitespace().next().unwrap_or("").to_owned())
            .collect()
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
        }
    }
}
