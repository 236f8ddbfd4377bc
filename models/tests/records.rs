//! The model writes its paths as the event record every driver writes, and the one judge reads
//! them as the model judged them: a counterexample to T1 (T1-belief) is an overlap of two
//! beliefs for the judge, one to T1-resource a stale write the resource accepted; and along
//! seeded random walks of the lock world and of the family worlds, the judge finds an overlap
//! exactly when some state of the walk had two holders (believers), and a stale write accepted
//! exactly when the model's resource took one.

mod pinning;

use cassalock::registry::Lock;
use cassalock_judge::event::{self, Driver, Record};
use cassalock_judge::{judge, Judgement};
use cassalock_models::lock_world::{LockModel, World};
use cassalock_models::{build, Fault, ModelName, Mutant, Runnable, Spec, SpecError};
use pinning::{first_violation, spec};
use stateright::Model;

/// `record` written to bytes, read back and judged as a run seen from outside.
fn judged(record: &Record) -> cassalock_judge::observed::ObservedVerdicts {
    let mut bytes = Vec::new();
    event::write(&mut bytes, &record.header, &record.events).expect("writes to memory");
    let read = event::read(&bytes[..]).expect("reads back");
    assert_eq!(&read, record);
    match judge(&read) {
        Judgement::Observed(verdicts) => *verdicts,
        other => panic!("a model's record is judged as observed: {other:?}"),
    }
}

#[test]
fn every_t1_counterexample_of_the_model_is_an_overlap_for_the_judge() {
    let mut m1 = spec(ModelName::Lock(Lock::Queue), Fault::DelayedEnqueue);
    m1.mutant = Some(Mutant::M1);
    for (name, spec) in [
        ("getlock pause (K1)", spec(ModelName::Lock(Lock::Queue), Fault::Pause)),
        (
            "getlock a coordinator a TTL ahead (S2)",
            spec(ModelName::Lock(Lock::Queue), Fault::TtlSkew),
        ),
        ("getlock M1 with delayed enqueue", m1),
        ("old pause", spec(ModelName::Lock(Lock::Old), Fault::Pause)),
    ] {
        let report = first_violation(&spec, "T1");
        let row = report.row("T1");
        let record = row.record.as_ref().unwrap_or_else(|| panic!("{name}: no record"));
        assert_eq!(record.header.driver, Driver::Model);
        let verdicts = judged(record);
        assert!(
            !verdicts.overlaps.is_empty(),
            "{name}: the judge finds no overlap in the model's T1 counterexample:\n{}\n{verdicts}",
            row.trace.as_ref().map(ToString::to_string).unwrap_or_default()
        );
    }
}

#[test]
fn a_t1_resource_counterexample_is_a_stale_write_the_resource_accepted() {
    let report = first_violation(&spec(ModelName::Lock(Lock::Queue), Fault::Pause), "T1-resource");
    let verdicts = judged(report.row("T1-resource").record.as_ref().expect("a record"));
    assert_eq!(verdicts.stale_accepted(), 1, "{verdicts}");
}

/// A small deterministic generator (xorshift), so the walks need no dependency.
struct Walker(u64);

impl Walker {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A walk of at most `steps` random actions from the first initial state: the actions, and
/// whether some state had two holders, and whether some state had a stale write accepted.
fn walk(model: &LockModel, seed: u64, steps: usize) -> (Vec<cassalock_models::lock_world::Act>, bool, bool) {
    let mut walker = Walker(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut world: World = model.init_states().swap_remove(0);
    let (mut taken, mut two_holders, mut stale_accepted) = (Vec::new(), false, false);
    for _ in 0..steps {
        let mut actions = Vec::new();
        model.actions(&world, &mut actions);
        if actions.is_empty() {
            break;
        }
        let act = actions[walker.below(actions.len())];
        world = model.next_state(&world, act).expect("an enabled action");
        taken.push(act);
        two_holders |= LockModel::holders(&world).count() > 1;
        stale_accepted |= world.resource.stale_accepted;
    }
    (taken, two_holders, stale_accepted)
}

#[test]
fn along_random_walks_the_judge_and_the_model_agree_on_t1_and_t1_resource() {
    let mut fenced_pause = spec(ModelName::Lock(Lock::Queue), Fault::Pause);
    fenced_pause.fencing = true;
    // (world, walks): more where a stale write needs a long way (a pause, another holder's
    // write, then the paused holder's).
    let worlds: Vec<(&str, Spec, u64)> = vec![
        ("getlock", Spec::new(ModelName::Lock(Lock::Queue)), 600),
        ("getlock pause", spec(ModelName::Lock(Lock::Queue), Fault::Pause), 4000),
        ("getlock pause, fencing", fenced_pause, 600),
        ("getlock crash", spec(ModelName::Lock(Lock::Queue), Fault::Crash), 600),
        (
            "getlock TTL skew",
            spec(ModelName::Lock(Lock::Queue), Fault::TtlSkew),
            600,
        ),
        ("old pause", spec(ModelName::Lock(Lock::Old), Fault::Pause), 4000),
        (
            "trygetlock TTL skew",
            spec(ModelName::Lock(Lock::QueueTry), Fault::TtlSkew),
            600,
        ),
    ];
    let (mut walks, mut with_overlap, mut with_stale) = (0, 0, 0);
    for (name, spec, seeds) in worlds {
        let Ok(Runnable::Lock(model)) = build(&spec) else {
            panic!("{name}: a lock world")
        };
        for seed in 0..seeds {
            let (actions, two_holders, stale_accepted) = walk(&model, seed, 200);
            let verdicts = judged(&model.path_record(0, &actions));
            assert_eq!(
                !verdicts.overlaps.is_empty(),
                two_holders,
                "{name}, walk {seed}: the model {} two holders, the judge {}:\n{verdicts}",
                if two_holders { "saw" } else { "never saw" },
                if verdicts.overlaps.is_empty() {
                    "found no overlap"
                } else {
                    "found one"
                }
            );
            assert_eq!(
                verdicts.stale_accepted() > 0,
                stale_accepted,
                "{name}, walk {seed}: stale write accepted, model {stale_accepted}:\n{verdicts}"
            );
            walks += 1;
            with_overlap += usize::from(two_holders);
            with_stale += usize::from(stale_accepted);
        }
    }
    // The walks must have shown both cases, or the test says nothing.
    assert!(
        with_overlap >= 50 && with_stale >= 3,
        "{walks} walks: {with_overlap} with two holders, {with_stale} with a stale write accepted"
    );
    eprintln!("{walks} walks: {with_overlap} with two holders, {with_stale} with a stale write accepted");
}

#[test]
fn a_family_model_s_t1_belief_counterexample_is_an_overlap_for_the_judge() {
    for (name, spec) in [
        (
            "redis-set-nx restart",
            spec(ModelName::Lock(Lock::RedisSetNx), Fault::Restart),
        ),
        (
            "redis-set-nx server clock jump",
            spec(ModelName::Lock(Lock::RedisSetNx), Fault::ServerClockJump),
        ),
        ("zookeeper pause", spec(ModelName::Lock(Lock::Zookeeper), Fault::Pause)),
    ] {
        let report = first_violation(&spec, "T1-belief");
        let row = report.row("T1-belief");
        let verdicts = judged(row.record.as_ref().unwrap_or_else(|| panic!("{name}: no record")));
        assert!(
            !verdicts.overlaps.is_empty(),
            "{name}: no overlap in the model's counterexample:\n{}\n{verdicts}",
            row.trace.as_ref().map(ToString::to_string).unwrap_or_default()
        );
    }
}

/// A walk of a family world, as [`walk`]: the actions, whether some state had two clients
/// believing, and whether the resource took a stale write.
fn family_walk<F: cassalock_models::family::ModelFamily>(
    model: &cassalock_models::family::FamilyModel<F>,
    seed: u64,
    steps: usize,
) -> (Vec<cassalock_models::family::Act>, bool, bool) {
    let mut walker = Walker(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut world = model.init_states().swap_remove(0);
    let (mut taken, mut two, mut stale) = (Vec::new(), false, false);
    for _ in 0..steps {
        let mut actions = Vec::new();
        model.actions(&world, &mut actions);
        if actions.is_empty() {
            break;
        }
        let act = actions[walker.below(actions.len())];
        world = model.next_state(&world, act).expect("an enabled action");
        taken.push(act);
        two |= (0..world.clients.len()).filter(|&i| model.believes(&world, i)).count() > 1;
        stale |= world.resource.stale_write;
    }
    (taken, two, stale)
}

/// Along seeded random walks of family worlds, the judge finds an overlap exactly when two
/// clients believed at once in some state, and an accepted stale write exactly when the
/// model's resource took one.
#[test]
fn along_random_walks_of_family_worlds_the_judge_and_the_model_agree() {
    fn agree<F: cassalock_models::family::ModelFamily>(
        name: &str,
        model: &cassalock_models::family::FamilyModel<F>,
        seeds: u64,
        tally: &mut (usize, usize, usize),
    ) {
        for seed in 0..seeds {
            let (actions, two, stale) = family_walk(model, seed, 200);
            let verdicts = judged(&model.path_record(0, &actions));
            assert_eq!(
                !verdicts.overlaps.is_empty(),
                two,
                "{name}, walk {seed}: model two believers {two}:\n{verdicts}"
            );
            assert_eq!(
                verdicts.stale_accepted() > 0,
                stale,
                "{name}, walk {seed}: model stale {stale}:\n{verdicts}"
            );
            tally.0 += 1;
            tally.1 += usize::from(two);
            tally.2 += usize::from(stale);
        }
    }
    /// Walk `F`'s model under `fault`.
    fn agree_for<F: cassalock_models::family::ModelFamily>(
        name: &str,
        fault: Fault,
        tally: &mut (usize, usize, usize),
    ) {
        let lock = F::LOCK.unwrap_or_else(|| panic!("{name}: a lock of the registry"));
        let model = cassalock_models::family_model::<F>(&spec(ModelName::Lock(lock), fault))
            .unwrap_or_else(|e: SpecError| panic!("{name}: {e}"));
        agree(name, &model, 1500, tally);
    }
    let mut tally = (0, 0, 0);
    use cassalock::algo::family::{CuratorLock, EtcdLock, MemcachedLock, RedissonLock, RedlockLock, SetNxLock};
    type Walks = fn(&str, Fault, &mut (usize, usize, usize));
    let cases: [(&str, Fault, Walks); 8] = [
        ("redis-set-nx pause", Fault::Pause, agree_for::<SetNxLock>),
        ("redis-set-nx restart", Fault::Restart, agree_for::<SetNxLock>),
        (
            "redis-set-nx clock jump",
            Fault::ServerClockJump,
            agree_for::<SetNxLock>,
        ),
        ("redlock restart", Fault::Restart, agree_for::<RedlockLock>),
        ("memcached pause", Fault::Pause, agree_for::<MemcachedLock>),
        ("redisson pause", Fault::Pause, agree_for::<RedissonLock>),
        ("zookeeper pause", Fault::Pause, agree_for::<CuratorLock>),
        ("etcd pause", Fault::Pause, agree_for::<EtcdLock>),
    ];
    for (name, fault, walks) in cases {
        walks(name, fault, &mut tally);
    }
    let (walks, two, stale) = tally;
    assert!(
        two >= 20 && stale >= 5,
        "{walks} walks: {two} with two believers, {stale} with a stale write accepted"
    );
    eprintln!("{walks} family walks: {two} with two believers, {stale} with a stale write accepted");
}
