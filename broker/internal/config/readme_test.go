package config

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeRefusedSettingsAreRefused keeps the README's list of the settings spoold refuses
// true: every item of the sentence "Settings that contradict Spool are refused with the
// reason: ..." in the broker section must be refused by Load, and the list may name nothing
// this test cannot try (a stale item, such as the SSL and SASL listeners that work since the
// security issue, fails here instead of misleading a reader).
func TestReadmeRefusedSettingsAreRefused(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	m := regexp.MustCompile(`Settings that contradict Spool are refused with the reason: (.*?)\. An unknown property`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`README.md: no sentence "Settings that contradict Spool are refused with the reason: ... . An unknown property"`)
	}
	// What each README item means, as properties that Load must refuse.
	tries := map[string][]string{
		"several `log.dirs`":         {"log.dirs=/tmp/a,/tmp/b"},
		"`process.roles=controller`": {"process.roles=controller"},
		"an `authorizer.class.name` other than Kafka's ACL authorizers": {"authorizer.class.name=com.example.MyAuthorizer"},
		"`delete.topic.enable=false`":                                   {"delete.topic.enable=false"},
		"`remote.log.storage.system.enable=true`":                       {"remote.log.storage.system.enable=true"},
	}
	for _, item := range strings.Split(m[1], ", ") {
		sets, ok := tries[item]
		if !ok {
			t.Errorf("README.md says %q is refused; the test does not know how to try it (is it still true?)", item)
			continue
		}
		var args []string
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		if _, err := Load(args, io.Discard); err == nil {
			t.Errorf("README.md says %q is refused, but spoold accepts %v", item, sets)
		}
	}
	// What the README documents as working must load: the security section's listeners and
	// authorizer (certificates are checked when the listener starts, not by Load).
	for _, sets := range [][]string{
		{"listeners=PLAINTEXT://127.0.0.1:9111,SASL_PLAINTEXT://127.0.0.1:9113", "sasl.enabled.mechanisms=PLAIN",
			`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`},
		{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:admin"},
	} {
		var args []string
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		if _, err := Load(args, io.Discard); err != nil {
			t.Errorf("the README documents %v as working, but Load refuses it: %v", sets, err)
		}
	}
}
