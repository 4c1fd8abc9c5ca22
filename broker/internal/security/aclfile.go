package security

import (
	"encoding/json"
	"fmt"
	"strings"
)

// aclJSON is one ACL in Kafka's ZooKeeper vocabulary (names, not codes), so that stored ACLs
// read the same in the embedded store's file and in ZooKeeper.
type aclJSON struct {
	ResourceType   string `json:"resourceType,omitempty"`
	PatternType    string `json:"patternType,omitempty"`
	Name           string `json:"name,omitempty"`
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

// aclsJSON is Kafka's znode document {"version":1,"acls":[...]}; the embedded file uses it
// too, with each ACL also naming its resource pattern.
type aclsJSON struct {
	Version int       `json:"version"`
	ACLs    []aclJSON `json:"acls"`
}

func entryJSON(e Entry) aclJSON {
	return aclJSON{Principal: e.Principal, PermissionType: e.Permission.String(), Operation: e.Operation.String(), Host: e.Host}
}

func (j aclJSON) entry() (Entry, error) {
	op, ok := ParseOperation(j.Operation)
	if !ok {
		return Entry{}, fmt.Errorf("unknown operation %q", j.Operation)
	}
	perm, ok := ParsePermission(j.PermissionType)
	if !ok {
		return Entry{}, fmt.Errorf("unknown permission type %q", j.PermissionType)
	}
	return Entry{Principal: j.Principal, Host: j.Host, Operation: op, Permission: perm}, nil
}

// EncodeEntries is Kafka's JSON of one resource pattern's ACLs (the data of
// /kafka-acl/<Type>/<name>).
func EncodeEntries(entries []Entry) []byte {
	doc := aclsJSON{Version: 1, ACLs: []aclJSON{}}
	for _, e := range entries {
		doc.ACLs = append(doc.ACLs, entryJSON(e))
	}
	b, _ := json.Marshal(doc)
	return b
}

// DecodeEntries reads Kafka's JSON of one resource pattern's ACLs; empty data has none.
func DecodeEntries(data []byte) ([]Entry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var doc aclsJSON
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding ACLs: %w", err)
	}
	out := make([]Entry, 0, len(doc.ACLs))
	for _, j := range doc.ACLs {
		e, err := j.entry()
		if err != nil {
			return nil, fmt.Errorf("decoding ACLs: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// EncodeBindings is a list of ACLs with their patterns, for the embedded store's file.
func EncodeBindings(bs []Binding) []byte {
	doc := aclsJSON{Version: 1, ACLs: []aclJSON{}}
	for _, b := range bs {
		j := entryJSON(b.Entry)
		j.ResourceType, j.PatternType, j.Name = b.Pattern.Type.String(), b.Pattern.PatternType.String(), b.Pattern.Name
		doc.ACLs = append(doc.ACLs, j)
	}
	out, _ := json.MarshalIndent(doc, "", "  ")
	return out
}

// DecodeBindings reads EncodeBindings' output.
func DecodeBindings(data []byte) ([]Binding, error) {
	var doc aclsJSON
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding ACLs: %w", err)
	}
	out := make([]Binding, 0, len(doc.ACLs))
	for _, j := range doc.ACLs {
		e, err := j.entry()
		if err != nil {
			return nil, fmt.Errorf("decoding ACLs: %w", err)
		}
		t, ok := ParseResourceType(j.ResourceType)
		if !ok {
			return nil, fmt.Errorf("decoding ACLs: unknown resource type %q", j.ResourceType)
		}
		pt, ok := ParsePatternType(j.PatternType)
		if !ok {
			return nil, fmt.Errorf("decoding ACLs: unknown pattern type %q", j.PatternType)
		}
		out = append(out, Binding{Pattern: Pattern{Type: t, Name: j.Name, PatternType: pt}, Entry: e})
	}
	return out, nil
}

// ParsePatternType reads LITERAL or PREFIXED, case-insensitive.
func ParsePatternType(s string) (PatternType, bool) {
	for _, p := range []PatternType{PatternLiteral, PatternPrefixed} {
		if strings.EqualFold(p.String(), s) {
			return p, true
		}
	}
	return PatternUnknown, false
}
