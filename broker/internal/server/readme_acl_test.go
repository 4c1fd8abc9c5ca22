package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// runKafkaToolsReadme runs the README block under heading as pasted, on a port and directory
// of its own (replacing addr and tmp), with Kafka's kafka-acls.sh and kafka-configs.sh (from
// Kafka's jars) where the block calls them, and returns its output.
func runKafkaToolsReadme(t *testing.T, heading, addr, tmp string) string {
	t.Helper()
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	java := brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	cp := brokertest.KafkaJars(t)
	block := readmeBlock(t, heading)
	dir := readmeDir(t)
	replace := []string{addr, fmt.Sprintf("127.0.0.1:%d", freePortT(t)), tmp, filepath.Join(dir, "work")}
	for tool, class := range map[string]string{"kafka-acls.sh": "kafka.admin.AclCommand", "kafka-configs.sh": "kafka.admin.ConfigCommand"} {
		path := filepath.Join(dir, "bin", tool)
		wrapper := fmt.Sprintf("#!/bin/sh\nexec %s -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp '%s' %s \"$@\"\n", java, cp, class)
		if err := os.WriteFile(path, []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		replace = append(replace, tool+" ", path+" ")
	}
	script := strings.NewReplacer(replace...).Replace(block)
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("%s example failed: %v\n--- script\n%s\n--- output\n%s", heading, err, script, text)
	}
	return text
}

// TestReadmeACLs runs the README's ACL example: kafka-acls.sh, then kcat as allowed and refused
// users.
func TestReadmeACLs(t *testing.T) {
	heavy(t)
	text := runKafkaToolsReadme(t, "#### Authorization (ACLs)", "127.0.0.1:9095", "/tmp/spool-acl")
	for _, want := range []string{"name=orders-, patternType=PREFIXED", "first-order\n", "Topic authorization failed", "bob refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("the ACL example's output lacks %q:\n%s", want, text)
		}
	}
}

// TestReadmeSCRAM runs the README's SCRAM example: kafka-configs.sh creates a user, kcat
// authenticates with SCRAM-SHA-512, and a wrong password is refused.
func TestReadmeSCRAM(t *testing.T) {
	heavy(t)
	text := runKafkaToolsReadme(t, "#### SCRAM users", "127.0.0.1:9096", "/tmp/spool-scram")
	for _, want := range []string{"hello-scram\n", "Authentication failed", "wrong password refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("the SCRAM example's output lacks %q:\n%s", want, text)
		}
	}
}
