// Package exampletest runs an example's run function against a real broker and checks what it
// prints, so every example stays working.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

// Run starts a broker, calls run with its address, and requires the output to contain want.
func Run(t *testing.T, run func(ctx context.Context, addr string, out io.Writer) error, want string) {
	t.Helper()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, addr, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("output %q lacks %q", out.String(), want)
	}
}
