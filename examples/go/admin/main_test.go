package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
)

func TestExample(t *testing.T) {
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, addr, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "example-admin has 3 partitions") {
		t.Fatalf("output %q lacks %q", out.String(), "example-admin has 3 partitions")
	}
}
