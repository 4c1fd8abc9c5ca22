// Package loopport hands out loopback TCP ports to tests that start a process (ZooKeeper,
// Kafka, a README script) which binds its port only later, seconds later for a JVM.
//
// A port taken from the kernel with Listen(":0") and closed again is in the ephemeral range:
// while the process starts, the kernel may give the same port to another test's Listen(":0")
// or use it as the source port of any outgoing connection, and the process then fails to bind
// or, worse, a client finds another test's server there (a broker's ZooKeeper client that
// reached a Kafka listener never gets a session). Ports from here lie below the ephemeral
// range (32768 and up on Linux), where the kernel hands out none, and every test process
// claims each one with an exclusive lock on a file in os.TempDir()/spool-loopport, held until
// the process exits, so two test binaries running at once never get the same port.
package loopport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// The range ports come from: below the ephemeral range, and below 20000, where
// broker/internal/server's README tests look for runs of ports of their own.
const (
	first = 10000
	count = 10000
)

var mu sync.Mutex
var held = map[int]*os.File{} // the lock files of the ports this process holds

// Pick returns a loopback port that no other test process holds and that was free a moment
// ago. The port stays this process's until it exits.
func Pick() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	dir := filepath.Join(os.TempDir(), "spool-loopport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, fmt.Errorf("loopport: %w", err)
	}
	start := rand.IntN(count)
	for i := range count {
		p := first + (start+i)%count
		if held[p] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, fmt.Errorf("loopport: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another test process holds it
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			f.Close() // in use outside the tests
			continue
		}
		l.Close()
		held[p] = f
		return p, nil
	}
	return 0, fmt.Errorf("loopport: no free port in %d-%d", first, first+count-1)
}

// Addr is Pick as "127.0.0.1:port".
func Addr() (string, error) {
	p, err := Pick()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}
