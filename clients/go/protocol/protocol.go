// Package protocol speaks cassalock's client protocol, version 1 (docs/client-protocol.md), for
// Go lock libraries.
//
// A client program hands Serve a Shim: each of its methods is one call into the library, as
// the library's documentation shows, and nothing more. Serve says hello, answers each command
// on standard input with one line on standard output (unlock with "releasing" before the
// release call, then "released"), and returns at exit. Lost says, from any goroutine, that the
// library told the holder its lock is lost. Lines are written whole under one mutex.
package protocol

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Version is the protocol version this package speaks.
const Version = 1

// ModuleVersion is the version of the module at path this program was built with, as its
// build information records it; "unknown" where it does not.
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// Acquired is a lock taken: its token and, where the library says, how long it is good for.
type Acquired struct {
	Token        string
	ValidUntilUs *int64
}

// Shim is the library's calls.
type Shim interface {
	// Acquire takes the lock: nil when the wait ran out. leaseMs nil: the library's default;
	// waitMs nil: wait as long as the library waits.
	Acquire(leaseMs, waitMs *int64) (*Acquired, error)
	// Token is the token of the lock held, as the protected code would send it to a resource.
	Token() string
	// Extend extends the held lock's lease: the new validity on the client's clock, or nil.
	Extend(leaseMs int64) (*int64, error)
	// Release releases: ours false when the library said the lock was not ours; notHeld
	// true when the error says so.
	Release() (ours bool, notHeld bool, err error)
	Close()
}

var out sync.Mutex

// NowUs is this machine's wall clock, microseconds since the Unix epoch.
func NowUs() int64 { return time.Now().UnixMicro() }

// Say prints one line of the protocol, stamped with the client's clock.
func Say(fields map[string]any) {
	fields["clock_us"] = NowUs()
	line, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	out.Lock()
	defer out.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

// Lost says the library told the holder its lock is lost.
func Lost(why string) { Say(map[string]any{"event": "lost", "why": why}) }

type command struct {
	Cmd     string `json:"cmd"`
	ID      *int64 `json:"id"`
	LeaseMs *int64 `json:"lease_ms"`
	WaitMs  *int64 `json:"wait_ms"`
}

// Serve speaks the protocol for shim until exit. tokens: "fencing" or "random".
func Serve(shim Shim, library, version, lock, tokens string) {
	Say(map[string]any{"protocol": "cassalock-client", "version": Version, "library": library,
		"library_version": version, "lock": lock, "tokens": tokens})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 64*1024)
	for in.Scan() {
		var c command
		if len(in.Bytes()) == 0 {
			continue
		}
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "not a command: %v\n", err)
			os.Exit(2)
		}
		if c.Cmd == "exit" {
			break
		}
		answer(shim, c)
	}
	shim.Close()
}

func answer(shim Shim, c command) {
	failed := func(err error) {
		Say(map[string]any{"event": "failed", "id": c.ID, "error": fmt.Sprintf("%T: %v", err, err)})
	}
	switch c.Cmd {
	case "lock", "try_lock":
		got, err := shim.Acquire(c.LeaseMs, c.WaitMs)
		switch {
		case err != nil:
			failed(err)
		case got == nil:
			Say(map[string]any{"event": "not_acquired", "id": c.ID, "why": "the wait ran out"})
		default:
			Say(map[string]any{"event": "acquired", "id": c.ID, "token": got.Token, "valid_until_us": got.ValidUntilUs})
		}
	case "write":
		Say(map[string]any{"event": "written", "id": c.ID, "token": shim.Token()})
	case "extend":
		until, err := shim.Extend(*c.LeaseMs)
		if err != nil {
			failed(err)
			return
		}
		Say(map[string]any{"event": "extended", "id": c.ID, "valid_until_us": until})
	case "unlock":
		Say(map[string]any{"event": "releasing", "id": c.ID})
		ours, notHeld, err := shim.Release()
		switch {
		case err != nil && notHeld:
			Say(map[string]any{"event": "released", "id": c.ID, "outcome": "not_held", "error": fmt.Sprintf("%T: %v", err, err)})
		case err != nil:
			Say(map[string]any{"event": "released", "id": c.ID, "outcome": "failed", "error": fmt.Sprintf("%T: %v", err, err)})
		case !ours:
			Say(map[string]any{"event": "released", "id": c.ID, "outcome": "not_held", "error": "the library returned false"})
		default:
			Say(map[string]any{"event": "released", "id": c.ID, "outcome": "released", "error": nil})
		}
	default:
		Say(map[string]any{"event": "failed", "id": c.ID, "error": "no such command: " + c.Cmd})
	}
}
