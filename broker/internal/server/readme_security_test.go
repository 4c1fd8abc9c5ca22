package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// TestReadmeSecurity runs the README's security example as a user pastes it (a CA and a broker
// certificate with openssl, a broker with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners,
// kcat over SSL, SASL_PLAINTEXT and SASL_SSL), on ports and directories of its own.
func TestReadmeSecurity(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	brokertest.NeedTool(t, "/usr/bin/openssl", "openssl")
	block := readmeBlock(t, "### Security")
	dir := readmeDir(t)
	base := freeRun(t, 4)
	script := strings.NewReplacer(
		"127.0.0.1:911", fmt.Sprintf("127.0.0.1:%d", base/10),
		"/tmp/spool-tls", filepath.Join(dir, "tls"),
		"/tmp/spool-sec", filepath.Join(dir, "data"),
	).Replace(block)
	text, err := runReadmeScript(t, dir, script)
	if err != nil {
		t.Fatalf("security example failed: %v\n--- script\n%s\n--- output\n%s", err, script, text)
	}
	if !strings.Contains(text, "hello-ssl\nhello-sasl\n") {
		t.Errorf("the SASL_SSL consumer did not read both records:\n%s", text)
	}
}
