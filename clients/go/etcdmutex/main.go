// Command etcdmutex is etcd's concurrency.Mutex as a cassalock client
// (docs/client-protocol.md).
//
//	etcdmutex [-endpoints HOST:PORT,...] [-ttl-s S]
//
// Locks /cassalock/$CASSALOCK_LOCK in one session per process, whose lease (-ttl-s, etcd's
// default 60 s) the client keeps alive; a lease in a command is not the mutex's to set and is
// ignored. The token is the lock key's create revision, which grows with every key etcd
// creates: a fencing token. The session's end (its lease lost) is said as lost.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"cassalock/clients/protocol"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

type shim struct {
	client *clientv3.Client
	mutex  *concurrency.Mutex
	token  string
}

func (s *shim) Acquire(leaseMs, waitMs *int64) (*protocol.Acquired, error) {
	ctx := context.Background()
	if waitMs != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*waitMs)*time.Millisecond)
		defer cancel()
	}
	if err := s.mutex.Lock(ctx); err != nil {
		if waitMs != nil && ctx.Err() == context.DeadlineExceeded {
			return nil, nil
		}
		return nil, err
	}
	// Read once, as the holder's code would, right after acquiring.
	got, err := s.client.Get(context.Background(), s.mutex.Key())
	if err != nil {
		return nil, err
	}
	if len(got.Kvs) == 0 {
		s.token = "none: the lock key is gone"
	} else {
		s.token = strconv.FormatInt(got.Kvs[0].CreateRevision, 10)
	}
	return &protocol.Acquired{Token: s.token}, nil
}

func (s *shim) Token() string { return s.token }

func (s *shim) Extend(int64) (*int64, error) {
	return nil, fmt.Errorf("concurrency.Mutex has no lease to extend: its session is kept alive")
}

func (s *shim) Release() (bool, bool, error) {
	err := s.mutex.Unlock(context.Background())
	return err == nil, false, err
}

func (s *shim) Close() { s.client.Close() }

func version(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return dep.Version
			}
		}
	}
	return "unknown"
}

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
	go func() {
		<-session.Done()
		protocol.Lost("the session is done (its lease expired or was revoked)")
	}()
	name := os.Getenv("CASSALOCK_LOCK")
	if name == "" {
		name = "cassalock"
	}
	protocol.Serve(&shim{client: client, mutex: concurrency.NewMutex(session, "/cassalock/"+name)}, "etcd client",
		version("go.etcd.io/etcd/client/v3"), "concurrency.Mutex", "fencing")
}
