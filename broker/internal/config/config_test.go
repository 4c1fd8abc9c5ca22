package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultsAreKafkas(t *testing.T) {
	c := New()
	for name, want := range map[string]string{
		NumPartitions: "1", AutoCreateTopics: "true", LogSegmentBytes: "1073741824", LogRetentionMs: "604800000",
		LogRetentionBytes: "-1", MessageMaxBytes: "1048588", SocketRequestMaxBytes: "104857600",
		ConnectionsMaxIdleMs: "600000", LogCleanupPolicy: "delete", LogMessageTimestampType: "CreateTime",
		Listeners: "127.0.0.1:9092", LogDirs: "./data", Fsync: "always",
	} {
		if got := c.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
		if c.Source(name) != SourceDefault {
			t.Errorf("%s source = %d, want default", name, c.Source(name))
		}
	}
}

func TestPrecedenceFileThenSetThenFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	props := "# a comment\n! another\nnum.partitions=3\nlog.retention.ms : 1000\nlisteners=PLAINTEXT://127.0.0.1:9999\nlog.dirs=/from/file\nmessage.max.bytes=\\\n  2000\n"
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load([]string{"--config", file, "--set", "num.partitions=5", "--data-dir", "/from/flag"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		NumPartitions:   "5",              // --set beats the file
		LogRetentionMs:  "1000",           // from the file, "key : value" form
		Listeners:       "127.0.0.1:9999", // listener name stripped
		LogDirs:         "/from/flag",     // the dedicated flag beats the file
		MessageMaxBytes: "2000",           // continued line
	}
	for name, want := range checks {
		if got := c.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
		if c.Source(name) != SourceStatic {
			t.Errorf("%s source = %d, want static", name, c.Source(name))
		}
	}
	if c.Int64(LogRetentionMs) != 1000 {
		t.Errorf("Int64 = %d", c.Int64(LogRetentionMs))
	}
}

func TestBadInputIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.properties")
	os.WriteFile(bad, []byte("num.partitions=zero\n"), 0o644)
	cases := map[string][]string{
		"unknown flag":      {"--no-such-flag"},
		"unknown property":  {"--set", "log.retention.hourz=1"},
		"ssl listener":      {"--set", "listeners=SSL://:9093"},
		"bad number":        {"--set", "num.partitions=x"},
		"below minimum":     {"--set", "num.partitions=0"},
		"bad enum":          {"--fsync", "sometimes"},
		"bad listen":        {"--listen", "nohostport"},
		"missing file":      {"--config", filepath.Join(dir, "absent")},
		"bad file value":    {"--config", bad},
		"set without equal": {"--set", "num.partitions"},
		"stray argument":    {"extra"},
		"bad log level":     {"--log-level", "loud"},
	}
	for name, args := range cases {
		_, err := Load(args, io.Discard)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want a UsageError", name, err)
		}
	}
}

func TestHelpListsEveryProperty(t *testing.T) {
	var out strings.Builder
	_, err := Load([]string{"--help"}, &out)
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
	for _, d := range BrokerDefs {
		if !strings.Contains(out.String(), d.Name) {
			t.Errorf("--help does not mention %s", d.Name)
		}
	}
}

func TestTopicConfigValidation(t *testing.T) {
	good := map[string]string{"retention.ms": "-1", "cleanup.policy": "compact,delete", "message.timestamp.type": "LogAppendTime", "segment.bytes": "1048576"}
	for k, v := range good {
		if err := ValidateTopic(k, v); err != nil {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	bad := map[string]string{"retention.ms": "-2", "cleanup.policy": "keep", "no.such.config": "1", "segment.bytes": "10", "max.message.bytes": "big"}
	for k, v := range bad {
		if err := ValidateTopic(k, v); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
	for _, d := range TopicDefs {
		if d.Broker == "" {
			if err := ValidateTopic(d.Name, d.Default); err != nil {
				t.Errorf("topic-only config %s: its default does not validate: %v", d.Name, err)
			}
			continue
		}
		b := LookupBroker(d.Broker)
		if b == nil {
			t.Errorf("topic config %s falls back to unknown broker property %s", d.Name, d.Broker)
			continue
		}
		// The broker default (resolved, e.g. log.roll.jitter.ms from its hours) is valid here.
		if err := ValidateTopic(d.Name, New().Get(d.Broker)); err != nil {
			t.Errorf("topic config %s: broker default %s=%q does not validate: %v", d.Name, d.Broker, New().Get(d.Broker), err)
		}
	}
}
