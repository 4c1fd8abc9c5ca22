package config

import (
	"errors"
	"fmt"
	"strings"
)

const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// JAAS is one login module entry of a JAAS configuration, as Kafka's sasl.jaas.config holds:
// `<module class> <flag> key="value" ... ;`.
type JAAS struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// Users are PLAIN's user_NAME="PASSWORD" options, by name.
func (j JAAS) Users() map[string]string {
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}

// ParseJAAS reads one login module entry. Values are double-quoted (with \" and \\ escapes)
// or bare words; the entry ends with a semicolon.
func ParseJAAS(s string) (JAAS, error) {
	j := JAAS{Options: map[string]string{}}
	p := &jaasScanner{s: strings.TrimSpace(s)}
	j.Module = p.word()
	j.Flag = p.word()
	if j.Module == "" || j.Flag == "" {
		return j, errors.New(`want "<login module class> required key=\"value\" ... ;"`)
	}
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return j, fmt.Errorf("control flag %q: want required, requisite, sufficient or optional", j.Flag)
	}
	for {
		p.space()
		if p.done() {
			return j, errors.New("missing the closing ';'")
		}
		if p.peek() == ';' {
			p.i++
			p.space()
			if !p.done() {
				return j, fmt.Errorf("unexpected %q after ';' (one login module only)", p.s[p.i:])
			}
			return j, nil
		}
		key := p.word()
		p.space()
		if key == "" || p.done() || p.peek() != '=' {
			return j, fmt.Errorf("at %q: want key=\"value\"", p.s[p.i:])
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return j, fmt.Errorf("option %s: %w", key, err)
		}
		j.Options[key] = v
	}
}

type jaasScanner struct {
	s string
	i int
}

func (p *jaasScanner) done() bool { return p.i >= len(p.s) }
func (p *jaasScanner) peek() byte { return p.s[p.i] }

func (p *jaasScanner) space() {
	for !p.done() && strings.IndexByte(" \t\r\n", p.peek()) >= 0 {
		p.i++
	}
}

// word reads up to a space, '=', ';' or '"'.
func (p *jaasScanner) word() string {
	p.space()
	start := p.i
	for !p.done() && strings.IndexByte(" \t\r\n=;\"", p.peek()) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *jaasScanner) value() (string, error) {
	if p.done() {
		return "", errors.New("no value")
	}
	if p.peek() != '"' {
		return p.word(), nil
	}
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.peek()
		p.i++
		switch {
		case c == '\\' && !p.done():
			b.WriteByte(p.peek())
			p.i++
		case c == '"':
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated quoted value")
}
