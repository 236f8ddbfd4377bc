//! Published messages as a waiting client receives them (Redis pub/sub: Redisson's unlock
//! message).
//!
//! A machine that waits for a message sleeps with [`crate::algo::SleepKind::UntilNotified`]
//! and names the channel through [`crate::algo::family::FamilyLock::notification_channel`];
//! the driver subscribes before the first attempt (as Redisson does, so that a release between
//! an attempt's reply and the sleep is not missed) and ends such a sleep early when a message
//! arrives. Whether the message means anything is the machine's business: after a wake-up it
//! simply runs its attempt again.
//!
//! [`Channels`] is the delivery side, shared by the in-memory server, the simulator's servers
//! (which decide first whether a message is lost or late) and the real adapter (which forwards
//! what its Redis subscription receives). It counts messages per channel; a subscriber wakes on
//! any message published after it subscribed. Every subscriber of a channel wakes, where
//! Redisson wakes one waiting thread per message in each client process: with several waiters
//! in one process we retry more often than Redisson does, never less.
//!
//! Limits: a channel is kept only while it has a subscriber: dropping a [`Subscription`]
//! removes its channel's entry when no other subscriber of that channel remains (and any entry
//! left without a subscriber is swept on every publish and subscribe), so the table is bounded
//! by the live subscriptions.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

/// The channels messages are published on, and their subscribers.
#[derive(Default)]
pub struct Channels {
    /// Per channel: how many messages were published while it had a subscriber (shared with
    /// the subscriptions, weakly, so that a dropped one can remove its entry).
    counts: Arc<Mutex<BTreeMap<String, watch::Sender<u64>>>>,
}

impl Channels {
    pub fn new() -> Self {
        Self::default()
    }

    /// Deliver one message on `channel` to its current subscribers (none: it is gone, as in
    /// Redis).
    pub fn publish(&self, channel: &str) {
        let mut counts = lock_ignoring_poison(&self.counts);
        counts.retain(|_, sender| sender.receiver_count() > 0);
        if let Some(sender) = counts.get(channel) {
            sender.send_modify(|count| *count = count.wrapping_add(1));
        }
    }

    /// Receive the messages published on `channel` from now on.
    pub fn subscribe(&self, channel: &str) -> Subscription {
        let mut counts = lock_ignoring_poison(&self.counts);
        counts.retain(|_, sender| sender.receiver_count() > 0);
        let sender = counts.entry(channel.to_owned()).or_insert_with(|| watch::channel(0).0);
        let mut receiver = sender.subscribe();
        receiver.mark_unchanged();
        Subscription {
            receiver: Some(receiver),
            channel: channel.to_owned(),
            table: Arc::downgrade(&self.counts),
        }
    }

    /// Whether `channel` has a live subscriber.
    pub fn is_subscribed(&self, channel: &str) -> bool {
        let counts = lock_ignoring_poison(&self.counts);
        counts.get(channel).is_some_and(|sender| sender.receiver_count() > 0)
    }

    /// The names of the channels with a live subscriber, in order.
    pub fn subscribed_names(&self) -> Vec<String> {
        let counts = lock_ignoring_poison(&self.counts);
        counts
            .iter()
            .filter(|(_, sender)| sender.receiver_count() > 0)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Channels with a live subscriber (for tests of the limit).
    pub fn channels(&self) -> usize {
        let counts = lock_ignoring_poison(&self.counts);
        counts.values().filter(|sender| sender.receiver_count() > 0).count()
    }
}

/// One client's subscription to one channel. Dropping it unsubscribes: the channel's entry
/// goes when this was its last subscriber.
pub struct Subscription {
    /// Always `Some` until dropped.
    receiver: Option<watch::Receiver<u64>>,
    channel: String,
    table: Weak<Mutex<BTreeMap<String, watch::Sender<u64>>>>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(table) = self.table.upgrade() else {
            return;
        };
        // Under the table's lock, so that a subscribe to the same channel either comes before
        // (and keeps the entry) or after (and makes a new one).
        let mut counts = lock_ignoring_poison(&table);
        drop(self.receiver.take());
        if counts
            .get(&self.channel)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            counts.remove(&self.channel);
        }
    }
}

impl Subscription {
    /// Wait for a message published after the last one this subscription saw (or after it
    /// subscribed). Messages that arrived while nobody waited count once: a waiter that missed
    /// several wakes once and retries. Never returns once the channel's table is gone.
    pub async fn message(&mut self) {
        let Some(receiver) = self.receiver.as_mut() else {
            return std::future::pending::<()>().await;
        };
        if receiver.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

fn lock_ignoring_poison<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a message is pending, taking it (what `message().await` would do at once).
    fn woke(subscription: &mut Subscription) -> bool {
        let receiver = subscription.receiver.as_mut().expect("live");
        let pending = receiver.has_changed().unwrap_or(false);
        receiver.mark_unchanged();
        pending
    }

    #[test]
    fn a_subscriber_wakes_on_messages_after_it_subscribed_only() {
        let channels = Channels::new();
        channels.publish("lock-a");
        let mut a = channels.subscribe("lock-a");
        let mut b = channels.subscribe("lock-b");
        assert!(!woke(&mut a), "a message before the subscription is not delivered");
        channels.publish("lock-a");
        channels.publish("lock-a");
        assert!(woke(&mut a), "a message after it wakes it");
        assert!(!woke(&mut a), "two messages while nobody waited wake it once");
        assert!(!woke(&mut b), "another channel's message does not wake it");
    }

    #[test]
    fn the_table_keeps_only_channels_with_a_subscriber() {
        let channels = Channels::new();
        let kept = channels.subscribe("kept");
        for i in 0..1000 {
            drop(channels.subscribe(&format!("lock-{i}")));
            channels.publish(&format!("lock-{i}"));
        }
        assert_eq!(channels.channels(), 1);
        assert_eq!(
            lock_ignoring_poison(&channels.counts).len(),
            1,
            "dropped channels are swept"
        );
        drop(kept);
    }

    #[test]
    fn a_dropped_subscription_removes_its_channel_when_it_was_the_last_subscriber() {
        let channels = Channels::new();
        let table = |channels: &Channels| lock_ignoring_poison(&channels.counts).len();
        // One channel per acquisition (the fair lock's waiter channels), none published on:
        // nothing is left once each is dropped, with no publish or subscribe to sweep.
        for i in 0..100 {
            let subscription = channels.subscribe(&format!("waiter-{i}"));
            assert_eq!(table(&channels), 1);
            drop(subscription);
            assert_eq!(table(&channels), 0, "waiter-{i}'s entry is gone with its subscription");
        }
        // Two subscribers of one channel: the entry stays until the second goes, and the one
        // left still receives.
        let first = channels.subscribe("shared");
        let mut second = channels.subscribe("shared");
        drop(first);
        assert!(channels.is_subscribed("shared"));
        channels.publish("shared");
        assert!(woke(&mut second), "the remaining subscriber still wakes");
        drop(second);
        assert!(!channels.is_subscribed("shared"));
        assert_eq!(table(&channels), 0);
        // A subscription outliving its table drops quietly.
        let orphan = channels.subscribe("orphan");
        drop(channels);
        drop(orphan);
    }
}
