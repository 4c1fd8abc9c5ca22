package brokertest

import (
	"os"
	"strings"
	"testing"
)

// ReadmeBlocks are the ```sh blocks of one section of the Markdown file at path: the section
// whose heading line is heading (for example "### Security"), up to the next heading of the
// same or a higher level. The README runner tests paste these into bash as a user would, so a
// missing file, section or block fails the test rather than running nothing.
//
// Lines inside fences are never taken for headings: a shell comment ("# start ZooKeeper") in a
// block does not end the section.
func ReadmeBlocks(t testing.TB, path, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the README: %v", err)
	}
	level := headingLevel(heading)
	if level == 0 {
		t.Fatalf("ReadmeBlocks: %q is not a Markdown heading", heading)
	}
	var (
		blocks  []string
		in      bool // inside the section
		fence   bool // inside a fenced block
		sh      bool // that block is ```sh
		current strings.Builder
	)
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case fence && strings.HasPrefix(line, "```"):
			if in && sh {
				blocks = append(blocks, current.String())
			}
			fence, sh = false, false
			current.Reset()
		case fence:
			if in && sh {
				current.WriteString(line)
				current.WriteByte('\n')
			}
		case strings.HasPrefix(line, "```"):
			fence, sh = true, strings.TrimSpace(line) == "```sh"
		case line == heading:
			in = true
		case in && headingLevel(line) > 0 && headingLevel(line) <= level:
			in = false
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s: no sh block under %q", path, heading)
	}
	return blocks
}

// headingLevel is the number of leading #s of a Markdown heading line, 0 for any other line.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}
