package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
	spool "github.com/spoolmq/spool/sdk-go"
)

// TestSecuredBroker runs a few cases through every driver (go, c, franz-go, python, java)
// against a Spool broker whose only listener is SASL_SSL, reached with the security flags (a
// SCRAM-SHA-512 user, its password from $SPOOL_SASL_PASSWORD): the suite's own connections
// and every driver's client authenticate. A wrong password fails the cases with SASL_AUTHENTICATION_FAILED.
func TestSecuredBroker(t *testing.T) {
	t.Parallel() // the commands run as processes with the environment below, not the test's
	brokertest.NeedTool(t, "/usr/bin/gcc", "gcc")
	brokertest.NeedTool(t, "/usr/bin/make", "make")
	brokertest.NeedTool(t, "/usr/bin/pkg-config", "pkg-config")
	// libspool as a user installs it, for the c driver (found by pkg-config).
	dir := t.TempDir()
	install := exec.Command("make", "-s", "-C", filepath.Join("..", "..", "..", "sdk-cgo"), "install",
		"BUILD="+filepath.Join(dir, "build"), "PREFIX="+filepath.Join(dir, "prefix"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("installing libspool: %v\n%s", err, out)
	}
	env := []string{"PKG_CONFIG_PATH=" + filepath.Join(dir, "prefix", "lib", "pkgconfig")}

	ca := testca.New(t)
	props := brokertest.SASLSSLProps(t, ca)
	props["group.initial.rebalance.delay.ms"] = "0"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	addr := b.Listener(t, "SASL_SSL")
	tlsCfg, err := spool.TLSFiles{CAFile: ca.File}.Config()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := spool.NewClient(spool.SeedBrokers(addr), spool.TLS(tlsCfg), spool.SASL(spool.SASLPlain("admin", "admin-secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.Admin().UpsertUserScram(ctx, "carol", spool.ScramSHA512, 4096, "carol-secret"); err != nil {
		t.Fatal(err)
	}

	secure := []string{"--bootstrap", addr, "--tls-ca", ca.File, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "carol"}
	env = append(env, "SPOOL_SASL_PASSWORD=carol-secret")
	code, out, stderr := runCLIProcess(t, env, append(secure, "--driver", "go,c,franz-go",
		"--cases", "produce/acksall,client/produce-consume,client/null-and-empty,client/group-commit-resume")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"-- driver go\n", "-- driver c\n", "go        4 passed, 0 failed, 0 skipped", "c         3 passed, 0 failed, 0 skipped",
		"franz-go  3 passed, 0 failed, 0 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	// The python driver (the binding over libspool) and the java one (Apache Kafka's client,
	// with the keys mapped to its JAAS and PEM store properties).
	binding, err := filepath.Abs(filepath.Join("..", "..", "..", "sdk-cgo", "bindings", "python"))
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "PYTHONPATH="+binding, "PYTHONDONTWRITEBYTECODE=1", "SPOOL_LIBRARY="+filepath.Join(dir, "prefix", "lib", "libspool.so.0"))
	brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	brokertest.NeedTool(t, "/usr/bin/javac", "openjdk-17-jdk-headless")
	code, out, stderr = runCLIProcess(t, env, append(secure, "--driver", "python,java", "--java-classpath", brokertest.KafkaJars(t),
		"--cases", "client/produce-consume,client/group-commit-resume")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"python    2 passed, 0 failed, 0 skipped", "java      2 passed, 0 failed, 0 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	// Refused: the flag's password wins over the environment's.
	code, out, _ = runCLIProcess(t, env, append(secure, "--sasl-password", "guess", "--driver", "go", "--cases", "produce/acksall,client/produce-consume", "--case-timeout", "20s")...)
	if code != 1 || strings.Count(out, "SASL_AUTHENTICATION_FAILED") < 2 || !strings.HasSuffix(out, "0 passed, 2 failed\n") {
		t.Errorf("wrong password: exit %d:\n%s", code, out)
	}
}
