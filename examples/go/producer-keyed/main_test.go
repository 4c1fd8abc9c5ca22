package main

import (
	"testing"

	"github.com/spoolmq/spool/examples/go/internal/exampletest"
)

func TestExample(t *testing.T) { exampletest.Run(t, run, "key1→2 key2→5 key3→1\n") }
