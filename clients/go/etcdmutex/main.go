// Command etcdmutex is etcd's concurrency.Mutex, from the current Go client (client/v3), as a
// cassalock client (docs/client-protocol.md).
//
//	etcdmutex [-endpoints HOST:PORT,...] [-ttl-s S]
//
// Locks /locks/$CASSALOCK_LOCK in one session per process, whose lease (-ttl-s, etcd's
// default 60 s) the client keeps alive; a lease in a command is not the mutex's to set and is
// ignored. The token is the create revision of the mutex's key (read with a Get once Lock
// returns; empty if the key is already gone), which grows with every new key: a fencing
// token. The session's end (its lease lost) is said as lost.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"cassalock/clients/protocol"
	"cassalock/clients/protocol/etcdlock"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:23781,127.0.0.1:23782,127.0.0.1:23783", "etcd client addresses, comma-separated")
	ttl := flag.Int("ttl-s", 60, "the session's lease, seconds")
	flag.Parse()
	client, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","), DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdmutex:", err)
		os.Exit(1)
	}
	session, err := concurrency.NewSession(client, concurrency.WithTTL(*ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdmutex: no session:", err)
		os.Exit(1)
	}
	mutex := concurrency.NewMutex(session, etcdlock.LockName())
	version := protocol.ModuleVersion("go.etcd.io/etcd/client/v3")
	createRevision := func(ctx context.Context, key string) (int64, bool, error) {
		got, err := client.Get(ctx, key)
		if err != nil || len(got.Kvs) == 0 {
			return 0, false, err
		}
		return got.Kvs[0].CreateRevision, true, nil
	}
	etcdlock.Serve(etcdlock.Client{CreateRevision: createRevision, Done: session.Done(), Close: func() { client.Close() }}, mutex, version)
}
