package security

import "testing"

// Kafka's documented examples of ssl.principal.mapping.rules.
func TestPrincipalRules(t *testing.T) {
	rules, err := ParsePrincipalRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=kafka-server1,OU=ServiceUsers,O=Org,C=US":                   "kafka-server1",
		"CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US": "duke@javasoft",
		"OU=JavaSoft,O=Sun,CN=Adam.Smith":                               "adam.smith",
		"OU=Nobody,O=Nowhere":                                           "OU=Nobody,O=Nowhere", // DEFAULT
	} {
		if got, err := rules.Name(dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	upper, err := ParsePrincipalRules(`RULE:^CN=([a-z]+),.*$/$1/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := upper.Name("CN=alice,O=Spool"); err != nil || got != "ALICE" {
		t.Errorf("upper: %q %v", got, err)
	}
	if _, err := upper.Name("O=Spool"); err == nil {
		t.Error("a name no rule applies to was mapped")
	}
	for _, bad := range []string{"RULE:^CN=(.*)$", "RULE:(/x/", "SOMETHING", "DEFAULT DEFAULT"} {
		if _, err := ParsePrincipalRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
