package security

import (
	"fmt"
	"testing"
)

func lit(t ResourceType, name string) Pattern {
	return Pattern{Type: t, Name: name, PatternType: PatternLiteral}
}
func pre(t ResourceType, name string) Pattern {
	return Pattern{Type: t, Name: name, PatternType: PatternPrefixed}
}
func allow(p Pattern, principal string, op Operation) Binding {
	return Binding{Pattern: p, Entry: Entry{Principal: principal, Host: "*", Operation: op, Permission: Allow}}
}
func deny(p Pattern, principal string, op Operation) Binding {
	return Binding{Pattern: p, Entry: Entry{Principal: principal, Host: "*", Operation: op, Permission: Deny}}
}

func TestAuthorize(t *testing.T) {
	a := NewAuthorizer([]string{"User:admin"}, false)
	a.SetACLs([]Binding{
		allow(lit(ResourceTopic, "orders"), "User:alice", OpRead),
		allow(pre(ResourceTopic, "logs-"), "User:bob", OpWrite),
		deny(lit(ResourceTopic, "logs-secret"), "User:bob", OpAll),
		allow(lit(ResourceTopic, "*"), "User:carol", OpDescribe),
		allow(lit(ResourceGroup, "g1"), "User:*", OpRead),
		{Pattern: lit(ResourceTopic, "hosted"), Entry: Entry{Principal: "User:dave", Host: "10.0.0.1", Operation: OpAll, Permission: Allow}},
		allow(lit(ResourceTopic, "cfg"), "User:erin", OpAlterConfigs),
	})
	cases := []struct {
		principal, host string
		op              Operation
		typ             ResourceType
		name            string
		want            bool
	}{
		{"User:alice", "1.2.3.4", OpRead, ResourceTopic, "orders", true},
		{"User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "orders", true}, // implied by Read
		{"User:alice", "1.2.3.4", OpWrite, ResourceTopic, "orders", false},
		{"User:alice", "1.2.3.4", OpRead, ResourceTopic, "orders2", false}, // literal is exact
		{"User:bob", "1.2.3.4", OpWrite, ResourceTopic, "logs-app", true},  // prefixed
		{"User:bob", "1.2.3.4", OpWrite, ResourceTopic, "logs", false},     // shorter than the prefix
		{"User:bob", "1.2.3.4", OpWrite, ResourceTopic, "logs-secret", false},
		{"User:bob", "1.2.3.4", OpDescribe, ResourceTopic, "logs-app", true},
		{"User:carol", "1.2.3.4", OpDescribe, ResourceTopic, "anything", true}, // wildcard name
		{"User:carol", "1.2.3.4", OpRead, ResourceTopic, "anything", false},
		{"User:zed", "1.2.3.4", OpRead, ResourceGroup, "g1", true}, // wildcard principal
		{"User:zed", "1.2.3.4", OpRead, ResourceGroup, "g2", false},
		{"User:dave", "10.0.0.1", OpWrite, ResourceTopic, "hosted", true},
		{"User:dave", "10.0.0.2", OpWrite, ResourceTopic, "hosted", false},
		{"User:erin", "1.2.3.4", OpDescribeConfigs, ResourceTopic, "cfg", true}, // implied by AlterConfigs
		{"User:erin", "1.2.3.4", OpDescribe, ResourceTopic, "cfg", false},
		{"User:admin", "1.2.3.4", OpDelete, ResourceCluster, ClusterName, true},  // super user
		{"User:alice", "1.2.3.4", OpCreate, ResourceCluster, ClusterName, false}, // no ACL, default deny
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s:%s", c.principal, c.op, c.typ, c.name), func(t *testing.T) {
			if got := a.Authorize(c.principal, c.host, c.op, c.typ, c.name); got != c.want {
				t.Errorf("Authorize = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	a := NewAuthorizer(nil, true)
	a.SetACLs([]Binding{allow(lit(ResourceTopic, "guarded"), "User:alice", OpRead)})
	if !a.Authorize("User:bob", "h", OpWrite, ResourceTopic, "open") {
		t.Error("a resource with no ACL is refused despite allow.everyone.if.no.acl.found")
	}
	if a.Authorize("User:bob", "h", OpRead, ResourceTopic, "guarded") {
		t.Error("a resource with ACLs lets a principal without one in")
	}
}

func TestAuthorizeAny(t *testing.T) {
	a := NewAuthorizer(nil, false)
	if a.AuthorizeAny("User:bob", "h", OpWrite, ResourceTopic) {
		t.Error("no ACLs: allowed")
	}
	a.SetACLs([]Binding{allow(pre(ResourceTopic, "logs-"), "User:bob", OpWrite)})
	if !a.AuthorizeAny("User:bob", "h", OpWrite, ResourceTopic) {
		t.Error("a prefixed Write does not allow Write on some topic")
	}
	a.SetACLs([]Binding{allow(pre(ResourceTopic, "logs-"), "User:bob", OpWrite), deny(pre(ResourceTopic, "logs"), "User:bob", OpWrite)})
	if a.AuthorizeAny("User:bob", "h", OpWrite, ResourceTopic) {
		t.Error("an allow covered by a deny prefix still allows")
	}
	a.SetACLs([]Binding{allow(lit(ResourceTopic, "t"), "User:bob", OpWrite), deny(lit(ResourceTopic, "*"), "User:bob", OpWrite)})
	if a.AuthorizeAny("User:bob", "h", OpWrite, ResourceTopic) {
		t.Error("a deny of * does not refuse")
	}
}

func TestFilterMatches(t *testing.T) {
	name := "logs-app"
	bob := "User:bob"
	bs := []Binding{
		allow(lit(ResourceTopic, "logs-app"), "User:bob", OpRead),
		allow(pre(ResourceTopic, "logs-"), "User:bob", OpWrite),
		allow(lit(ResourceTopic, "*"), "User:alice", OpRead),
		allow(lit(ResourceGroup, "logs-app"), "User:bob", OpRead),
	}
	cases := []struct {
		f    Filter
		want []int
	}{
		{Filter{Type: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, []int{0, 1, 2, 3}},
		{Filter{Type: ResourceTopic, Name: &name, PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []int{0, 1, 2}},
		{Filter{Type: ResourceTopic, Name: &name, PatternType: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, []int{0}},
		{Filter{Type: ResourceAny, PatternType: PatternPrefixed, Operation: OpAny, Permission: PermissionAny}, []int{1}},
		{Filter{Type: ResourceAny, PatternType: PatternAny, Principal: &bob, Operation: OpRead, Permission: Allow}, []int{0, 3}},
	}
	for i, c := range cases {
		var got []int
		for j, b := range bs {
			if c.f.Matches(b) {
				got = append(got, j)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("case %d: matches %v, want %v", i, got, c.want)
		}
	}
}

func TestBindingValidate(t *testing.T) {
	good := allow(lit(ResourceTopic, "t"), "User:a", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Binding{
		"any type":      allow(lit(ResourceAny, "t"), "User:a", OpRead),
		"match pattern": allow(Pattern{Type: ResourceTopic, Name: "t", PatternType: PatternMatch}, "User:a", OpRead),
		"cluster name":  allow(lit(ResourceCluster, "c"), "User:a", OpAlter),
		"principal":     allow(lit(ResourceTopic, "t"), "alice", OpRead),
		"any operation": allow(lit(ResourceTopic, "t"), "User:a", OpAny),
		"empty name":    allow(lit(ResourceTopic, ""), "User:a", OpRead),
	}
	for name, b := range bad {
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v accepted", name, b)
		}
	}
}

func TestEncodeDecodeEntries(t *testing.T) {
	in := []Entry{{Principal: "User:alice", Host: "*", Operation: OpDescribeConfigs, Permission: Deny}}
	data := EncodeEntries(in)
	// Kafka's format, as kafka-acls.sh writes it under /kafka-acl.
	want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Deny","operation":"DescribeConfigs","host":"*"}]}`
	if string(data) != want {
		t.Errorf("encoded %s\nwant    %s", data, want)
	}
	out, err := DecodeEntries(data)
	if err != nil || len(out) != 1 || out[0] != in[0] {
		t.Errorf("decoded %v, %v", out, err)
	}
}

// BenchmarkAuthorize measures the per-request check with 1,000 ACLs in place.
func BenchmarkAuthorize(b *testing.B) {
	a := NewAuthorizer(nil, false)
	var bs []Binding
	for i := range 500 {
		bs = append(bs, allow(lit(ResourceTopic, fmt.Sprintf("topic-%d", i)), fmt.Sprintf("User:u%d", i), OpWrite))
		bs = append(bs, allow(pre(ResourceTopic, fmt.Sprintf("p%d-", i)), fmt.Sprintf("User:u%d", i), OpRead))
	}
	a.SetACLs(bs)
	b.ReportAllocs()
	for b.Loop() {
		if !a.Authorize("User:u250", "127.0.0.1", OpWrite, ResourceTopic, "topic-250") {
			b.Fatal("denied")
		}
	}
}
