package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// runSecurityToolsReadme runs the README section under heading as pasted, on a port and
// directory of its own (replacing addr and tmp): its first block with bin/spool (the way
// Spool's users manage credentials and ACLs), then its second, the alternative for Kafka users,
// with Kafka's kafka-acls.sh and kafka-configs.sh (from Kafka's jars) against the same broker.
// It returns the output of both.
func runSecurityToolsReadme(t *testing.T, heading, addr, tmp string) string {
	t.Helper()
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	java := brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	cp := brokertest.KafkaJars(t)
	blocks := brokertest.ReadmeBlocks(t, "../../../README.md", heading)
	if len(blocks) != 2 {
		t.Fatalf("%s: %d sh blocks, want 2 (spool's, then Kafka's tools as the alternative)", heading, len(blocks))
	}
	if strings.Contains(blocks[0], "kafka-acls.sh") || strings.Contains(blocks[0], "kafka-configs.sh") {
		t.Errorf("%s: the first block calls Kafka's tools, which a Spool user does not have:\n%s", heading, blocks[0])
	}
	dir := readmeDir(t)
	if err := os.Symlink(brokertest.CLI(t), filepath.Join(dir, "bin", "spool")); err != nil {
		t.Fatal(err)
	}
	replace := []string{addr, fmt.Sprintf("127.0.0.1:%d", freePortT(t)), tmp, filepath.Join(dir, "work")}
	for tool, class := range map[string]string{"kafka-acls.sh": "kafka.admin.AclCommand", "kafka-configs.sh": "kafka.admin.ConfigCommand"} {
		path := filepath.Join(dir, "bin", tool)
		wrapper := fmt.Sprintf("#!/bin/sh\nexec %s -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp '%s' %s \"$@\"\n", java, cp, class)
		if err := os.WriteFile(path, []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		replace = append(replace, tool+" ", path+" ")
	}
	script := strings.NewReplacer(replace...).Replace(blocks[0] + blocks[1])
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("%s example failed: %v\n--- script\n%s\n--- output\n%s", heading, err, script, text)
	}
	return text
}

// TestReadmeACLs runs the README's ACL example: spool acl as the admin, then kcat as allowed and
// refused users, then Kafka's kafka-acls.sh as the alternative.
func TestReadmeACLs(t *testing.T) {
	heavy(t)
	text := runSecurityToolsReadme(t, "#### Authorization (ACLs)", "127.0.0.1:9131", "/tmp/spool-acl")
	for _, want := range []string{
		"User:alice  *     Create", // spool acl list
		"first-order\n", "Topic authorization failed", "bob refused",
		"name=orders-, patternType=PREFIXED", // kafka-acls.sh --list
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the ACL example's output lacks %q:\n%s", want, text)
		}
	}
}

// TestReadmeSCRAM runs the README's SCRAM example: spool user creates a user, kcat
// authenticates with SCRAM-SHA-512, a wrong password is refused, and Kafka's kafka-configs.sh
// sets the same credential.
func TestReadmeSCRAM(t *testing.T) {
	heavy(t)
	text := runSecurityToolsReadme(t, "#### SCRAM users", "127.0.0.1:9121", "/tmp/spool-scram")
	for _, want := range []string{
		"set SCRAM-SHA-512 credential of alice (8192 iterations)", "alice  SCRAM-SHA-512  8192",
		"hello-scram\n", "Authentication failed", "wrong password refused",
		"Completed updating config for user alice", // kafka-configs.sh
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the SCRAM example's output lacks %q:\n%s", want, text)
		}
	}
}
