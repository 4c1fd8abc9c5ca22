package security

import (
	"fmt"
	"regexp"
	"strings"
)

// PrincipalRules are Kafka's ssl.principal.mapping.rules: a list of RULE:pattern/replacement/
// with an optional L or U (lower or upper case the result) and DEFAULT (the distinguished
// name unchanged). The first rule whose pattern matches the whole distinguished name of the
// client certificate's subject gives the name; when none matches, the client is refused, as
// Kafka's SslPrincipalMapper does. Patterns are Go regular expressions (RE2), replacements
// take $1 or ${1}.
type PrincipalRules []principalRule

type principalRule struct {
	dflt    bool
	re      *regexp.Regexp
	replace string
	caseTo  byte // 0, 'L' or 'U'
}

// ParsePrincipalRules reads the property's value; "" is DEFAULT.
func ParsePrincipalRules(s string) (PrincipalRules, error) {
	var rules PrincipalRules
	rest := strings.TrimSpace(s)
	if rest == "" {
		return PrincipalRules{{dflt: true}}, nil
	}
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t\n,")
		switch {
		case rest == "":
		case strings.HasPrefix(rest, "DEFAULT"):
			rules = append(rules, principalRule{dflt: true})
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rest = rest[len("RULE:"):]
			pattern, r, ok := untilSlash(rest)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: RULE:%s: missing the '/' after the pattern", rest)
			}
			replacement, r, ok := untilSlash(r)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: RULE:%s: missing the '/' after the replacement", rest)
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$")
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", pattern, err)
			}
			rule := principalRule{re: re, replace: javaGroups.ReplaceAllString(replacement, "$${$1}")}
			if r != "" && (r[0] == 'L' || r[0] == 'U') {
				rule.caseTo, r = r[0], r[1:]
			}
			rules = append(rules, rule)
			rest = r
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %q is neither RULE:pattern/replacement/[LU] nor DEFAULT", rest)
		}
		rest = strings.TrimLeft(rest, " \t\n")
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: unexpected %q after a rule (rules are separated by ',')", rest)
		}
	}
	return rules, nil
}

// javaGroups finds Java's $N group references, rewritten as ${N} for Go.
var javaGroups = regexp.MustCompile(`\$(\d+)`)

// untilSlash splits s at its first '/' not escaped by a backslash; the escape is dropped.
func untilSlash(s string) (before, after string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case s[i] == '/':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// Name maps a distinguished name to the principal's name.
func (rs PrincipalRules) Name(dn string) (string, error) {
	for _, r := range rs {
		if r.dflt {
			return dn, nil
		}
		if !r.re.MatchString(dn) {
			continue
		}
		name := r.re.ReplaceAllString(dn, r.replace)
		switch r.caseTo {
		case 'L':
			name = strings.ToLower(name)
		case 'U':
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("no ssl.principal.mapping.rules rule applies to %q", dn)
}
