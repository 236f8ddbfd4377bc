// Package etcdlock is the client program for etcd's concurrency.Mutex, whichever version of
// etcd's Go client builds it: the calls are the same in every version (Lock, Unlock, Key, a
// Get of the key), only the import paths differ, so each version's main wires its own client
// in and this package speaks the protocol.
package etcdlock

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"cassalock/clients/protocol"
)

// Mutex is concurrency.Mutex's calls.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Key() string
}

// Client is what the program needs of the etcd client besides the mutex.
type Client struct {
	// CreateRevision reads key's create revision (false: etcd has no such key).
	CreateRevision func(ctx context.Context, key string) (int64, bool, error)
	// Done is closed when the session ends (its lease expired or was revoked).
	Done  <-chan struct{}
	Close func()
}

type shim struct {
	client Client
	mutex  Mutex
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
	// The token is the create revision of the mutex's own key, as the holder's code would read
	// it: the mutex orders its waiters by it, and each new key's is higher. A key already gone
	// (its session's lease expired before Lock returned) or not read has none: the token is
	// empty, and the library's answer stands.
	s.token = ""
	readCtx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	revision, found, err := s.client.CreateRevision(readCtx, s.mutex.Key())
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "Lock returned, but reading its key %s failed (no token): %v\n", s.mutex.Key(), err)
	case !found:
		fmt.Fprintf(os.Stderr, "Lock returned, but its key %s is gone (no token)\n", s.mutex.Key())
	default:
		s.token = strconv.FormatInt(revision, 10)
	}
	return &protocol.Acquired{Token: s.token}, nil
}

// readTimeout bounds the read of the key's create revision.
const readTimeout = 5 * time.Second

func (s *shim) Token() string { return s.token }

func (s *shim) Extend(int64) (*int64, error) {
	return nil, fmt.Errorf("concurrency.Mutex has no lease to extend: its session is kept alive")
}

func (s *shim) Release() (bool, bool, error) {
	err := s.mutex.Unlock(context.Background())
	return err == nil, false, err
}

func (s *shim) Close() { s.client.Close() }

// Serve speaks the protocol for mutex, the lock of client, until exit; version: the etcd
// client's.
func Serve(client Client, mutex Mutex, version string) {
	go func() {
		<-client.Done
		protocol.Lost("the session is done (its lease expired or was revoked)")
	}()
	protocol.Serve(&shim{client: client, mutex: mutex}, "etcd client", version, "concurrency.Mutex", "fencing")
}

// LockName is the lock's key prefix: /locks/$CASSALOCK_LOCK, the prefix of cassalock's etcd
// machine (the mutex adds "/"), so that cassalock can read who holds it.
func LockName() string {
	name := os.Getenv("CASSALOCK_LOCK")
	if name == "" {
		name = "cassalock"
	}
	return "/locks/" + name
}
