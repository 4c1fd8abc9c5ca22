package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spoolmq/spool/broker/brokertest"
)

// Kafka's own kafka-acls.sh (kafka.admin.AclCommand, from Kafka's jars) adds, lists and
// removes ACLs on Spool, authenticated as a super user over SASL PLAIN.
func TestKafkaAclsTool(t *testing.T) {
	longest(t)
	b := aclBroker(t, "")
	acls := kafkaAdminTool(t, b.Listener(t, "SASL_PLAINTEXT"), "kafka.admin.AclCommand")
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "tool-topic")
	acls("--add", "--deny-principal", "User:bob", "--operation", "All", "--topic", "tool-", "--resource-pattern-type", "prefixed")
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "tool-group")
	out := acls("--list", "--topic", "tool-topic")
	for _, want := range []string{"ResourcePattern(resourceType=TOPIC, name=tool-topic, patternType=LITERAL)",
		"(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)", "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-acls.sh --list --topic tool-topic lacks %q:\n%s", want, out)
		}
	}
	// What the tool wrote is what the broker holds.
	admin := kadm.NewClient(aclClient(t, b, "admin"))
	got, err := describeACLs(admin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"GROUP:LITERAL:tool-group:READ:ALLOW", "TOPIC:LITERAL:tool-topic:READ:ALLOW", "TOPIC:LITERAL:tool-topic:WRITE:ALLOW", "TOPIC:PREFIXED:tool-:ALL:DENY"}
	if !slices.Equal(got, want) {
		t.Errorf("after kafka-acls.sh --add:\n got %v\nwant %v", got, want)
	}
	acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "tool-topic")
	acls("--remove", "--force", "--resource-pattern-type", "prefixed", "--topic", "tool-")
	if got, err = describeACLs(admin); err != nil || !slices.Equal(got, []string{"GROUP:LITERAL:tool-group:READ:ALLOW", "TOPIC:LITERAL:tool-topic:READ:ALLOW"}) {
		t.Errorf("after kafka-acls.sh --remove: %v %v", got, err)
	}
}

// kafkaAdminTool runs one of Kafka's admin commands (class, e.g. kafka.admin.AclCommand for
// kafka-acls.sh) from Kafka's jars against addr, a SASL_PLAINTEXT listener, as the super user
// admin with PLAIN, the way an operator passes --command-config. It returns the output; a
// failing command (or one hanging for 2 minutes) fails the test.
func kafkaAdminTool(t *testing.T, addr, class string) func(args ...string) string {
	t.Helper()
	cp := brokertest.KafkaJars(t)
	java := brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	props := filepath.Join(t.TempDir(), "admin.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hang
		defer cancel()
		jvm := append(brokertest.FastJVM(t, cp, class), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, class,
			"--bootstrap-server", addr, "--command-config", props)
		cmd := exec.CommandContext(ctx, java, append(jvm, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", class, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
