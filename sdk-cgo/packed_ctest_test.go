package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestCPacked runs tests/packed_test.c, the packed calls (spool_produce_packed,
// spool_producer_poll_reports, spool_consumer_poll_packed, spool_free): bad arguments, then
// records with null, empty and set keys and values, explicit partitions and headers produced
// in packed calls, every report taken packed, and every record consumed back packed with the
// same bytes, under each runner.
func TestCPacked(t *testing.T) {
	t.Parallel()
	rs := runnersOf(t, "tests/packed_test.c", "packed_test")
	b := brokertest.Start(t, brokertest.Options{})
	admin, err := spool.NewClient(spool.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close) // after the parallel subtests
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // every runner has a topic of its own
			out, err := r.run(t, "api", b.Addr)
			if err != nil || !strings.Contains(out, "api: ok") {
				t.Fatalf("api: %v\n%s", err, out)
			}
			topic := "c-packed-" + r.name
			if err := admin.Admin().CreateTopic(ctx, topic, 3, 1, nil); err != nil {
				t.Fatal(err)
			}
			out, err = r.run(t, "roundtrip", b.Addr, topic, "1000", "3")
			if err != nil || !strings.Contains(out, "roundtrip: ok, 1000 records") {
				t.Fatalf("roundtrip: %v\n%s", err, out)
			}
			t.Log(strings.TrimSpace(out))
		})
	}
}
