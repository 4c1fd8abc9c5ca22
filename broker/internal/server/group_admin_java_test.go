package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJavaAdminGroupOffsets runs the Java AdminClient's group offset calls against our broker,
// deleteConsumerGroupOffsets (OffsetDelete) among them.
func TestJavaAdminGroupOffsets(t *testing.T) {
	java, cp := buildJavaMember(t)
	javac := brokertest.NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	classes := filepath.Join(t.TempDir(), "admin-classes")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, javac, "-d", classes, "-cp", cp, "testdata/group_admin_GroupOffsets.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	b := startBroker(t, nil)
	createTopicKadm(t, ctx, b.Addr, "jadmin", 2)
	cmd := exec.CommandContext(ctx, java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classes+string(os.PathListSeparator)+cp, "GroupOffsets", b.Addr, "jadmin", "jadmin-group")
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
		t.Fatalf("java GroupOffsets: %v\n%s", err, out)
	}
}
