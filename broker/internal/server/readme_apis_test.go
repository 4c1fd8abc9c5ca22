package server

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeAPICount keeps the README's "Spool implements N Kafka APIs" equal to the number of
// APIs the broker serves (the handler table), so that adding an API cannot leave it stale.
func TestReadmeAPICount(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	m := regexp.MustCompile(`Spool implements (\d+) Kafka APIs`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`README.md: no "Spool implements N Kafka APIs"`)
	}
	if n, _ := strconv.Atoi(m[1]); n != len(handlers) {
		t.Errorf("README.md says %q; the broker serves %d APIs", m[0], len(handlers))
	}
}
