package conformance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
)

// The whole suite against our broker and against Apache Kafka 3.9, the reference: every
// case must pass on both (a case failing on Kafka is a wrong case).
func TestSuite(t *testing.T) {
	targets := []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"spool", func(t *testing.T) string {
			return brokertest.Start(t, brokertest.Options{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}}).Addr
		}},
		{"kafka", func(t *testing.T) string {
			return brokertest.StartKafka(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}).Addr
		}},
	}
	cases := conformance.Cases()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t)
			results := conformance.Run(context.Background(), conformance.Config{Bootstrap: addr, Parallel: 6}, cases)
			for _, r := range results {
				switch r.Outcome {
				case conformance.Fail:
					t.Errorf("%s: %s", r.Case.ID, r.Message)
				case conformance.Skip:
					if !strings.Contains(r.Message, "no driver") {
						t.Errorf("%s skipped: %s", r.Case.ID, r.Message)
					}
				}
			}
			t.Logf("%d cases against %s", len(results), tg.name)
		})
	}
}
