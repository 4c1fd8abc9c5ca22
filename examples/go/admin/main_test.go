package main

import (
	"testing"

	"github.com/spoolmq/spool/examples/go/internal/exampletest"
)

func TestExample(t *testing.T) {
	exampletest.Run(t, run, `example-admin has 3 partitions
example-admin now has 6 partitions
retention\.ms=604800000 \(default: false\)
broker \d+ num\.partitions=1 \(default: true\)
end offsets of 6 partitions
deleted example-admin
`)
}
