package brokertest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadmeBlocks(t *testing.T) {
	doc := "# Title\n## A\n```sh\none\n```\n### A.1\n```sh\n# a comment, not a heading\ntwo\n```\n```text\nnot sh\n```\n## B\n```sh\nthree\n```\n"
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for heading, want := range map[string][]string{
		"## A":    {"one\n", "# a comment, not a heading\ntwo\n"},
		"### A.1": {"# a comment, not a heading\ntwo\n"},
		"## B":    {"three\n"},
	} {
		if got := ReadmeBlocks(t, path, heading); !slices.Equal(got, want) {
			t.Errorf("ReadmeBlocks(%q) = %q, want %q", heading, got, want)
		}
	}
}
