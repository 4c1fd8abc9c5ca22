package main

import (
	"testing"

	"github.com/spoolmq/spool/examples/go/internal/exampletest"
)

func TestExample(t *testing.T) { exampletest.Run(t, run, `(example-consume\[[01]\]@\d \d=\d\n){10}`) }
