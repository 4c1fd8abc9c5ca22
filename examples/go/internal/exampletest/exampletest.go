// Package exampletest runs an example's run function against a real broker and checks what it
// prints, so every example stays working.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// Run starts a broker and calls run with it twice, as someone trying the example twice would:
// what the first run created (its topic, a group's offsets) must not make the second fail.
// The broker is given as a list naming it twice, in the comma-separated form of
// $SPOOL_BROKERS, so the example must split the list. The whole output of each run must match
// the regular expression want.
func Run(t *testing.T, run func(ctx context.Context, brokers string, out io.Writer) error, want string) {
	t.Helper()
	re := regexp.MustCompile(`^(?:` + want + `)$`)
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var out bytes.Buffer
		err := run(ctx, addr+", "+addr, &out)
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\noutput so far:\n%s", i, err, out.String())
		}
		if !re.MatchString(out.String()) {
			t.Fatalf("run %d printed\n%s\nwant (a regular expression)\n%s", i, out.String(), want)
		}
	}
}
