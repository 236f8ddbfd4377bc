use super::*;

fn put(key: &str, value: &str, lease: LeaseId) -> EtcdCommand {
    EtcdCommand::put(key, value, lease)
}

fn get(key: &str) -> EtcdCommand {
    EtcdCommand::Range(RangeRequest::key(key))
}

fn grant(id: LeaseId, ttl_s: i64) -> EtcdCommand {
    EtcdCommand::LeaseGrant { id, ttl_s }
}

fn put_op(key: &str, lease: LeaseId) -> TxnOp {
    TxnOp::Put {
        key: key.into(),
        value: String::new(),
        lease,
    }
}

fn kvs(reply: &EtcdReply) -> Vec<KeyValue> {
    match &reply.response {
        EtcdResponse::Range(range) => range.kvs.clone(),
        other => panic!("not a range response: {other:?}"),
    }
}

/// The mutex's acquire for the key `lock/<lease>`: put it if it does not exist, and read who
/// holds (the first created under the prefix).
fn mutex_acquire(lease: LeaseId) -> EtcdCommand {
    let own = format!("lock/{lease:x}");
    let holder = TxnOp::Range(RangeRequest::prefix("lock/").first_created());
    EtcdCommand::Txn(TxnRequest {
        compares: vec![Compare::create_revision(&own, CompareResult::Equal, 0)],
        success: vec![put_op(&own, lease), holder.clone()],
        failure: vec![TxnOp::Range(RangeRequest::key(&own)), holder],
    })
}

#[test]
fn the_empty_store_is_at_revision_1_and_each_write_request_adds_one_however_many_keys() {
    let mut etcd = EtcdKeyspace::new();
    assert_eq!(etcd.apply(&get("a"), 0).revision, 1);
    assert_eq!(etcd.apply(&put("a", "1", NO_LEASE), 0).revision, 2);
    let two_puts = EtcdCommand::Txn(TxnRequest {
        success: vec![put_op("b", NO_LEASE), put_op("c", NO_LEASE)],
        ..TxnRequest::default()
    });
    let executed = etcd.execute(&two_puts, 0);
    assert_eq!(executed.reply.revision, 3, "a transaction is one revision");
    assert_eq!(executed.events.len(), 2);
    assert!(executed.events.iter().all(|event| event.revision() == 3));
    assert_eq!(etcd.get("b").map(|kv| kv.create_revision), Some(3));
    assert_eq!(etcd.get("c").map(|kv| kv.create_revision), Some(3));
}

#[test]
fn a_request_that_changes_nothing_keeps_the_revision() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&put("a", "1", NO_LEASE), 0);
    let nothing = etcd.execute(&EtcdCommand::delete("missing"), 0);
    assert_eq!(nothing.reply.response, EtcdResponse::DeleteRange { deleted: 0 });
    assert_eq!(nothing.reply.revision, 2);
    assert!(nothing.events.is_empty());
    // A failed compare whose failure branch only reads writes nothing.
    let reads_only = EtcdCommand::Txn(TxnRequest {
        compares: vec![Compare::create_revision("a", CompareResult::Equal, 0)],
        success: vec![put_op("a", NO_LEASE)],
        failure: vec![TxnOp::Range(RangeRequest::key("a"))],
    });
    let reply = etcd.apply(&reads_only, 0);
    assert!(matches!(reply.response, EtcdResponse::Txn { succeeded: false, .. }));
    assert_eq!(reply.revision, 2);
    assert_eq!(etcd.get("a").map(|kv| kv.value.as_str()), Some("1"));
}

#[test]
fn version_counts_puts_since_creation_and_a_delete_starts_the_key_afresh() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&put("k", "1", NO_LEASE), 0);
    etcd.apply(&put("k", "2", NO_LEASE), 0);
    let kv = etcd.get("k").cloned();
    assert_eq!(
        kv.map(|kv| (kv.create_revision, kv.mod_revision, kv.version)),
        Some((2, 3, 2))
    );
    etcd.apply(&EtcdCommand::delete("k"), 0);
    etcd.apply(&put("k", "3", NO_LEASE), 0);
    let kv = etcd.get("k").cloned();
    assert_eq!(
        kv.map(|kv| (kv.create_revision, kv.mod_revision, kv.version)),
        Some((5, 5, 1)),
        "re-created: a new, higher create_revision (the fencing token grows)"
    );
}

#[test]
fn compares_on_a_missing_key_see_zeros_and_a_value_compare_always_fails() {
    let mut etcd = EtcdKeyspace::new();
    let txn = |target: CompareTarget, result: CompareResult| {
        EtcdCommand::Txn(TxnRequest {
            compares: vec![Compare {
                key: "missing".into(),
                result,
                target,
            }],
            ..TxnRequest::default()
        })
    };
    let succeeded = |reply: EtcdReply| matches!(reply.response, EtcdResponse::Txn { succeeded: true, .. });
    assert!(succeeded(
        etcd.apply(&txn(CompareTarget::CreateRevision(0), CompareResult::Equal), 0)
    ));
    assert!(succeeded(
        etcd.apply(&txn(CompareTarget::Version(1), CompareResult::Less), 0)
    ));
    assert!(!succeeded(
        etcd.apply(&txn(CompareTarget::ModRevision(0), CompareResult::Greater), 0)
    ));
    for result in [
        CompareResult::Equal,
        CompareResult::NotEqual,
        CompareResult::Less,
        CompareResult::Greater,
    ] {
        assert!(
            !succeeded(etcd.apply(&txn(CompareTarget::Value(String::new()), result), 0)),
            "value {result:?} on a missing key"
        );
    }
    etcd.apply(&put("missing", "b", NO_LEASE), 0);
    assert!(succeeded(
        etcd.apply(&txn(CompareTarget::Value("a".into()), CompareResult::Greater), 0)
    ));
}

#[test]
fn a_transactions_reads_see_its_own_earlier_writes_and_compares_see_the_store_before_it() {
    let mut etcd = EtcdKeyspace::new();
    let txn = EtcdCommand::Txn(TxnRequest {
        compares: vec![Compare::create_revision("a", CompareResult::Equal, 0)],
        success: vec![
            TxnOp::Range(RangeRequest::key("a")),
            put_op("a", NO_LEASE),
            TxnOp::Range(RangeRequest::key("a")),
            TxnOp::Range(RangeRequest::key("a").at_revision(1)),
        ],
        failure: vec![],
    });
    let reply = etcd.apply(&txn, 0);
    let EtcdResponse::Txn {
        succeeded: true,
        responses,
    } = reply.response
    else {
        panic!("{reply:?}")
    };
    let found: Vec<usize> = responses
        .iter()
        .filter_map(|response| match response {
            EtcdResponse::Range(range) => Some(range.kvs.len()),
            _ => None,
        })
        .collect();
    assert_eq!(found, vec![0, 1, 0], "before the put, after it, and as of revision 1");
}

#[test]
fn a_put_with_a_missing_lease_writes_nothing_alone_or_in_a_transaction() {
    let mut etcd = EtcdKeyspace::new();
    let executed = etcd.execute(&put("k", "v", 7), 0);
    assert_eq!(executed.reply.response, EtcdResponse::Error(EtcdError::LeaseNotFound));
    assert_eq!(executed.reply.revision, 1);
    let txn = EtcdCommand::Txn(TxnRequest {
        success: vec![put_op("a", NO_LEASE), put_op("b", 7)],
        ..TxnRequest::default()
    });
    assert_eq!(
        etcd.apply(&txn, 0).response,
        EtcdResponse::Error(EtcdError::LeaseNotFound)
    );
    assert_eq!(
        etcd.key_values().count(),
        0,
        "the first put of the branch did not happen either"
    );
    assert_eq!(etcd.revision(), 1);
}

#[test]
fn a_branch_that_writes_a_key_twice_is_refused_even_when_not_taken() {
    let mut etcd = EtcdKeyspace::new();
    let refused = |success: Vec<TxnOp>, failure: Vec<TxnOp>| {
        EtcdCommand::Txn(TxnRequest {
            compares: vec![],
            success,
            failure,
        })
    };
    let twice = vec![put_op("a", NO_LEASE), put_op("a", NO_LEASE)];
    let put_and_delete = vec![
        TxnOp::DeleteRange {
            range: KeyRange::Prefix("a".into()),
        },
        put_op("ab", NO_LEASE),
    ];
    for txn in [refused(vec![], twice), refused(put_and_delete, vec![])] {
        assert_eq!(
            etcd.apply(&txn, 0).response,
            EtcdResponse::Error(EtcdError::DuplicateKey)
        );
    }
    let two_deletes = vec![
        TxnOp::DeleteRange {
            range: KeyRange::Key("a".into()),
        },
        TxnOp::DeleteRange {
            range: KeyRange::Prefix(String::new()),
        },
    ];
    assert!(matches!(
        etcd.apply(&refused(two_deletes, vec![]), 0).response,
        EtcdResponse::Txn { .. }
    ));
    let too_many = refused(vec![TxnOp::Range(RangeRequest::key("a")); MAX_TXN_OPS + 1], vec![]);
    assert_eq!(
        etcd.apply(&too_many, 0).response,
        EtcdResponse::Error(EtcdError::TooManyOps)
    );
    assert_eq!(
        etcd.apply(&put("", "v", NO_LEASE), 0).response,
        EtcdResponse::Error(EtcdError::EmptyKey)
    );
}

#[test]
fn leases_get_at_least_the_minimum_ttl_and_refuse_id_0_a_second_grant_and_a_huge_ttl() {
    let mut etcd = EtcdKeyspace::new();
    assert_eq!(
        etcd.apply(&grant(1, 1), 0).response,
        EtcdResponse::LeaseGrant {
            id: 1,
            ttl_s: MIN_LEASE_TTL_S
        }
    );
    assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(2_000));
    let refused = [
        (grant(1, 5), EtcdError::LeaseExists),
        (grant(0, 5), EtcdError::LeaseIdZero),
        (grant(2, MAX_LEASE_TTL_S + 1), EtcdError::LeaseTtlTooLarge),
    ];
    for (command, error) in refused {
        assert_eq!(etcd.apply(&command, 0).response, EtcdResponse::Error(error));
    }
    assert_eq!(
        etcd.apply(&grant(2, MAX_LEASE_TTL_S), 0).response,
        EtcdResponse::LeaseGrant {
            id: 2,
            ttl_s: MAX_LEASE_TTL_S
        }
    );
    assert_eq!(etcd.revision(), 1, "lease requests are not key writes");
}

#[test]
fn a_lease_expires_at_its_deadline_and_takes_its_keys_in_one_revision() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(1, 5), 1_000);
    etcd.apply(&put("b", "v", 1), 1_000);
    etcd.apply(&put("a", "v", 1), 1_000);
    etcd.apply(&put("c", "v", NO_LEASE), 1_000);
    assert_eq!(etcd.apply(&get("a"), 5_999).revision, 4);
    assert_eq!(
        kvs(&etcd.apply(&get("a"), 5_999)).len(),
        1,
        "live one millisecond before"
    );
    let executed = etcd.execute(&get("a"), 6_000);
    assert_eq!(executed.expiry.revoked.len(), 1);
    let expired = &executed.expiry.revoked[0];
    assert_eq!((expired.id, expired.revision), (1, Some(5)));
    let deleted: Vec<&str> = expired.events.iter().map(WatchEvent::key).collect();
    assert_eq!(deleted, vec!["a", "b"], "in key order, one revision");
    assert!(kvs(&executed.reply).is_empty());
    assert_eq!(executed.reply.revision, 5);
    assert!(etcd.get("c").is_some(), "a key without the lease stays");
    assert_eq!(
        etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 1 }, 6_000).response,
        EtcdResponse::Error(EtcdError::LeaseNotFound)
    );
}

#[test]
fn expired_leases_are_revoked_in_deadline_order_one_revision_each_and_without_keys_none() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(9, 2), 0);
    etcd.apply(&grant(3, 3), 0);
    etcd.apply(&grant(4, 2), 0);
    etcd.apply(&put("x", "v", 3), 0);
    etcd.apply(&put("y", "v", 9), 0);
    let expiry = etcd.expire_leases(10_000);
    let order: Vec<(LeaseId, Option<Revision>)> =
        expiry.revoked.iter().map(|lease| (lease.id, lease.revision)).collect();
    assert_eq!(order, vec![(4, None), (9, Some(4)), (3, Some(5))]);
    assert_eq!(etcd.leases().count(), 0);
}

#[test]
fn keep_alive_resets_the_deadline_and_time_to_live_answers_whole_seconds_left() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(1, 10), 0);
    etcd.apply(&put("k", "v", 1), 0);
    let ttl = EtcdCommand::LeaseTimeToLive { id: 1 };
    assert_eq!(
        etcd.apply(&ttl, 2_500).response,
        EtcdResponse::LeaseTimeToLive {
            id: 1,
            ttl_s: 7,
            granted_ttl_s: 10,
            keys: vec!["k".into()]
        },
        "7.5 s left, truncated"
    );
    assert_eq!(
        etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 1 }, 9_999).response,
        EtcdResponse::LeaseKeepAlive { id: 1, ttl_s: 10 }
    );
    assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(19_999));
    assert_eq!(
        kvs(&etcd.apply(&get("k"), 19_998)).len(),
        1,
        "live until the new deadline"
    );
    assert_eq!(
        etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 1 }, 19_999).response,
        EtcdResponse::LeaseTimeToLive {
            id: 1,
            ttl_s: -1,
            granted_ttl_s: 0,
            keys: vec![]
        }
    );
}

#[test]
fn revoke_deletes_the_attached_keys_and_a_put_moves_a_key_between_leases() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(1, 60), 0);
    etcd.apply(&grant(2, 60), 0);
    etcd.apply(&put("a", "v", 1), 0);
    etcd.apply(&put("b", "v", 1), 0);
    etcd.apply(&put("b", "w", 2), 0);
    etcd.apply(&put("c", "v", 1), 0);
    etcd.apply(&put("c", "w", NO_LEASE), 0);
    assert_eq!(
        etcd.lease(1)
            .map(|lease| lease.keys.iter().cloned().collect::<Vec<_>>()),
        Some(vec!["a".to_owned()])
    );
    let executed = etcd.execute(&EtcdCommand::LeaseRevoke { id: 1 }, 0);
    assert_eq!(executed.reply.response, EtcdResponse::LeaseRevoke);
    assert_eq!(executed.events.len(), 1);
    assert_eq!(
        etcd.key_values().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
        vec!["b", "c"]
    );
    assert_eq!(
        etcd.apply(&EtcdCommand::LeaseRevoke { id: 1 }, 0).response,
        EtcdResponse::Error(EtcdError::LeaseNotFound)
    );
}

#[test]
fn reads_at_an_older_revision_until_compacted_and_never_in_the_future() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&put("k", "1", NO_LEASE), 0);
    etcd.apply(&put("k", "2", NO_LEASE), 0);
    etcd.apply(&EtcdCommand::delete("k"), 0);
    let at = |etcd: &mut EtcdKeyspace, revision| {
        etcd.apply(&EtcdCommand::Range(RangeRequest::key("k").at_revision(revision)), 0)
            .response
    };
    let values = |response: EtcdResponse| match response {
        EtcdResponse::Range(range) => range.kvs.into_iter().map(|kv| kv.value).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(values(at(&mut etcd, 1)), Vec::<String>::new());
    assert_eq!(values(at(&mut etcd, 2)), vec!["1"]);
    assert_eq!(values(at(&mut etcd, 3)), vec!["2"]);
    assert_eq!(values(at(&mut etcd, 4)), Vec::<String>::new());
    assert_eq!(
        at(&mut etcd, 5),
        EtcdResponse::Error(EtcdError::FutureRevision { current_revision: 4 })
    );
    assert_eq!(
        etcd.apply(&EtcdCommand::Compact { revision: 3 }, 0).response,
        EtcdResponse::Compact
    );
    assert_eq!(
        at(&mut etcd, 2),
        EtcdResponse::Error(EtcdError::Compacted { compact_revision: 3 })
    );
    assert_eq!(
        values(at(&mut etcd, 3)),
        vec!["2"],
        "the compaction revision itself is readable"
    );
    for (revision, error) in [
        (3, EtcdError::Compacted { compact_revision: 3 }),
        (5, EtcdError::FutureRevision { current_revision: 4 }),
    ] {
        assert_eq!(
            etcd.apply(&EtcdCommand::Compact { revision }, 0).response,
            EtcdResponse::Error(error)
        );
    }
    assert_eq!(etcd.key_values_at(2), Err(EtcdError::Compacted { compact_revision: 3 }));
}

#[test]
fn the_mutex_reads_who_holds_and_whom_to_wait_for() {
    let mut etcd = EtcdKeyspace::new();
    for lease in [0xa, 0xb, 0xc] {
        etcd.apply(&grant(lease, 30), 0);
    }
    // Queue in the order c, a, b: create revisions 2, 3, 4.
    for lease in [0xc, 0xa, 0xb] {
        etcd.apply(&mutex_acquire(lease), 0);
    }
    let holder = etcd.apply(&EtcdCommand::Range(RangeRequest::prefix("lock/").first_created()), 0);
    let EtcdResponse::Range(range) = &holder.response else {
        panic!("{holder:?}")
    };
    assert_eq!(
        range.kvs.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
        vec!["lock/c"]
    );
    assert_eq!((range.count, range.more), (3, true));
    // b (created at 4) waits for the key created last at or below 3: a's, not the holder's.
    let predecessor = etcd.apply(
        &EtcdCommand::Range(RangeRequest::prefix("lock/").last_created_at_most(3)),
        0,
    );
    assert_eq!(
        kvs(&predecessor).iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
        vec!["lock/a"]
    );
    // A retried acquire finds its own key and does not queue again.
    let retried = etcd.execute(&mutex_acquire(0xa), 0);
    assert!(matches!(
        retried.reply.response,
        EtcdResponse::Txn { succeeded: false, .. }
    ));
    assert!(retried.events.is_empty());
}

#[test]
fn watch_events_from_a_revision_with_the_previous_key_value() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&put("lock/a", "1", NO_LEASE), 0);
    etcd.apply(&put("other", "1", NO_LEASE), 0);
    etcd.apply(&put("lock/a", "2", NO_LEASE), 0);
    etcd.apply(&EtcdCommand::delete("lock/a"), 0);
    let events = etcd
        .watch_events(3, &KeyRange::Prefix("lock/".into()))
        .unwrap_or_default();
    let shown: Vec<String> = events.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        vec!["PUT lock/a=\"2\" (create 2, mod 4, version 2) @4", "DELETE lock/a @5"]
    );
    assert!(matches!(&events[0], WatchEvent::Put { prev_kv: Some(prev), .. } if prev.value == "1"));
    assert!(matches!(&events[1], WatchEvent::Delete { prev_kv, .. } if prev_kv.value == "2"));
    assert_eq!(etcd.watch_events(6, &KeyRange::Prefix(String::new())), Ok(vec![]));
    etcd.apply(&EtcdCommand::Compact { revision: 4 }, 0);
    assert_eq!(
        etcd.watch_events(3, &KeyRange::Key("lock/a".into())),
        Err(EtcdError::Compacted { compact_revision: 4 })
    );
    assert_eq!(
        etcd.watch_events(4, &KeyRange::Key("lock/a".into())).map(|e| e.len()),
        Ok(2)
    );
}

#[test]
fn past_the_history_limit_the_oldest_revisions_are_compacted_whole_and_reported() {
    let mut etcd = EtcdKeyspace::with_history_limit(3);
    etcd.apply(&put("a", "1", NO_LEASE), 0);
    etcd.apply(&put("b", "1", NO_LEASE), 0);
    etcd.apply(&put("c", "1", NO_LEASE), 0);
    assert_eq!(etcd.compact_revision(), 0);
    let two = EtcdCommand::Txn(TxnRequest {
        success: vec![put_op("a", NO_LEASE), put_op("b", NO_LEASE)],
        ..TxnRequest::default()
    });
    let executed = etcd.execute(&two, 0);
    assert_eq!(executed.auto_compacted, Some(4), "revisions 2 and 3 dropped");
    assert_eq!(etcd.history().count(), 3);
    // A revision larger than the limit is kept whole.
    let mut small = EtcdKeyspace::with_history_limit(1);
    let executed = small.execute(&two, 0);
    assert_eq!(executed.auto_compacted, None);
    assert_eq!(small.history().count(), 2);
    assert_eq!(small.execute(&put("c", "1", NO_LEASE), 0).auto_compacted, Some(3));
}

#[test]
fn a_new_leader_gives_every_lease_a_whole_ttl_even_one_past_its_deadline() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(1, 5), 0);
    etcd.apply(&put("lock/1", "", 1), 0);
    // No leader between 4 s and 60 s: nobody revoked the lease.
    etcd.promote(60_000, DEFAULT_ELECTION_TIMEOUT_MS);
    assert_eq!(etcd.lease(1).map(|lease| lease.deadline_ms), Some(66_000));
    assert_eq!(kvs(&etcd.apply(&get("lock/1"), 65_999)).len(), 1);
    assert!(kvs(&etcd.apply(&get("lock/1"), 66_000)).is_empty());
}

/// etcd-io/etcd#11456: a waiter whose lease expires while it waits is no holder, and every
/// primitive says so; the next holder's token is higher.
#[test]
fn a_waiter_whose_lease_expired_is_told_by_its_own_key_its_watch_and_its_keep_alive() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(0xa, 5), 0);
    etcd.apply(&grant(0xb, 5), 0);
    etcd.apply(&mutex_acquire(0xa), 0); // holds, token 2
    let queued = etcd.apply(&mutex_acquire(0xb), 0); // waits for lock/a, token 3
    assert_eq!(queued.revision, 3);
    etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 0xa }, 4_000); // a stays; b is paused
                                                                 // a releases at 5 s: b's lease expired first, in its own revision.
    let release = etcd.execute(&EtcdCommand::delete("lock/a"), 5_000);
    assert_eq!(
        release.expiry.revoked.first().map(|lease| (lease.id, lease.revision)),
        Some((0xb, Some(4)))
    );
    assert_eq!(release.reply.revision, 5);
    // b's wait on its predecessor ends (3.4.3 answered "acquired" here) ...
    let predecessor = etcd
        .watch_events(4, &KeyRange::Key("lock/a".into()))
        .unwrap_or_default();
    assert_eq!(
        predecessor.iter().map(WatchEvent::revision).collect::<Vec<_>>(),
        vec![5]
    );
    // ... but its own key is gone, its watch on it saw the delete, its lease is unknown.
    assert!(kvs(&etcd.apply(&get("lock/b"), 5_000)).is_empty());
    let own = etcd
        .watch_events(4, &KeyRange::Key("lock/b".into()))
        .unwrap_or_default();
    assert_eq!(
        own.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["DELETE lock/b @4"]
    );
    assert_eq!(
        etcd.apply(&EtcdCommand::LeaseKeepAlive { id: 0xb }, 5_000).response,
        EtcdResponse::Error(EtcdError::LeaseNotFound)
    );
    assert_eq!(
        etcd.apply(&mutex_acquire(0xb), 5_000).response,
        EtcdResponse::Error(EtcdError::LeaseNotFound),
        "and it cannot queue again with the dead lease"
    );
    // The next holder's token is above both earlier ones.
    etcd.apply(&grant(0xc, 5), 5_000);
    etcd.apply(&mutex_acquire(0xc), 5_000);
    assert_eq!(etcd.get("lock/c").map(|kv| kv.create_revision), Some(6));
}

#[test]
fn every_command_expires_leases_first_even_one_that_fails() {
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(1, 2), 0);
    etcd.apply(&put("k", "v", 1), 0);
    let executed = etcd.execute(&put("", "v", NO_LEASE), 2_000);
    assert_eq!(executed.reply.response, EtcdResponse::Error(EtcdError::EmptyKey));
    assert_eq!(executed.expiry.revoked.len(), 1);
    assert_eq!(executed.reply.revision, 3, "the header shows the expiry's revision");
}

#[test]
fn commands_and_replies_print_as_etcdctl_writes_them() {
    let shown: Vec<String> = [
        mutex_acquire(0xa),
        EtcdCommand::Range(RangeRequest::prefix("lock/").last_created_at_most(3).at_revision(4)),
        EtcdCommand::DeleteRange {
            range: KeyRange::Prefix(String::new()),
        },
        grant(7, 5),
        EtcdCommand::LeaseKeepAlive { id: 7 },
        EtcdCommand::Compact { revision: 3 },
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
            shown,
            vec![
                "txn if create_revision(lock/a) = 0 then [put lock/a \"\" --lease=10; get lock/ --prefix --sort-by=create --order=ascend --limit=1] else [get lock/a; get lock/ --prefix --sort-by=create --order=ascend --limit=1]",
                "get lock/ --prefix --rev=4 --sort-by=create --order=descend --limit=1 --max-create-rev=3",
                "del \"\" --prefix",
                "lease grant 7 5s",
                "lease keep-alive 7",
                "compact 3",
            ]
        );
    let mut etcd = EtcdKeyspace::new();
    etcd.apply(&grant(0xa, 5), 0);
    let replies: Vec<String> = [
        etcd.apply(&mutex_acquire(0xa), 0),
        etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 0xa }, 1_000),
        etcd.apply(&EtcdCommand::LeaseTimeToLive { id: 3 }, 1_000),
        etcd.apply(&put("k", "v", 3), 1_000),
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        replies,
        vec![
            "@2 succeeded [OK; [lock/a=\"\" (create 2, mod 2, version 1, lease 10)] count 1]",
            "@2 lease 10: 4s left of 5s, keys [lock/a]",
            "@2 lease 3 not found (TTL -1)",
            "@2 error: etcdserver: requested lease not found (it expired or was revoked: grant a new one)",
        ]
    );
}
