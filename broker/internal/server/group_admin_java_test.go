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
	heavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startBroker(t, nil)
	createTopicKadm(t, ctx, b.Addr, "jadmin", 2)
	runJavaProgram(t, ctx, "testdata/group_admin_GroupOffsets.java", "GroupOffsets", b.Addr, "jadmin", "jadmin-group")
}

// runJavaProgram compiles one Java source of testdata against the Kafka client and runs its
// class with args; the program must print a line "OK".
func runJavaProgram(t *testing.T, ctx context.Context, source, class string, args ...string) {
	t.Helper()
	compileJavaProgram(t, ctx, source, class)(t, args...)
}

// compileJavaProgram compiles one Java source of testdata against the Kafka client and
// returns a function that runs its class with args; the program must print a line "OK".
func compileJavaProgram(t *testing.T, ctx context.Context, source, class string) func(t *testing.T, args ...string) {
	t.Helper()
	java, cp := buildJavaMember(t)
	javac := brokertest.NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	classes := filepath.Join(t.TempDir(), class+"-classes")
	if out, err := exec.CommandContext(ctx, javac, "-d", classes, "-cp", cp, source).CombinedOutput(); err != nil {
		t.Fatalf("javac %s: %v\n%s", source, err, out)
	}
	return func(t *testing.T, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, java, append(shortJVM("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", classes+string(os.PathListSeparator)+cp, class), args...)...)
		cmd.Stderr = testWriter{t}
		out, err := cmd.Output()
		if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
			t.Fatalf("java %s: %v\n%s", class, err, out)
		}
	}
}
