package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// aclBroker is a broker with the ACL authorizer on (super user admin, nothing allowed without
// an ACL), a SASL_SSL listener with PLAIN (admin) and SCRAM-SHA-512 (users made by `spool
// user`), and its CA.
func aclBroker(t *testing.T) (addr string, ca *testca.CA) {
	ca = testca.New(t)
	props := brokertest.SASLSSLProps(t, ca)
	props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
	props["super.users"] = "User:admin"
	props["allow.everyone.if.no.acl.found"] = "false"
	props["connection.failed.authentication.delay.ms"] = "10"
	b := brokertest.Start(t, brokertest.Options{Props: props})
	return b.Listener(t, "SASL_SSL"), ca
}

// TestCLIACLAndUsers: the admin (PLAIN, password from $SPOOL_SASL_PASSWORD) makes a SCRAM user
// with `spool user create`; the user (SCRAM-SHA-512, settings from a profile) is refused a
// produce until `spool acl create` allows it, and again after `spool acl delete`; a wrong
// password and a deleted user are refused authentication. Listings are parsed back from JSON.
func TestCLIACLAndUsers(t *testing.T) {
	t.Parallel()
	addr, ca := aclBroker(t)
	admin := func(stdin string, args ...string) result {
		t.Helper()
		return runCLIEnv(t, []string{"SPOOL_BROKERS=" + addr, "SPOOL_CONFIG=" + os.DevNull, "SPOOL_SASL_PASSWORD=admin-secret"}, stdin,
			append([]string{"--tls-ca", ca.File, "--sasl-mechanism", "PLAIN", "--sasl-username", "admin"}, args...)...)
	}
	profile := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(profile, []byte("# bob's settings\nbrokers="+addr+"\ntls-ca="+ca.File+
		"\nsasl-mechanism=SCRAM-SHA-512\nsasl-username=bob\nsasl-password=bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bob := func(stdin string, args ...string) result {
		t.Helper()
		return runCLIEnv(t, []string{"SPOOL_BROKERS=", "SPOOL_CONFIG=" + profile, "SPOOL_SASL_PASSWORD="}, stdin, args...)
	}

	r := ok(t, admin("bob-secret\n", "user", "create", "bob", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192"))
	if !strings.Contains(r.stdout, "set SCRAM-SHA-512 credential of bob (8192 iterations)") {
		t.Errorf("user create: %q", r.stdout)
	}
	var users []userJSON
	if err := json.Unmarshal([]byte(ok(t, admin("", "user", "list", "--json")).stdout), &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0].User != "bob" || len(users[0].Credentials) != 1 ||
		users[0].Credentials[0] != (credentialJSON{"SCRAM-SHA-512", 8192}) {
		t.Errorf("user list --json: %+v", users)
	}
	ok(t, admin("", "topic", "create", "orders", "--partitions", "1"))

	// No ACL: bob authenticates but may not write.
	r = bob("first\n", "produce", "--topic", "orders")
	if r.code != 1 || !strings.Contains(r.stderr, "AUTHORIZATION_FAILED") {
		t.Fatalf("produce without an ACL: exit %d, stderr %q", r.code, r.stderr)
	}

	ok(t, admin("", "acl", "create", "--allow-principal", "User:bob", "--operation", "Write", "--operation", "Read", "--topic", "orders"))
	ok(t, admin("", "acl", "create", "--allow-principal", "User:bob", "--operation", "Read", "--group", "bobs-", "--resource-pattern-type", "prefixed"))
	var acls []aclJSON
	if err := json.Unmarshal([]byte(ok(t, admin("", "acl", "list", "--principal", "User:bob", "--json")).stdout), &acls); err != nil {
		t.Fatal(err)
	}
	if len(acls) != 3 {
		t.Fatalf("acl list --principal User:bob: %+v, want 3 ACLs", acls)
	}
	want := aclJSON{Principal: "User:bob", Host: "*", Operation: "Read", Permission: "ALLOW", ResourceType: "Group", PatternType: "PREFIXED", ResourceName: "bobs-"}
	found := false
	for _, a := range acls {
		found = found || a == want
	}
	if !found {
		t.Errorf("acl list lacks %+v: %+v", want, acls)
	}
	r = ok(t, admin("", "acl", "list", "--topic", "orders"))
	if strings.Count(r.stdout, "User:bob") != 2 || !strings.Contains(r.stdout, "PRINCIPAL") {
		t.Errorf("acl list --topic orders:\n%s", r.stdout)
	}

	ok(t, bob("first\nsecond\n", "produce", "--topic", "orders"))
	r = ok(t, bob("", "consume", "--topic", "orders", "--group", "bobs-readers", "--offset", "beginning", "--count", "2"))
	if r.stdout != "first\nsecond\n" {
		t.Errorf("bob consumed %q", r.stdout)
	}

	// Deleting the topic's ACLs takes the permission away.
	var deleted []aclJSON
	if err := json.Unmarshal([]byte(ok(t, admin("", "acl", "delete", "--allow-principal", "User:bob", "--topic", "orders", "--json")).stdout), &deleted); err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 2 {
		t.Errorf("acl delete: %+v, want the 2 topic ACLs", deleted)
	}
	r = bob("third\n", "produce", "--topic", "orders")
	if r.code != 1 || !strings.Contains(r.stderr, "AUTHORIZATION_FAILED") {
		t.Errorf("produce after the ACL was deleted: exit %d, stderr %q", r.code, r.stderr)
	}

	// A wrong password, given on the command line over the profile's.
	r = bob("", "--sasl-password", "guess", "topic", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("wrong password: exit %d, stderr %q", r.code, r.stderr)
	}
	r = ok(t, admin("", "user", "delete", "bob"))
	if !strings.Contains(r.stdout, "deleted SCRAM-SHA-512 credential of bob") {
		t.Errorf("user delete: %q", r.stdout)
	}
	r = bob("", "topic", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("deleted user: exit %d, stderr %q", r.code, r.stderr)
	}
	r = admin("", "user", "list", "bob")
	if r.code != 1 || !strings.Contains(r.stderr, "RESOURCE_NOT_FOUND") {
		t.Errorf("user list of a deleted user: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Bad security flags and bad acl/user arguments exit 2 naming what is wrong, before any
// broker is contacted (the address is closed).
func TestCLISecurityBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "list", "--sasl-mechanism", "GSSAPI", "--sasl-username", "a"}, "sasl"},
		{[]string{"topic", "list", "--sasl-mechanism", "PLAIN"}, "--sasl-mechanism needs --sasl-username"},
		{[]string{"topic", "list", "--sasl-username", "a"}, "need --sasl-mechanism"},
		{[]string{"topic", "list", "--tls-ca", "/no/such/ca.pem"}, "reading the CA"},
		{[]string{"topic", "list", "--tls-cert", "/no/such/cert.pem"}, "certificate"},
		{[]string{"topic", "list", "--tls-ca"}, "flag needs an argument: --tls-ca"},
		{[]string{"acl", "create", "--operation", "Write", "--topic", "t"}, "give --allow-principal or --deny-principal"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--topic", "t"}, "give --operation"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Write"}, "give a resource"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"}, `unknown operation "Fly"`},
		{[]string{"acl", "create", "--allow-principal", "alice", "--operation", "Read", "--topic", "t"}, "want TYPE:NAME"},
		{[]string{"acl", "create", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "any"}, "want literal or prefixed"},
		{[]string{"acl", "list", "--resource-pattern-type", "fuzzy"}, "want literal or prefixed, any or match"},
		{[]string{"acl", "delete"}, "give a resource or a principal"},
		{[]string{"acl", "list", "extra"}, "takes no arguments"},
		{[]string{"user", "create"}, "missing user name"},
		{[]string{"user", "create", "a", "--password", "p", "--iterations", "100"}, "--iterations must be from 4096 to 16384"},
		{[]string{"user", "create", "a", "--password", "p", "--mechanism", "MD5"}, "unknown SCRAM mechanism"},
		{[]string{"user", "create", "a"}, "empty password"},
		{[]string{"user", "delete"}, "missing user name"},
	} {
		r := runCLI(t, "127.0.0.1:1", "", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "usage: spool") {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// A profile with an unknown key is refused, naming the known ones.
	profile := filepath.Join(t.TempDir(), "config")
	os.WriteFile(profile, []byte("sasl-passwd=x\n"), 0o600)
	r := runCLIEnv(t, []string{"SPOOL_CONFIG=" + profile}, "", "topic", "list")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown key "sasl-passwd"`) || !strings.Contains(r.stderr, "sasl-password") {
		t.Errorf("bad profile key: exit %d, stderr %q", r.code, r.stderr)
	}
	// A runtime refusal exits 1: a TLS client on a closed port.
	r = runCLI(t, "127.0.0.1:1", "", "topic", "list", "--tls")
	if r.code != 1 {
		t.Errorf("--tls to a closed port: exit %d, stderr %q", r.code, r.stderr)
	}
}
