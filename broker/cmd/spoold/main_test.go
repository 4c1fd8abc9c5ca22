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
		{[]string{"--bogus"}, 2, "flag provided but not defined: --bogus\nrun 'spoold --help' for usage\n"},
		{[]string{"--set", "num.partitions=-4"}, 2, "num.partitions"},
		{[]string{"--set", "no.such.property=1"}, 2, `unknown property "no.such.property"`},
		{[]string{"--set", "num.partition=1", "--set", "log.retention.hourz=1"}, 2,
			`unknown property "num.partition" (did you mean num.partitions?)` + "\n" + `--set: unknown property "log.retention.hourz" (did you mean log.retention.hours?)`},
		{[]string{"--fsync", "maybe"}, 2, "spool.fsync"},
		{[]string{"--log-format", "xml"}, 2, `bad --log-format "xml": want text or json`},
		{[]string{"--otlp-endpoint", "127.0.0.1:4318"}, 2, "spool.otlp.endpoint: want http://HOST:PORT"},
		{[]string{"--config", "/nonexistent/server.properties"}, 2, "reading config file"},
		// A keystore that does not load is a bad setting too.
		{[]string{"--data-dir", t.TempDir(), "--set", "listeners=SSL://127.0.0.1:0", "--set", "ssl.keystore.type=PEM",
			"--set", "ssl.keystore.location=/nonexistent/broker.pem"}, 2, "listener SSL: ssl.keystore.location: open /nonexistent/broker.pem"},
		// Flood limits (issue 16).
		{[]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--set", "max.connections.per.ip.overrides=127.0.0.1"}, 2, `"127.0.0.1" is not host:count`},
		{[]string{"--set", "queued.max.request.bytes=0"}, 2, "want -1 (unbounded) or a positive number of bytes"},
		{[]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--set", "queued.max.request.bytes=1000"}, 2, "queued.max.request.bytes=1000 is below socket.request.max.bytes=104857600"},
		// A data directory that cannot be created is a start failure, not a usage error.
		{[]string{"--data-dir", "/proc/spool-cannot-exist", "--listen", "127.0.0.1:0"}, 1, "cannot start"},
	}
	for _, tc := range cases {
		var out, errs strings.Builder
		code := run(tc.args, &out, &errs)
		if tc.code == 2 && strings.Count(errs.String(), "\n") > 4 {
			t.Errorf("spoold %v: a usage error prints the problem and a pointer to --help, not the usage:\n%s", tc.args, errs.String())
		}
		if tc.code == 0 && (errs.Len() > 0 || !strings.Contains(out.String(), "--listen HOST:PORT")) {
			t.Errorf("spoold %v: help goes to stdout with -- flags; stdout:\n%s\nstderr:\n%s", tc.args, out.String(), errs.String())
		}
		if code != tc.code {
			t.Errorf("spoold %v: exit %d, want %d\n%s", tc.args, code, tc.code, errs.String())
		}
		if !strings.Contains(out.String()+errs.String(), tc.says) {
			t.Errorf("spoold %v: output does not say %q:\n%s%s", tc.args, tc.says, out.String(), errs.String())
		}
	}
}

func TestVersion(t *testing.T) {
	var out, errs strings.Builder
	if code := run([]string{"--version"}, &out, &errs); code != 0 {
		t.Fatalf("spoold --version: exit %d\n%s", code, errs.String())
	}
	if !strings.HasPrefix(out.String(), "spoold ") || !strings.Contains(out.String(), "(commit ") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("spoold --version printed %q, want one line: spoold VERSION (commit COMMIT, GO)", out.String())
	}
	if errs.Len() > 0 {
		t.Fatalf("spoold --version wrote to stderr: %q", errs.String())
	}
	// Link-time values win over the build information.
	version, commit = "1.2.3", "abc123"
	t.Cleanup(func() { version, commit = "", "" })
	if got := versionString(); !strings.HasPrefix(got, "spoold 1.2.3 (commit abc123, go") {
		t.Fatalf("with -X main.version and main.commit: %q", got)
	}
}
