package main

import (
	"testing"

	"github.com/spoolmq/spool/examples/go/internal/exampletest"
)

func TestExample(t *testing.T) { exampletest.Run(t, run, `records per partition: \[10 10 10\]\n`) }
