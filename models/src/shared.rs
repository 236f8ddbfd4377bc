//! A part of a model state shared, copy on write, by the states that did not change it, with its
//! hash worked out once.
//!
//! A checker builds every successor by cloning its parent and changing one part (one thread,
//! one replica), then hashes the successor whole to look it up. Behind a [`Shared`], the
//! unchanged parts are a pointer to clone and a number to hash: their hash was computed when a
//! state first hashed them, and stays with them until [`Shared::make_mut`] hands out the value
//! to change (copying it first if another state holds it).
//!
//! Equality and the hash are those of the value: two `Shared`s are equal when their values are,
//! and the cached hash is the value's under fixed-seed aHash, so equal values give equal hashes
//! in every state and every run (a check explores the same graph each time).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// See the module's essay.
pub struct Shared<T>(Arc<(T, OnceLock<u64>)>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Self {
        Shared(Arc::new((value, OnceLock::new())))
    }
}

impl<T: Clone> Shared<T> {
    /// The value to change: copied first if another state shares it, and its hash forgotten.
    pub fn make_mut(&mut self) -> &mut T {
        let (value, hash) = Arc::make_mut(&mut self.0);
        *hash = OnceLock::new();
        value
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0 .0
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 .0 == other.0 .0
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        const SEEDS: [u64; 4] = [
            0x7368_6172_6564_2d31,
            0x636f_7079_2d6f_6e2d,
            0x7772_6974_6500_0001,
            0x6861_7368_0000_0002,
        ];
        let hash = self.0 .1.get_or_init(|| {
            ahash::RandomState::with_seeds(SEEDS[0], SEEDS[1], SEEDS[2], SEEDS[3]).hash_one(&self.0 .0)
        });
        state.write_u64(*hash);
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0 .0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of<T: Hash>(value: &T) -> u64 {
        ahash::RandomState::with_seeds(1, 2, 3, 4).hash_one(value)
    }

    #[test]
    fn a_changed_value_hashes_anew_and_a_shared_copy_keeps_its_hash() {
        let mut a = Shared::new(vec![1, 2, 3]);
        let before = hash_of(&a);
        let b = a.clone();
        a.make_mut().push(4);
        assert_ne!(hash_of(&a), before, "the cached hash must be forgotten on change");
        assert_eq!(hash_of(&b), before, "the other state's copy is unchanged");
        assert_eq!(
            hash_of(&a),
            hash_of(&Shared::new(vec![1, 2, 3, 4])),
            "equal values, equal hashes"
        );
        assert_eq!(a, Shared::new(vec![1, 2, 3, 4]));
        assert_ne!(a, b);
        assert_eq!(*b, vec![1, 2, 3]);
    }
}
