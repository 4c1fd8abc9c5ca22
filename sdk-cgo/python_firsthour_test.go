package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// firsthourPy produces to a topic that does not exist through the Python binding, as a new
// user does, and prints what flush returned and each record's outcome.
const firsthourPy = `
import os, sys, time
from spool import Producer
conf = {'bootstrap.servers': os.environ['SPOOL_BROKERS']}
if os.environ.get('TIMEOUT_MS'):
    conf['message.timeout.ms'] = os.environ['TIMEOUT_MS']
p = Producer(conf)
got = []
def cb(err, msg):
    got.append('ok' if err is None else 'err=%d' % err.code())
start = time.monotonic()
for i in range(2000):
    p.produce(sys.argv[1], b'x%d' % i, callback=cb)
left = p.flush(30)
print('left=%d elapsed_ms=%d' % (left, (time.monotonic() - start) * 1000))
print(' '.join(sorted(set(got))), len(got))
`

// TestPythonProduceToNewTopic: through libspool and its Python binding a producer asks for a
// new topic to be created (allow.auto.create.topics, true for producers as in librdkafka), so
// a broker with auto.create.topics.enable creates it and flush returns 0 with every record
// delivered. Before, the records failed with UNKNOWN_TOPIC_OR_PARTITION and no topic was
// created. With auto.create.topics.enable=false the records fail with
// UNKNOWN_TOPIC_OR_PARTITION after message.timeout.ms, reported to their callbacks, never
// before, and flush waits for that.
func TestPythonProduceToNewTopic(t *testing.T) {
	prefix := install(t, "")
	python := brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	run := func(t *testing.T, addr, topic string, env ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, "-c", firsthourPy, topic)
		cmd.Dir = filepath.Join("bindings", "python")
		cmd.Env = append(os.Environ(), append([]string{"SPOOL_BROKERS=" + addr, "SPOOL_LIBRARY=" + filepath.Join(prefix, "lib", "libspool.so.0"),
			"PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1"}, env...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
		return string(out)
	}
	t.Run("created", func(t *testing.T) {
		t.Parallel()
		addr := brokertest.Start(t, brokertest.Options{}).Addr
		out := run(t, addr, "newtopic-py")
		if !strings.Contains(out, "left=0 ") || !strings.Contains(out, "\nok 2000\n") {
			t.Fatalf("want flush to return 0 with 2000 records delivered, got:\n%s", out)
		}
		cl, err := spool.NewClient(spool.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ends, err := cl.Admin().ListOffsets(context.Background(), "newtopic-py", spool.OffsetLatest)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, e := range ends {
			n += e
		}
		if n != 2000 {
			t.Fatalf("newtopic-py holds %d records, want 2000", n)
		}
	})
	t.Run("not-created", func(t *testing.T) {
		t.Parallel()
		addr := brokertest.Start(t, brokertest.Options{Props: map[string]string{"auto.create.topics.enable": "false"}}).Addr
		out := run(t, addr, "nope-py", "TIMEOUT_MS=1500")
		if !strings.Contains(out, "left=0 ") || !strings.Contains(out, "\nerr=3 2000\n") {
			t.Fatalf("want flush to return 0 with 2000 records failed with UNKNOWN_TOPIC_OR_PARTITION (3), got:\n%s", out)
		}
		var ms int
		for _, f := range strings.Fields(out) {
			if v, ok := strings.CutPrefix(f, "elapsed_ms="); ok {
				ms, _ = strconv.Atoi(v)
			}
		}
		if ms < 1500 {
			t.Fatalf("records failed after %d ms, before message.timeout.ms=1500:\n%s", ms, out)
		}
	})
}
