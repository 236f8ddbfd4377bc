use super::*;

fn open(tree: &mut ZnodeTree, timeout_ms: u64, now_ms: u64) -> SessionId {
    match tree.execute(&ZkCommand::CreateSession { timeout_ms }, now_ms).reply {
        ZkReply::SessionCreated { session } => session,
        other => panic!("{other:?}"),
    }
}

fn create(session: SessionId, path: &str, ephemeral: bool, sequential: bool) -> ZkCommand {
    ZkCommand::Create {
        session,
        path: path.into(),
        data: String::new(),
        ephemeral,
        sequential,
    }
}

fn created(executed: &ZkExecuted) -> (String, u64) {
    match &executed.reply {
        ZkReply::Created { path, stat } => (path.clone(), stat.czxid),
        other => panic!("not created: {other:?}"),
    }
}

#[test]
fn sequential_children_take_the_parents_child_version_and_czxid_only_grows() {
    let mut tree = ZnodeTree::new();
    let s = open(&mut tree, 1000, 0);
    tree.execute(&create(s, "/lock", false, false), 1);
    let (first, z1) = created(&tree.execute(&create(s, "/lock/n-", true, true), 2));
    let (second, z2) = created(&tree.execute(&create(s, "/lock/n-", true, true), 3));
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("/lock/n-0000000000", "/lock/n-0000000001")
    );
    tree.execute(
        &ZkCommand::Delete {
            session: s,
            path: first,
            version: None,
        },
        4,
    );
    let (third, z3) = created(&tree.execute(&create(s, "/lock/n-", true, true), 5));
    assert_eq!(third, "/lock/n-0000000003", "the delete bumped the child version too");
    assert!(z1 < z2 && z2 < z3);
    let children = tree.execute(
        &ZkCommand::GetChildren {
            session: s,
            path: "/lock".into(),
            watch: false,
        },
        6,
    );
    assert_eq!(
        children.reply,
        ZkReply::Children(vec!["n-0000000001".into(), "n-0000000003".into()])
    );
}

#[test]
fn a_session_not_heard_from_expires_with_its_ephemeral_nodes_and_fires_the_watches() {
    let mut tree = ZnodeTree::new();
    let holder = open(&mut tree, 100, 0);
    let waiter = open(&mut tree, 100, 0);
    tree.execute(&create(holder, "/lock", false, false), 1);
    let (node, _) = created(&tree.execute(&create(holder, "/lock/n-", true, true), 2));
    let exists = ZkCommand::Exists {
        session: waiter,
        path: node.clone(),
        watch: true,
    };
    assert!(matches!(tree.execute(&exists, 3).reply, ZkReply::Exists(Some(_))));
    // The waiter keeps pinging; the holder is silent past its timeout.
    tree.execute(&ZkCommand::Ping { session: waiter }, 90);
    assert!(tree.node(&node).is_some(), "still live at 100: {}", 100);
    let executed = tree.execute(&ZkCommand::Ping { session: waiter }, 103);
    assert!(tree.node(&node).is_none(), "expired after 102 ms of silence");
    assert_eq!(
        executed.fired,
        vec![WatchEvent {
            session: waiter,
            path: node,
            kind: WatchKind::NodeDeleted
        }]
    );
    assert!(matches!(executed.txns[..], [ZkTxn::CloseSession { session, .. }] if session == holder));
    assert_eq!(
        tree.execute(&ZkCommand::Ping { session: holder }, 104).reply,
        ZkReply::Error(ZkError::SessionExpired),
        "the holder learns only when it talks to the server"
    );
}

/// CURATOR-604's window: with a close lag the expired holder is refused at once, a new
/// session still lists its node until the close applies, and then the waiter's watch fires.
#[test]
fn with_a_close_lag_an_expired_session_is_refused_at_once_and_its_node_goes_later() {
    let mut tree = ZnodeTree::with_close_lag_ms(50);
    let holder = open(&mut tree, 100, 0);
    let waiter = open(&mut tree, 1000, 0);
    tree.execute(&create(holder, "/lock", false, false), 1);
    let (node, _) = created(&tree.execute(&create(holder, "/lock/n-", true, true), 2));
    let watch = ZkCommand::Exists {
        session: waiter,
        path: node.clone(),
        watch: true,
    };
    tree.execute(&watch, 3);
    let marked = tree.expire_sessions(103);
    assert!(
        marked.txns.is_empty() && marked.fired.is_empty(),
        "no close yet: {marked:?}"
    );
    assert_eq!(tree.closing_sessions().collect::<Vec<_>>(), [(holder, 153)]);
    assert_eq!(
        tree.execute(&ZkCommand::Ping { session: holder }, 104).reply,
        ZkReply::Error(ZkError::SessionExpired),
        "refused from the expiry on"
    );
    let fresh = open(&mut tree, 1000, 105);
    let list = ZkCommand::GetChildren {
        session: fresh,
        path: "/lock".into(),
        watch: false,
    };
    assert_eq!(
        tree.execute(&list, 106).reply,
        ZkReply::Children(vec![node.trim_start_matches("/lock/").to_owned()]),
        "the old session's node is still listed"
    );
    let closed = tree.expire_sessions(153);
    assert!(matches!(closed.txns[..], [ZkTxn::CloseSession { session, .. }] if session == holder));
    assert_eq!(
        closed.fired,
        vec![WatchEvent {
            session: waiter,
            path: node.clone(),
            kind: WatchKind::NodeDeleted
        }]
    );
    assert!(tree.node(&node).is_none() && tree.closing_sessions().next().is_none());
}

#[test]
fn a_watch_fires_once_and_exists_on_a_missing_node_watches_its_creation() {
    let mut tree = ZnodeTree::new();
    let s = open(&mut tree, 1000, 0);
    let exists = ZkCommand::Exists {
        session: s,
        path: "/a".into(),
        watch: true,
    };
    assert_eq!(tree.execute(&exists, 1).reply, ZkReply::Exists(None));
    let fired = tree.execute(&create(s, "/a", false, false), 2).fired;
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].kind, WatchKind::NodeCreated);
    let again = tree.execute(
        &ZkCommand::SetData {
            session: s,
            path: "/a".into(),
            data: "x".into(),
            version: Some(0),
        },
        3,
    );
    assert!(again.fired.is_empty(), "the watch fired once and is gone");
    let bad = tree.execute(
        &ZkCommand::SetData {
            session: s,
            path: "/a".into(),
            data: "y".into(),
            version: Some(0),
        },
        4,
    );
    assert_eq!(bad.reply, ZkReply::Error(ZkError::BadVersion));
    assert!(bad.txns.is_empty(), "a failed write takes no zxid");
}

#[test]
fn ephemeral_nodes_have_no_children_and_a_parent_with_children_is_not_deleted() {
    let mut tree = ZnodeTree::new();
    let s = open(&mut tree, 1000, 0);
    tree.execute(&create(s, "/e", true, false), 1);
    assert_eq!(
        tree.execute(&create(s, "/e/c", false, false), 2).reply,
        ZkReply::Error(ZkError::NoChildrenForEphemerals)
    );
    tree.execute(&create(s, "/p", false, false), 3);
    tree.execute(&create(s, "/p/c", false, false), 4);
    let delete = ZkCommand::Delete {
        session: s,
        path: "/p".into(),
        version: None,
    };
    assert_eq!(tree.execute(&delete, 5).reply, ZkReply::Error(ZkError::NotEmpty));
    assert_eq!(
        tree.execute(&create(s, "/q/c", false, false), 6).reply,
        ZkReply::Error(ZkError::NoNode)
    );
    assert_eq!(
        tree.execute(&create(s, "bad", false, false), 7).reply,
        ZkReply::Error(ZkError::BadArguments)
    );
}

#[test]
fn a_follower_applying_the_transactions_holds_the_leaders_tree() {
    let mut leader = ZnodeTree::new();
    let mut follower = ZnodeTree::new();
    let mut txns = Vec::new();
    let mut run = |leader: &mut ZnodeTree, command: &ZkCommand, now_ms: u64| {
        let executed = leader.execute(command, now_ms);
        txns.extend(executed.txns.clone());
        executed.reply
    };
    let session = |reply: ZkReply| match reply {
        ZkReply::SessionCreated { session } => session,
        other => panic!("{other:?}"),
    };
    let a = session(run(&mut leader, &ZkCommand::CreateSession { timeout_ms: 50 }, 0));
    let b = session(run(&mut leader, &ZkCommand::CreateSession { timeout_ms: 500 }, 0));
    run(&mut leader, &create(a, "/lock", false, false), 1);
    run(&mut leader, &create(a, "/lock/n-", true, true), 2);
    run(&mut leader, &create(b, "/lock/n-", true, true), 3);
    run(&mut leader, &ZkCommand::Ping { session: b }, 100); // a expires
    follower.apply_txns(&txns);
    let paths = |tree: &ZnodeTree| tree.nodes().map(|(p, n)| (p.to_owned(), n.clone())).collect::<Vec<_>>();
    assert_eq!(paths(&follower), paths(&leader));
    assert_eq!(follower.nodes().count(), 3, "/, /lock and b's node");
    assert_eq!(follower.last_zxid(), leader.last_zxid());
}
