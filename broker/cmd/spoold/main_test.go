package main

import (
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--help"}, 0, "usage: spoold"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--set", "num.partitions=-4"}, 2, "num.partitions"},
		{[]string{"--set", "no.such.property=1"}, 2, `unknown property "no.such.property"`},
		{[]string{"--fsync", "maybe"}, 2, "spool.fsync"},
		{[]string{"--config", "/nonexistent/server.properties"}, 2, "reading config file"},
		// A data directory that cannot be created is a start failure, not a usage error.
		{[]string{"--data-dir", "/proc/spool-cannot-exist", "--listen", "127.0.0.1:0"}, 1, "cannot start"},
	}
	for _, tc := range cases {
		var out, errs strings.Builder
		code := run(tc.args, &out, &errs)
		if code != tc.code {
			t.Errorf("spoold %v: exit %d, want %d\n%s", tc.args, code, tc.code, errs.String())
		}
		if !strings.Contains(out.String()+errs.String(), tc.says) {
			t.Errorf("spoold %v: output does not say %q:\n%s%s", tc.args, tc.says, out.String(), errs.String())
		}
	}
}
