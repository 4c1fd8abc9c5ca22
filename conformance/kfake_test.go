package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestSuiteKfake runs the suite against franz-go's kfake, an in-memory Kafka test double we
// did not write (without durability and with gaps). Its failures are not hidden: they are
// listed in testdata/kfake-failures.txt, and the test fails when the list changes, either way,
// so the file stays the record of where kfake departs from the spec. KFAKE_UPDATE=1 rewrites it.
func TestSuiteKfake(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "conformance-seed"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := drivers.Builtin("go")
	if err != nil {
		t.Fatal(err)
	}
	results := conformance.Run(context.Background(), conformance.Config{Bootstrap: c.ListenAddrs()[0], Driver: d, Parallel: 6, CaseTimeout: 15e9}, kfakeCases())
	lines := map[string]string{}
	for _, id := range kfakeCrashes {
		lines[id] = "not run: crashes kfake's process (a nil dereference in its connection reader)"
	}
	for _, r := range results {
		if r.Outcome != conformance.Pass {
			lines[r.Case.ID] = strings.SplitN(r.Message, "\n", 2)[0]
		}
	}
	t.Logf("kfake: %s, %d not run", conformance.Summarize(results), len(kfakeCrashes))
	var got []string
	for _, c := range conformance.Cases() {
		if msg, ok := lines[c.ID]; ok {
			got = append(got, c.ID+"\t"+msg)
		}
	}
	path := filepath.Join("testdata", "kfake-failures.txt")
	if os.Getenv("KFAKE_UPDATE") != "" {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Compare the case ids; the messages (with their random topic names) are for readers.
	ids := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if id, _, _ := strings.Cut(l, "\t"); id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	want := ids(strings.Split(string(data), "\n"))
	for _, id := range ids(got) {
		if !slices.Contains(want, id) {
			t.Errorf("%s fails on kfake now (%s): a wrong case, or a kfake change (KFAKE_UPDATE=1 records it)", id, lines[id])
		}
	}
	for _, id := range want {
		if _, ok := lines[id]; !ok {
			t.Errorf("%s passes on kfake now: KFAKE_UPDATE=1 records it", id)
		}
	}
}

// kfakeCases leaves out the cases that crash kfake's process (a nil dereference in its
// connection reader on malformed frames): they are listed as failures without running.
func kfakeCases() []*conformance.Case {
	var out []*conformance.Case
	for _, c := range conformance.Cases() {
		if !slices.Contains(kfakeCrashes, c.ID) {
			out = append(out, c)
		}
	}
	return out
}

var kfakeCrashes = []string{"versions/unknown-api-closes"}
