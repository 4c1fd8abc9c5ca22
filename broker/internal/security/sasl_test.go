package security

import "testing"

func TestPlain(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "bob": ""}
	for msg, want := range map[string]string{
		"\x00alice\x00alice-secret":      "User:alice",
		"alice\x00alice\x00alice-secret": "User:alice",
		"\x00alice\x00wrong":             "",
		"\x00mallory\x00alice-secret":    "",
		"\x00mallory\x00":                "", // an unknown user with an empty password
		"bob\x00alice\x00alice-secret":   "", // acting for someone else
		"\x00alice":                      "",
		"\x00\x00alice-secret":           "",
		"\x00alice\x00alice-secret\x00":  "",
	} {
		got, err := Plain(users, []byte(msg))
		if got != want || (want == "") != (err == ErrAuthentication) {
			t.Errorf("Plain(%q) = %q, %v; want %q", msg, got, err, want)
		}
	}
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		p, err := Plain(map[string]string{"alice": "alice-secret"}, msg)
		if (err == nil) != (p == "User:alice") {
			t.Fatalf("%q: %q %v", msg, p, err)
		}
	})
}
