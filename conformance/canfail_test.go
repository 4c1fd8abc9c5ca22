package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// dropEnv makes the test binary a "go" driver that loses the last record of the first
// consume or poll answer that has records: an SDK with a bug, to show the suite catches one.
const dropEnv = "SPOOL_CONFORMANCE_TEST_DROP_ONE"

// serveDropping runs the dropping driver when the test binary is started as one.
func serveDropping() {
	if os.Getenv(dropEnv) == "" {
		return
	}
	if err := drivers.Serve("go", os.Stdin, &dropOne{w: os.Stdout}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// dropOne rewrites the driver's output lines: the first response with records loses its
// last record.
type dropOne struct {
	w       io.Writer
	dropped bool
}

func (d *dropOne) Write(p []byte) (int, error) {
	if !d.dropped {
		var r conformance.Response
		if err := json.Unmarshal(bytes.TrimSpace(p), &r); err == nil && len(r.Records) > 0 {
			r.Records = r.Records[:len(r.Records)-1]
			d.dropped = true
			line, err := json.Marshal(r)
			if err != nil {
				return 0, err
			}
			if _, err := d.w.Write(append(line, '\n')); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return d.w.Write(p)
}

// runOne runs one case; a case that waits for something that never comes fails at the end
// of its 10 s.
func runOne(t *testing.T, addr string, d conformance.Driver, id string) conformance.Result {
	t.Helper()
	cases, err := conformance.Select(id)
	if err != nil {
		t.Fatal(err)
	}
	rs := conformance.Run(context.Background(), conformance.Config{Bootstrap: addr, Driver: d, CaseTimeout: 10 * time.Second}, cases)
	if len(rs) != 1 {
		t.Fatalf("%d results for %s", len(rs), id)
	}
	return rs[0]
}

// The suite can fail: a driver that drops one record, and a broker that does not do what the
// spec says, are reported as failures.
func TestSuiteCanFail(t *testing.T) {
	t.Parallel()
	t.Run("driver drops a record", func(t *testing.T) {
		t.Parallel()
		addr := spoolTarget.start(t)
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bad := &conformance.ProcessDriver{DriverName: "go-drops-one", Path: self, Env: []string{dropEnv + "=1"}}
		if r := runOne(t, addr, bad, "client/produce-consume"); r.Outcome != conformance.Fail {
			t.Errorf("a driver that drops a record: %s (%s), want a failure", r.Outcome, r.Message)
		} else {
			t.Logf("reported: %s", r.Message)
		}
		good, err := drivers.Builtin("go")
		if err != nil {
			t.Fatal(err)
		}
		if r := runOne(t, addr, good, "client/produce-consume"); r.Outcome != conformance.Pass {
			t.Errorf("the same case with the go driver: %s (%s), want a pass", r.Outcome, r.Message)
		}
	})
	t.Run("proxy rewrites an error code", func(t *testing.T) {
		t.Parallel()
		addr := startRewriteProxy(t, spoolTarget.start(t), wire.CodeOf(wire.ErrUnknownTopicOrPartition), wire.CodeOf(wire.ErrNotLeaderOrFollower))
		if r := runOne(t, addr, nil, "produce/offsets-in-order"); r.Outcome != conformance.Pass {
			t.Fatalf("through the proxy, a case that meets no error: %s (%s), want a pass", r.Outcome, r.Message)
		}
		if r := runOne(t, addr, nil, "produce/unknown-topic"); r.Outcome != conformance.Fail {
			t.Errorf("UNKNOWN_TOPIC_OR_PARTITION rewritten to NOT_LEADER_OR_FOLLOWER: %s (%s), want a failure", r.Outcome, r.Message)
		} else {
			t.Logf("reported: %s", r.Message)
		}
	})
	t.Run("broker breaks the spec", func(t *testing.T) {
		t.Parallel()
		// Topic auto-creation off: Metadata with AllowAutoTopicCreation no longer creates
		// topics, which the default broker of the spec does (§8.4).
		addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
		if r := runOne(t, addr, nil, "metadata/auto-create"); r.Outcome != conformance.Fail {
			t.Errorf("auto-creation off: %s (%s), want a failure", r.Outcome, r.Message)
		} else {
			t.Logf("reported: %s", r.Message)
		}
	})
}
