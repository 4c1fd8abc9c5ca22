package main

import (
	"testing"

	"github.com/spoolmq/spool/examples/go/internal/exampletest"
)

func TestExample(t *testing.T) {
	exampletest.Run(t, run, `assigned map\[example-group:\[0 1 2\]\]\n(example-group\[[012]\]@\d+ order-\d\n){9}committed as member \S+ of generation \d+\nrevoked map\[example-group:\[0 1 2\]\]\n`)
}
