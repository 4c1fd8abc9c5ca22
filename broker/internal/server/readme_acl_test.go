package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeACLs runs the README's ACL example as pasted, on a port and directories of its
// own, with Kafka's kafka-acls.sh (AclCommand from Kafka's jars) where the example calls it.
func TestReadmeACLs(t *testing.T) {
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	java := brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	cp := brokertest.KafkaJars(t)
	block := readmeBlock(t, "#### Authorization (ACLs)")
	dir := readmeDir(t)
	tool := filepath.Join(dir, "bin", "kafka-acls.sh")
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp '%s' kafka.admin.AclCommand \"$@\"\n", java, cp)
	if err := os.WriteFile(tool, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(
		"127.0.0.1:9095", fmt.Sprintf("127.0.0.1:%d", freePortT(t)),
		"/tmp/spool-acl", filepath.Join(dir, "acl"),
		"kafka-acls.sh ", tool+" ",
	).Replace(block)
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("ACL example failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	for _, want := range []string{"name=orders-, patternType=PREFIXED", "first-order\n", "Topic authorization failed", "bob refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("the ACL example's output lacks %q:\n%s", want, text)
		}
	}
}
