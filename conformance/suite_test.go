package conformance_test

import (
	"context"
	"os"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
)

// TestMain lets the test binary act as a built-in driver when the suite starts it as one.
func TestMain(m *testing.M) {
	drivers.MaybeServe()
	serveDropping()
	os.Exit(m.Run())
}

// target is a broker the suite runs against.
type target struct {
	name  string
	start func(t *testing.T) string
}

// No initial rebalance delay on either broker, so group cases do not wait 3 s per new group.
var (
	spoolTarget = target{"spool", func(t *testing.T) string {
		return brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
	}}
	kafkaTarget = target{"kafka", func(t *testing.T) string {
		return brokertest.StartKafka(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}).Addr
	}}
)

// TestSuite runs every case against our broker and against Apache Kafka 3.9, the reference:
// every case must pass on both (a case failing on Kafka is a wrong case). Wire cases run
// once per target; client cases once per driver: go (sdk-go) and franz-go (the reference).
func TestSuite(t *testing.T) {
	t.Parallel()
	for _, tg := range []target{spoolTarget, kafkaTarget} {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t)
			for i, name := range drivers.Names {
				d, err := drivers.Builtin(name)
				if err != nil {
					t.Fatal(err)
				}
				cases := conformance.Cases()
				if i > 0 {
					cases = clientCases(cases)
				}
				results := conformance.Run(context.Background(), conformance.Config{Bootstrap: addr, Driver: d, Parallel: 6}, cases)
				passed, known := 0, 0
				for _, r := range results {
					// A known issue is a Spool deviation: expected to fail on Spool, and like
					// every case it must pass on Kafka.
					if r.Case.KnownIssue != "" && tg.name == "spool" {
						if r.Outcome == conformance.Pass {
							t.Errorf("%s passes on Spool now: remove its known-issue note", r.Case.ID)
						}
						known++
						continue
					}
					switch r.Outcome {
					case conformance.Pass:
						passed++
					case conformance.Fail:
						t.Errorf("%s with driver %s: %s", r.Case.ID, name, r.Message)
					case conformance.Skip:
						t.Errorf("%s with driver %s skipped: %s", r.Case.ID, name, r.Message)
					}
				}
				t.Logf("%s, driver %s: %d of %d cases passed, %d known issues", tg.name, name, passed, len(results), known)
			}
		})
	}
}

func clientCases(all []*conformance.Case) []*conformance.Case {
	var out []*conformance.Case
	for _, c := range all {
		if c.Level == conformance.Client {
			out = append(out, c)
		}
	}
	return out
}
