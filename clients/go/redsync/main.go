// Command redsync is go-redsync's Mutex as a cassalock client (docs/client-protocol.md).
//
//	redsync [-servers HOST:PORT,...]
//
// Locks $CASSALOCK_LOCK on every server given: Redlock over them (one server: a plain
// SET NX lock). A lease in a command is the mutex's expiry (none: redsync's default, 8 s); a
// try_lock's wait is the context's deadline. The token is the random value redsync stores;
// the validity is the mutex's Until().
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"time"

	"cassalock/clients/protocol"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type shim struct {
	rs    *redsync.Redsync
	name  string
	mutex *redsync.Mutex
}

func (s *shim) Acquire(leaseMs, waitMs *int64) (*protocol.Acquired, error) {
	var options []redsync.Option
	if leaseMs != nil {
		options = append(options, redsync.WithExpiry(time.Duration(*leaseMs)*time.Millisecond))
	}
	s.mutex = s.rs.NewMutex(s.name, options...)
	ctx := context.Background()
	if waitMs != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*waitMs)*time.Millisecond)
		defer cancel()
	}
	if err := s.mutex.LockContext(ctx); err != nil {
		if waitMs != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil
		}
		return nil, err
	}
	until := s.mutex.Until().UnixMicro()
	return &protocol.Acquired{Token: s.mutex.Value(), ValidUntilUs: &until}, nil
}

func (s *shim) Token() string { return s.mutex.Value() }

func (s *shim) Extend(leaseMs int64) (*int64, error) {
	if _, err := s.mutex.Extend(); err != nil {
		return nil, err
	}
	until := s.mutex.Until().UnixMicro()
	return &until, nil
}

func (s *shim) Release() (bool, bool, error) {
	ours, err := s.mutex.Unlock()
	var taken *redsync.ErrTaken
	return ours, errors.As(err, &taken) || errors.Is(err, redsync.ErrLockAlreadyExpired), err
}

func (s *shim) Close() {}

func main() {
	servers := flag.String("servers", "127.0.0.1:16380,127.0.0.1:16381,127.0.0.1:16382", "host:port of every Redis master, comma-separated")
	flag.Parse()
	var pools []redis.Pool
	for _, address := range strings.Split(*servers, ",") {
		pools = append(pools, goredis.NewPool(goredislib.NewClient(&goredislib.Options{Addr: address})))
	}
	name := os.Getenv("CASSALOCK_LOCK")
	if name == "" {
		name = "cassalock"
	}
	lock := "Mutex (Redlock)"
	if len(pools) == 1 {
		lock = "Mutex (one server)"
	}
	protocol.Serve(&shim{rs: redsync.New(pools...), name: name}, "go-redsync",
		protocol.ModuleVersion("github.com/go-redsync/redsync/v4"), lock, "random")
}
