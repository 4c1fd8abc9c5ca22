package main

import (
	"os"
	"strings"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
)

// TestReadmeListsEveryKey keeps README.md's table of configuration keys in step with the
// SDK's table.
func TestReadmeListsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range spool.ConfKeys() {
		if !strings.Contains(string(readme), "| `"+k.Name+"`") {
			t.Errorf("README.md has no row for %s", k.Name)
		}
	}
}
