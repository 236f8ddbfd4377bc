//! Test-only: step machines by hand against one `RowStore`, recording the tags they pass.

use super::{Action, Input, LockConfig, Machine, Step, StepTag};
use crate::store::{RowStore, StoreCommand, StoreReply};

/// One store, one clock, one timestamp counter. Sleeps advance the clock; draws return
/// `draw`; time readings return the clock.
pub struct Bench {
    pub store: RowStore,
    pub now_us: u64,
    pub last_ts: u64,
    pub draw: u64,
    pub config: LockConfig,
    pub tags: Vec<StepTag>,
}

impl Bench {
    pub fn new(config: LockConfig) -> Self {
        Bench {
            store: RowStore::new(),
            now_us: 1_000_000,
            last_ts: 0,
            draw: 0,
            config,
            tags: Vec::new(),
        }
    }

    /// Execute a command now, as the store would.
    pub fn execute(&mut self, command: StoreCommand) -> StoreReply {
        let now = self.now_us;
        let last = &mut self.last_ts;
        let request = command.stamp(|| {
            *last = (*last + 1).max(now);
            *last
        });
        request.apply_to(&mut self.store, self.now_us)
    }

    /// Run `machine` from `input` until it finishes or asks for something in `stop_at`;
    /// answers store commands, sleeps, draws and time readings itself.
    pub fn run_until<
        M: Machine<Config = LockConfig, Command = crate::store::StoreCommand, Reply = crate::store::StoreReply>,
    >(
        &mut self,
        machine: &mut M,
        mut input: Input,
        stop_at: impl Fn(&Step<M::Output>) -> bool,
    ) -> Step<M::Output> {
        for _ in 0..10_000 {
            let step = machine.resume(&self.config, input, self.now_us);
            self.tags.push(step.tag);
            if stop_at(&step) {
                return step;
            }
            input = match step.action {
                Action::Store(command) => Input::Reply(self.execute(command)),
                Action::Sleep { ms, .. } => {
                    self.now_us += ms * 1000;
                    Input::Woke
                }
                Action::Draw { max_ms } => Input::Drawn(self.draw.min(max_ms)),
                Action::ReadTime => Input::Time(self.now_us),
                Action::StopRenewal { .. } => Input::RenewalStopped,
                Action::Done(_) => return step,
            };
        }
        panic!("machine did not finish within 10000 steps");
    }

    /// Run to the end.
    pub fn run<
        M: Machine<Config = LockConfig, Command = crate::store::StoreCommand, Reply = crate::store::StoreReply>,
    >(
        &mut self,
        machine: &mut M,
    ) -> M::Output {
        match self.run_until(machine, Input::Start, |_| false).action {
            Action::Done(output) => output,
            _ => unreachable!("run_until returns early only on a stop condition"),
        }
    }

    /// The listing steps passed, as "L6.2"-style labels (tags without step numbers omitted).
    pub fn steps(&self) -> Vec<String> {
        self.tags
            .iter()
            .filter(|tag| tag.step != 0)
            .map(|tag| tag.to_string().split(' ').next().unwrap_or_default().to_owned())
            .collect()
    }

    pub fn live_columns(&self, row: &str) -> Vec<String> {
        self.store
            .read_slice(row, "", 100, self.now_us)
            .into_iter()
            .map(|cell| cell.column)
            .collect()
    }
}
