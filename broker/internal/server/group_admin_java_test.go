package server_test

import (
	"context"
	"os/exec"
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

// runJavaProgram runs the class of one Java source of testdata (compiled against the Kafka
// client by buildJavaMember) with args; the program must print a line "OK".
func runJavaProgram(t *testing.T, ctx context.Context, source, class string, args ...string) {
	t.Helper()
	compileJavaProgram(t, ctx, source, class)(t, args...)
}

// compileJavaProgram returns a function that runs the class of one Java source of testdata
// (compiled against the Kafka client by buildJavaMember, with every other program of
// testdata) with args; the program must print a line "OK".
func compileJavaProgram(t *testing.T, ctx context.Context, source, class string) func(t *testing.T, args ...string) {
	t.Helper()
	java, cp := buildJavaMember(t)
	if !slices.Contains(javaSources(t), source) {
		t.Fatalf("%s is not one of the Java sources of testdata", source)
	}
	return func(t *testing.T, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, java, append(shortJVM("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", cp, class), args...)...)
		cmd.Stderr = testWriter{t}
		out, err := cmd.Output()
		if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
			t.Fatalf("java %s: %v\n%s", class, err, out)
		}
	}
}
