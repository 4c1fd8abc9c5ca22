package conformance

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeCaseCounts keeps the case counts that the READMEs state true: every "N cases" in
// the root README and conformance/README.md is the number of registered cases, the latter's
// wire-level and client-level split adds up, and its table's count per area is that area's.
// (The root README said 226 cases when the suite had 247.)
func TestReadmeCaseCounts(t *testing.T) {
	cases := Cases()
	perArea := map[string]int{}
	perLevel := map[Level]int{}
	for _, c := range cases {
		perArea[c.Area]++
		perLevel[c.Level]++
	}
	total := regexp.MustCompile(`\b(\d+) cases\b`)
	for _, path := range []string{"../README.md", "README.md"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		found := total.FindAllStringSubmatch(text, -1)
		if len(found) == 0 {
			t.Errorf("%s: no \"N cases\"", path)
		}
		for _, m := range found {
			if n, _ := strconv.Atoi(m[1]); n != len(cases) {
				t.Errorf("%s says %q; the suite has %d cases", path, m[0], len(cases))
			}
		}
	}
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	split := regexp.MustCompile(`(\d+) wire-level`).FindStringSubmatch(text)
	client := regexp.MustCompile(`(\d+) client-level`).FindStringSubmatch(text)
	if split == nil || client == nil {
		t.Fatal(`conformance/README.md: no "N wire-level" and "N client-level"`)
	}
	if n, _ := strconv.Atoi(split[1]); n != perLevel[Wire] {
		t.Errorf("conformance/README.md says %s; the suite has %d wire-level cases", split[0], perLevel[Wire])
	}
	if n, _ := strconv.Atoi(client[1]); n != perLevel[Client] {
		t.Errorf("conformance/README.md says %s; the suite has %d client-level cases", client[0], perLevel[Client])
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| (\\d+) \\|").FindAllStringSubmatch(text, -1)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r[1]] = true
		if n, _ := strconv.Atoi(r[2]); n != perArea[r[1]] {
			t.Errorf("conformance/README.md's table: %s has %d cases; the suite has %d", r[1], n, perArea[r[1]])
		}
	}
	for area := range perArea {
		if !seen[area] {
			t.Errorf("conformance/README.md's table has no row for area %s (%d cases)", area, perArea[area])
		}
	}
}
