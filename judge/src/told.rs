//! C-lost for a run seen from outside: every holder that was overtaken (another client
//! acquired while it still believed, or fencing refused its write), how it was told and when.
//!
//! The overtaken holders come from T1-belief's own overlaps ([`crate::overlap_window`]'s
//! pairs: the earlier holder of each) and from the resource's refusals; nothing here decides
//! who believed when. What is kept: one case per client (its latest acquisition, with what it
//! heard), and the cases of earlier acquisitions only until T1-belief can no longer find them
//! overtaken (their belief closed at or before every belief still to close began): memory that
//! grows with the clients, not the history.

use std::time::Duration;

use crate::event::ReleaseOutcome;
use crate::holding::{HoldingInterval, Overlap, SimulatedTime};

/// How an overtaken holder was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Told {
    /// An unasked `lease_lost` on its client: a listener, a session-expired notice.
    LostNotice { why: String },
    /// Its release's answer: the library said the lock was not held any more (`not_held`: an
    /// exception saying so, or false) or the release failed (`failed`).
    AtRelease { outcome: ReleaseOutcome, why: String },
    /// The resource refused its write (fencing).
    RefusedWrite,
}

/// A holder whose lock another client took while it still believed, or whose write fencing
/// refused: how it was told and when.
#[derive(Clone, Debug, PartialEq)]
pub struct LostHolder {
    /// The acquisition (the record's `thread`).
    pub holder: String,
    pub acquired_at: Duration,
    /// The overtaking acquisition: the first other client's acquisition inside its belief
    /// (T1-belief's overlap), or, known only from a refused write, the first acquisition by
    /// another client after its own.
    pub overtaken_at: Duration,
    /// Each way it was told, the first of each, in time order.
    pub told: Vec<(Duration, Told)>,
    /// Its release's answer, whatever it was (`released`: the library said all was well).
    pub release: Option<(ReleaseOutcome, String)>,
}

impl LostHolder {
    /// The first telling.
    pub fn first_told(&self) -> Option<&(Duration, Told)> {
        self.told.first()
    }

    /// From the overtaking acquisition to the first telling, seconds (negative: told before).
    pub fn delay_s(&self) -> Option<f64> {
        self.first_told().map(|(at, _)| signed_s(*at, self.overtaken_at))
    }

    /// The first telling: "at release, LockNotOwnedError: ..., 1.2 s after".
    pub fn first_described(&self) -> Option<String> {
        self.first_told()
            .map(|(at, how)| format!("{}, {}", how_told(how), relative(signed_s(*at, self.overtaken_at))))
    }

    /// "at release, LockNotOwnedError: ..., 1.2 s after", "lost notice (...), 40 ms after",
    /// "never told"; then the later tellings and what its release said.
    pub fn describe(&self) -> String {
        let mut text = self
            .told
            .iter()
            .map(|(at, how)| format!("{}, {}", how_told(how), relative(signed_s(*at, self.overtaken_at))))
            .collect::<Vec<_>>()
            .join("; then ");
        if text.is_empty() {
            text.push_str("never told");
        }
        if let Some((ReleaseOutcome::Released, _)) = &self.release {
            text.push_str("; its release said released");
        }
        text
    }
}

fn how_told(how: &Told) -> String {
    match how {
        Told::LostNotice { why } => format!("lost notice ({})", short(why)),
        Told::AtRelease { outcome, why } => {
            let said = if why.is_empty() {
                match outcome {
                    ReleaseOutcome::NotHeld => "not held".to_owned(),
                    _ => "failed".to_owned(),
                }
            } else {
                short(why)
            };
            format!("at release, {said}")
        }
        Told::RefusedWrite => "its write refused by fencing".into(),
    }
}

/// The library's words, first line, at most 80 characters (cut at a word).
fn short(why: &str) -> String {
    let line = why.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= 80 {
        return line.to_owned();
    }
    let cut: String = line.chars().take(80).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}...", cut.trim_end_matches([',', ';', ':']))
}

fn signed_s(at: Duration, from: Duration) -> f64 {
    if at >= from {
        (at - from).as_secs_f64()
    } else {
        -(from - at).as_secs_f64()
    }
}

/// "1.2 s after", "40 ms before".
pub fn relative(seconds: f64) -> String {
    let side = if seconds < 0.0 { "before" } else { "after" };
    let magnitude = seconds.abs();
    if magnitude < 1.0 {
        format!("{:.0} ms {side}", magnitude * 1000.0)
    } else {
        format!("{magnitude:.1} s {side}")
    }
}

/// One acquisition being followed: what its client heard while it was the client's latest.
#[derive(Clone, Debug)]
struct Case {
    holder: String,
    node: String,
    token: String,
    acquired_at: Duration,
    /// The first acquisition by another client after this one.
    first_other: Option<Duration>,
    /// T1-belief found it the earlier holder of an overlap: the earliest such other acquisition.
    overlapped_from: Option<Duration>,
    lost: Option<(Duration, String)>,
    release: Option<(Duration, ReleaseOutcome, String)>,
    refused_write: Option<Duration>,
    /// A belief of it is still open, since then.
    open: bool,
    open_since: Duration,
    /// Where its closed beliefs ended, the latest.
    closed_until: Duration,
    /// Its client acquired again: it hears nothing more.
    retired: bool,
}

impl Case {
    fn overtaken(&self) -> bool {
        self.overlapped_from.is_some() || self.refused_write.is_some()
    }

    fn into_lost(self) -> LostHolder {
        let overtaken_at = self
            .overlapped_from
            .or(self.first_other)
            .or(self.refused_write)
            .unwrap_or(self.acquired_at);
        let mut told = Vec::new();
        if let Some((at, why)) = self.lost {
            told.push((at, Told::LostNotice { why }));
        }
        if let Some((at, outcome, why)) = &self.release {
            if matches!(outcome, ReleaseOutcome::NotHeld | ReleaseOutcome::Failed) {
                told.push((
                    *at,
                    Told::AtRelease {
                        outcome: *outcome,
                        why: why.clone(),
                    },
                ));
            }
        }
        if let Some(at) = self.refused_write {
            told.push((at, Told::RefusedWrite));
        }
        told.sort_by_key(|(at, _)| *at);
        LostHolder {
            holder: self.holder,
            acquired_at: self.acquired_at,
            overtaken_at,
            told,
            release: self.release.map(|(_, outcome, why)| (outcome, why)),
        }
    }
}

/// C-lost's tally over a run, as the judge hands it events, closed beliefs and T1-belief's
/// overlaps.
#[derive(Clone, Debug)]
pub struct Tellings {
    examples: usize,
    /// Each client's latest acquisition.
    current: Vec<Case>,
    /// Earlier acquisitions T1-belief may still find overtaken.
    pending: Vec<Case>,
    /// Overtaken holders, and those never told.
    pub overtaken: u64,
    pub never_told: u64,
    /// The first ones finished (every one with `examples == usize::MAX`).
    pub kept: Vec<LostHolder>,
    /// The first never told.
    pub first_never: Option<LostHolder>,
    /// Overtaken holders not yet told where a cut record stops ([`Tellings::finish`]), which
    /// might have been told later: neither told nor never told. The first of them.
    pub untold_at_cut: u64,
    pub first_untold_at_cut: Option<LostHolder>,
    /// The one told last after its overtaking (the largest delay).
    pub latest: Option<LostHolder>,
}

impl Tellings {
    pub fn new(examples: usize) -> Self {
        Tellings {
            examples,
            current: Vec::new(),
            pending: Vec::new(),
            overtaken: 0,
            never_told: 0,
            kept: Vec::new(),
            first_never: None,
            untold_at_cut: 0,
            first_untold_at_cut: None,
            latest: None,
        }
    }

    /// Client `node`'s `holder` acquired with `token` at `at`.
    pub fn acquired(&mut self, node: &str, holder: &str, token: &str, at: Duration) {
        self.begin(node, holder, token, at);
    }

    /// A new belief of `holder` on `node` began at `at`: a new acquisition, its client's
    /// latest.
    fn begin(&mut self, node: &str, holder: &str, token: &str, at: Duration) {
        let (leaving, staying): (Vec<Case>, Vec<Case>) = std::mem::take(&mut self.current)
            .into_iter()
            .partition(|case| case.node == node || case.holder == holder);
        self.current = staying;
        for mut case in leaving {
            case.retired = true;
            // The same holder acquiring again replaces its belief.
            if case.holder == holder {
                case.open = false;
            }
            self.pending.push(case);
        }
        for case in &mut self.current {
            case.first_other.get_or_insert(at);
        }
        self.current.push(Case {
            holder: holder.to_owned(),
            node: node.to_owned(),
            token: token.to_owned(),
            acquired_at: at,
            first_other: None,
            overlapped_from: None,
            lost: None,
            release: None,
            refused_write: None,
            open: true,
            open_since: at,
            closed_until: at,
            retired: false,
        });
    }

    /// `holder`'s validity moved at `at`: a belief of it is open again if it had lapsed (one
    /// with no acquisition before it begins as one).
    pub fn extended(&mut self, node: &str, holder: &str, at: Duration) {
        match self.current.iter_mut().find(|case| case.holder == holder) {
            Some(case) => {
                if !case.open {
                    case.open = true;
                    case.open_since = at;
                }
            }
            None => self.begin(node, holder, "", at),
        }
    }

    /// The library told `holder` (or, for a notice about its session, any holder on `node`)
    /// that its lock is lost.
    pub fn lost(&mut self, node: &str, holder: &str, why: &str, at: Duration) {
        let named = self.current.iter().any(|case| case.holder == holder);
        for case in &mut self.current {
            if case.holder == holder || (!named && case.node == node) {
                case.lost.get_or_insert((at, why.to_owned()));
            }
        }
    }

    /// `holder`'s release answered.
    pub fn released(&mut self, holder: &str, outcome: ReleaseOutcome, why: &str, at: Duration) {
        if let Some(case) = self.current.iter_mut().find(|case| case.holder == holder) {
            case.release.get_or_insert((at, outcome, why.to_owned()));
        }
    }

    /// The resource refused a write of `token` by `writer` (a client or a holder).
    pub fn refused(&mut self, writer: &str, token: &str, at: Duration) {
        if let Some(case) = self
            .current
            .iter_mut()
            .find(|case| case.token == token && (case.node == writer || case.holder == writer))
        {
            case.refused_write.get_or_insert(at);
        }
    }

    /// A belief closed.
    pub fn belief_closed(&mut self, interval: &HoldingInterval<SimulatedTime>) {
        if let Some(case) = self.case_of(&interval.holder, interval.acquired_at) {
            case.open = false;
            case.closed_until = case.closed_until.max(interval.released_at);
        }
    }

    /// T1-belief found two holders at once: the earlier was overtaken by the later's
    /// acquisition.
    pub fn overlap(&mut self, overlap: &Overlap<SimulatedTime>) {
        let from = overlap.second.acquired_at;
        if let Some(case) = self.case_of(&overlap.first.holder, overlap.first.acquired_at) {
            case.overlapped_from = Some(case.overlapped_from.map_or(from, |earlier| earlier.min(from)));
        }
    }

    /// The case a belief of `holder` that began at `since` belongs to: the latest acquisition
    /// of that holder at or before it.
    fn case_of(&mut self, holder: &str, since: Duration) -> Option<&mut Case> {
        self.current
            .iter_mut()
            .chain(self.pending.iter_mut())
            .filter(|case| case.holder == holder && case.acquired_at <= since)
            .max_by_key(|case| case.acquired_at)
    }

    /// It is `present`: an earlier acquisition whose beliefs all closed can be overtaken no
    /// more (T1-belief can find it the earlier holder of no overlap still to close) once every
    /// belief still open began before it or after its end, and the present is past its end
    /// (beliefs not yet begun begin later); it is finished.
    pub fn settle(&mut self, present: Duration) {
        let open: Vec<Duration> = self
            .current
            .iter()
            .chain(&self.pending)
            .filter(|case| case.open)
            .map(|case| case.open_since)
            .collect();
        let (done, waiting): (Vec<Case>, Vec<Case>) = std::mem::take(&mut self.pending).into_iter().partition(|case| {
            !case.open
                && case.closed_until <= present
                && open
                    .iter()
                    .all(|&since| since < case.acquired_at || since >= case.closed_until)
        });
        self.pending = waiting;
        for case in done {
            self.finish_case(case);
        }
    }

    /// The record ended: every case is finished, in the order of their acquisitions. `cut`:
    /// the record stops where a model's counterexample stops, not where a run ended, so a
    /// holder that its client had not left (it did not acquire again), whose release had not
    /// answered and that nothing had told yet might still be told: it counts as untold at the
    /// cut, not as never told.
    pub fn finish(&mut self, cut: bool) {
        let mut rest: Vec<Case> = self.pending.drain(..).chain(self.current.drain(..)).collect();
        rest.sort_by(|a, b| (a.acquired_at, &a.holder).cmp(&(b.acquired_at, &b.holder)));
        for case in rest {
            let could_hear_more = cut && !case.retired && case.release.is_none();
            self.finish_case_as(case, could_hear_more);
        }
    }

    fn finish_case(&mut self, case: Case) {
        self.finish_case_as(case, false);
    }

    fn finish_case_as(&mut self, case: Case, could_hear_more: bool) {
        if !case.overtaken() {
            return;
        }
        let lost = case.into_lost();
        self.overtaken += 1;
        match lost.delay_s() {
            None if could_hear_more => {
                self.untold_at_cut += 1;
                if self.first_untold_at_cut.is_none() {
                    self.first_untold_at_cut = Some(lost.clone());
                }
            }
            None => {
                self.never_told += 1;
                if self.first_never.is_none() {
                    self.first_never = Some(lost.clone());
                }
            }
            Some(delay) => {
                if self
                    .latest
                    .as_ref()
                    .and_then(LostHolder::delay_s)
                    .is_none_or(|d| delay > d)
                {
                    self.latest = Some(lost.clone());
                }
            }
        }
        if self.kept.len() < self.examples {
            self.kept.push(lost);
        }
    }

    /// Cases followed now (for the memory test).
    pub fn followed(&self) -> usize {
        self.current.len() + self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_reads_in_ms_below_a_second_and_says_which_side() {
        assert_eq!(relative(1.234), "1.2 s after");
        assert_eq!(relative(0.04), "40 ms after");
        assert_eq!(relative(-0.3), "300 ms before");
    }

    #[test]
    fn long_words_are_cut_at_a_word() {
        let why = "IllegalMonitorStateException: attempt to unlock lock, not locked by current thread by node id: 1234";
        let cut = short(why);
        assert!(cut.ends_with("...") && cut.len() <= 84, "{cut}");
        assert_eq!(short("LockNotOwnedError: no"), "LockNotOwnedError: no");
    }
}
