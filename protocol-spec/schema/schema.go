// Package schema reads Spool's protocol schema files (protocol-spec/messages/*.spool, format in
// messages/FORMAT.md) into a model that the generator and the spec tests share.
package schema

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Range is an inclusive version range. The zero Range{} is not valid; use None.
type Range struct{ Lo, Hi int16 }

// Open is the upper bound of an "N+" range.
const Open int16 = 1<<15 - 1

// None is the empty range.
var None = Range{Lo: 1, Hi: 0}

// Empty reports whether r holds no version.
func (r Range) Empty() bool { return r.Lo > r.Hi }

// Has reports whether v is in r.
func (r Range) Has(v int16) bool { return v >= r.Lo && v <= r.Hi }

// Intersect is the versions in both.
func (r Range) Intersect(o Range) Range {
	x := Range{Lo: max(r.Lo, o.Lo), Hi: min(r.Hi, o.Hi)}
	if x.Empty() {
		return None
	}
	return x
}

// Covers reports whether every version of o is in r.
func (r Range) Covers(o Range) bool { return o.Empty() || (r.Lo <= o.Lo && o.Hi <= r.Hi) }

func (r Range) String() string {
	switch {
	case r.Empty():
		return "none"
	case r.Hi == Open:
		return fmt.Sprintf("%d+", r.Lo)
	case r.Lo == r.Hi:
		return fmt.Sprintf("%d", r.Lo)
	default:
		return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
	}
}

// ParseRange reads "N+", "N-M", "N" or "none".
func ParseRange(s string) (Range, error) {
	if s == "none" {
		return None, nil
	}
	if lo, ok := strings.CutSuffix(s, "+"); ok {
		n, err := strconv.ParseInt(lo, 10, 16)
		if err != nil {
			return None, fmt.Errorf("bad version range %q", s)
		}
		return Range{Lo: int16(n), Hi: Open}, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseInt(lo, 10, 16)
	b, err2 := strconv.ParseInt(hi, 10, 16)
	if err1 != nil || err2 != nil || a > b {
		return None, fmt.Errorf("bad version range %q", s)
	}
	return Range{Lo: int16(a), Hi: int16(b)}, nil
}

// Kind is the kind of a type.
type Kind int

// The kinds of types.
const (
	Primitive   Kind = iota // bool, int8, ..., string, bytes, records, uuid
	Array                   // []Elem
	StructArray             // []Struct
	StructValue             // Struct
)

// Primitives are the primitive type names.
var Primitives = map[string]bool{
	"bool": true, "int8": true, "int16": true, "uint16": true, "int32": true, "int64": true,
	"float64": true, "string": true, "bytes": true, "records": true, "uuid": true,
}

// Type is a field's type.
type Type struct {
	Kind   Kind
	Name   string  // primitive name (Primitive, Array) or struct name (StructArray, StructValue)
	Struct *Struct // for StructArray and StructValue
}

// Spelling is the type as written in a schema file.
func (t Type) Spelling() string {
	if t.Kind == Array || t.Kind == StructArray {
		return "[]" + t.Name
	}
	return t.Name
}

// Nullable reports whether values of this type can be null on the wire.
func (t Type) Nullable() bool {
	switch t.Kind {
	case Array, StructArray:
		return true
	case StructValue:
		return false
	}
	return t.Name == "string" || t.Name == "bytes" || t.Name == "records"
}

// Field is one field of a struct.
type Field struct {
	Name      string
	Type      Type
	Versions  Range
	Nullable  Range  // None unless nullable somewhere
	Default   string // as written; "" when absent
	Tag       int    // -1 when not tagged
	Tagged    Range  // tagged versions (None when not tagged)
	FlexNone  bool   // classic encoding even in flexible versions
	Ignorable bool
	ZeroCopy  bool // records the sender may splice in from elsewhere (a file, with sendfile)
	Doc       string
	Line      int
}

// Struct is a message, a header, or a nested struct.
type Struct struct {
	Name   string
	Fields []*Field
}

// Message is one side (request or response) of an API, or a header.
type Message struct {
	Name   string // ProduceRequest, RequestHeader, ...
	Struct *Struct
}

// API is one API: a request and a response sharing versions.
type API struct {
	Key            int16
	Name           string
	Versions       Range
	Flexible       Range // flexible versions (None if never)
	ResponseHeader int16 // fixed response header version, -1 when derived
	Request        *Message
	Response       *Message
	File           string
	Doc            string
}

// Header is a request or response header.
type Header struct {
	Name     string
	Versions Range
	Flexible Range
	Fields   *Struct
	File     string
	Doc      string
}

// Data is a versioned structure that is neither an API nor a header (Kafka's "data" type), such
// as the consumer protocol's subscription and assignment, which travel as opaque bytes inside
// JoinGroup and SyncGroup. It has no API key, so nothing about it is advertised.
type Data struct {
	Name     string
	Versions Range
	Flexible Range
	// VersionPrefix: the encoding starts with the version as an int16, so a reader learns the
	// version from the bytes; a version newer than Versions.Hi is read as Versions.Hi.
	VersionPrefix bool
	Fields        *Struct
	File          string
	Doc           string
}

// Spec is every schema file of a folder.
type Spec struct {
	APIs    []*API // ordered by key
	Headers []*Header
	Data    []*Data // ordered by name
}

// API returns the API with the given key.
func (s *Spec) API(key int16) *API {
	for _, a := range s.APIs {
		if a.Key == key {
			return a
		}
	}
	return nil
}

// Header returns the header with the given name.
func (s *Spec) Header(name string) *Header {
	for _, h := range s.Headers {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// DataType returns the data structure with the given name.
func (s *Spec) DataType(name string) *Data {
	for _, d := range s.Data {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// LoadDir parses every *.spool file in dir.
func LoadDir(dir string) (*Spec, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.spool"))
	if err != nil {
		return nil, fmt.Errorf("listing schemas: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.spool files in %s", dir)
	}
	sort.Strings(paths)
	spec := &Spec{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("opening schema: %w", err)
		}
		err = parse(spec, filepath.Base(p), f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(spec.APIs, func(i, j int) bool { return spec.APIs[i].Key < spec.APIs[j].Key })
	for i := 1; i < len(spec.APIs); i++ {
		if spec.APIs[i].Key == spec.APIs[i-1].Key {
			return nil, fmt.Errorf("API key %d defined in %s and %s", spec.APIs[i].Key, spec.APIs[i-1].File, spec.APIs[i].File)
		}
	}
	sort.Slice(spec.Data, func(i, j int) bool { return spec.Data[i].Name < spec.Data[j].Name })
	for i := 1; i < len(spec.Data); i++ {
		if spec.Data[i].Name == spec.Data[i-1].Name {
			return nil, fmt.Errorf("data %s defined in %s and %s", spec.Data[i].Name, spec.Data[i-1].File, spec.Data[i].File)
		}
	}
	return spec, nil
}

type line struct {
	n      int
	indent int
	text   string
	doc    string // the comment lines just above
}

type parser struct {
	file  string
	lines []line
	pos   int
}

func (p *parser) errf(l line, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, l.n, fmt.Sprintf(format, args...))
}

func parse(spec *Spec, name string, rd io.Reader) error {
	p := &parser{file: name}
	sc := bufio.NewScanner(rd)
	var doc []string
	for n := 1; sc.Scan(); n++ {
		raw := strings.TrimRight(sc.Text(), " \t")
		trimmed := strings.TrimLeft(raw, " ")
		if strings.HasPrefix(trimmed, "#") {
			doc = append(doc, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			continue
		}
		if trimmed == "" {
			continue
		}
		if strings.ContainsRune(raw, '\t') {
			return fmt.Errorf("%s:%d: tabs are not allowed; indent with two spaces", name, n)
		}
		ind := len(raw) - len(trimmed)
		if ind%2 != 0 {
			return fmt.Errorf("%s:%d: indentation must be a multiple of two spaces", name, n)
		}
		p.lines = append(p.lines, line{n: n, indent: ind / 2, text: trimmed, doc: strings.Join(doc, " ")})
		doc = nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		word, _, _ := strings.Cut(l.text, " ")
		switch word {
		case "api":
			a, err := p.api(l.doc)
			if err != nil {
				return err
			}
			spec.APIs = append(spec.APIs, a)
		case "header":
			h, err := p.header(l.doc)
			if err != nil {
				return err
			}
			spec.Headers = append(spec.Headers, h)
		case "data":
			d, err := p.data(l.doc)
			if err != nil {
				return err
			}
			spec.Data = append(spec.Data, d)
		default:
			return p.errf(l, "expected 'api', 'header' or 'data', found %q", l.text)
		}
	}
	return nil
}

// directives reads top-level "word value" lines until one of stop.
func (p *parser) directives(stop ...string) (map[string]string, error) {
	d := map[string]string{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent != 0 {
			return nil, p.errf(l, "unexpected indented line")
		}
		for _, s := range stop {
			if l.text == s {
				return d, nil
			}
		}
		k, v, _ := strings.Cut(l.text, " ")
		if _, dup := d[k]; dup {
			return nil, p.errf(l, "%s given twice", k)
		}
		d[k] = strings.TrimSpace(v)
		p.pos++
	}
	return d, nil
}

func (p *parser) versions(l line, d map[string]string) (versions, flexible Range, err error) {
	versions, err = ParseRange(d["versions"])
	if err != nil || versions.Empty() || versions.Hi == Open {
		return None, None, p.errf(l, "'versions' must be a closed range like 0-9")
	}
	flexible, err = ParseRange(d["flexible"])
	if err != nil || (!flexible.Empty() && flexible.Hi != Open) {
		return None, None, p.errf(l, "'flexible' must be N+ or none")
	}
	return versions, flexible, nil
}

func (p *parser) api(doc string) (*API, error) {
	start := p.lines[p.pos]
	d, err := p.directives("request")
	if err != nil {
		return nil, err
	}
	var key int
	var name string
	if _, err := fmt.Sscanf(d["api"], "%d %s", &key, &name); err != nil {
		return nil, p.errf(start, "expected 'api KEY Name'")
	}
	a := &API{Key: int16(key), Name: name, ResponseHeader: -1, File: p.file, Doc: doc}
	if a.Versions, a.Flexible, err = p.versions(start, d); err != nil {
		return nil, err
	}
	if s, ok := d["response-header"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 1 {
			return nil, p.errf(start, "response-header must be 0 or 1")
		}
		a.ResponseHeader = int16(n)
	}
	for k := range d {
		switch k {
		case "api", "versions", "flexible", "response-header":
		default:
			return nil, p.errf(start, "unknown directive %q", k)
		}
	}
	if p.pos >= len(p.lines) {
		return nil, p.errf(start, "missing 'request'")
	}
	p.pos++
	req, err := p.fields(name+"Request", 1, a.Flexible)
	if err != nil {
		return nil, err
	}
	if p.pos >= len(p.lines) || p.lines[p.pos].text != "response" {
		return nil, p.errf(start, "missing 'response' after the request fields")
	}
	p.pos++
	resp, err := p.fields(name+"Response", 1, a.Flexible)
	if err != nil {
		return nil, err
	}
	a.Request = &Message{Name: name + "Request", Struct: req}
	a.Response = &Message{Name: name + "Response", Struct: resp}
	if err := checkStructNames(a.Request); err != nil {
		return nil, fmt.Errorf("%s: %w", p.file, err)
	}
	if err := checkStructNames(a.Response); err != nil {
		return nil, fmt.Errorf("%s: %w", p.file, err)
	}
	return a, nil
}

func (p *parser) header(doc string) (*Header, error) {
	start := p.lines[p.pos]
	d, err := p.directives("fields")
	if err != nil {
		return nil, err
	}
	h := &Header{Name: d["header"], File: p.file, Doc: doc}
	if h.Name == "" {
		return nil, p.errf(start, "expected 'header Name'")
	}
	if h.Versions, h.Flexible, err = p.versions(start, d); err != nil {
		return nil, err
	}
	if p.pos >= len(p.lines) {
		return nil, p.errf(start, "missing 'fields'")
	}
	p.pos++
	if h.Fields, err = p.fields(h.Name, 1, h.Flexible); err != nil {
		return nil, err
	}
	return h, nil
}

func (p *parser) data(doc string) (*Data, error) {
	start := p.lines[p.pos]
	d, err := p.directives("fields")
	if err != nil {
		return nil, err
	}
	out := &Data{Name: d["data"], File: p.file, Doc: doc}
	if out.Name == "" || strings.ContainsRune(out.Name, ' ') || out.Name[0] < 'A' || out.Name[0] > 'Z' {
		return nil, p.errf(start, "expected 'data Name'")
	}
	if out.Versions, out.Flexible, err = p.versions(start, d); err != nil {
		return nil, err
	}
	for k, v := range d {
		switch k {
		case "data", "versions", "flexible":
		case "version-prefix":
			if v != "" {
				return nil, p.errf(start, "version-prefix takes no value")
			}
			out.VersionPrefix = true
		default:
			return nil, p.errf(start, "unknown directive %q", k)
		}
	}
	if p.pos >= len(p.lines) {
		return nil, p.errf(start, "missing 'fields'")
	}
	p.pos++
	if out.Fields, err = p.fields(out.Name, 1, out.Flexible); err != nil {
		return nil, err
	}
	if err := checkStructNames(&Message{Name: out.Name, Struct: out.Fields}); err != nil {
		return nil, fmt.Errorf("%s: %w", p.file, err)
	}
	return out, nil
}

// fields reads the field lines at the given indentation into a struct.
func (p *parser) fields(name string, indent int, flexible Range) (*Struct, error) {
	s := &Struct{Name: name}
	tags := map[int]string{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, p.errf(l, "unexpected indentation")
		}
		p.pos++
		f, err := p.field(l, flexible)
		if err != nil {
			return nil, err
		}
		if f.Type.Kind == StructArray || f.Type.Kind == StructValue {
			if f.Type.Struct, err = p.fields(f.Type.Name, indent+1, flexible); err != nil {
				return nil, err
			}
			if len(f.Type.Struct.Fields) == 0 {
				return nil, p.errf(l, "struct %s has no fields", f.Type.Name)
			}
		}
		for _, g := range s.Fields {
			if g.Name == f.Name {
				return nil, p.errf(l, "field %s given twice", f.Name)
			}
		}
		if f.Tag >= 0 {
			if other, dup := tags[f.Tag]; dup {
				return nil, p.errf(l, "tag %d used by %s and %s", f.Tag, other, f.Name)
			}
			tags[f.Tag] = f.Name
		}
		s.Fields = append(s.Fields, f)
	}
	return s, nil
}

func (p *parser) field(l line, flexible Range) (*Field, error) {
	text, doc, _ := strings.Cut(l.text, "//")
	words := strings.Fields(text)
	if len(words) < 3 {
		return nil, p.errf(l, "expected 'Name Type Versions [attributes]'")
	}
	f := &Field{Name: words[0], Tag: -1, Tagged: None, Nullable: None, Doc: strings.TrimSpace(doc), Line: l.n}
	if f.Doc == "" {
		f.Doc = l.doc
	}
	ty := words[1]
	switch elem, isArray := strings.CutPrefix(ty, "[]"); {
	case isArray && Primitives[elem]:
		f.Type = Type{Kind: Array, Name: elem}
	case isArray:
		f.Type = Type{Kind: StructArray, Name: elem}
	case Primitives[ty]:
		f.Type = Type{Kind: Primitive, Name: ty}
	default:
		f.Type = Type{Kind: StructValue, Name: ty}
	}
	if f.Type.Kind == StructArray || f.Type.Kind == StructValue {
		if f.Type.Name == "" || f.Type.Name[0] < 'A' || f.Type.Name[0] > 'Z' {
			return nil, p.errf(l, "unknown type %q", ty)
		}
	}
	var err error
	if f.Versions, err = ParseRange(words[2]); err != nil {
		return nil, p.errf(l, "%v", err)
	}
	for _, w := range words[3:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "nullable":
			if f.Nullable, err = ParseRange(v); err != nil {
				return nil, p.errf(l, "%v", err)
			}
			if !f.Type.Nullable() {
				return nil, p.errf(l, "type %s cannot be nullable", ty)
			}
		case "default":
			f.Default = v
		case "tag":
			if f.Tag, err = strconv.Atoi(v); err != nil || f.Tag < 0 {
				return nil, p.errf(l, "bad tag %q", v)
			}
		case "tagged":
			if f.Tagged, err = ParseRange(v); err != nil {
				return nil, p.errf(l, "%v", err)
			}
		case "flexible":
			if v != "none" {
				return nil, p.errf(l, "only flexible=none is supported")
			}
			f.FlexNone = true
		case "ignorable":
			f.Ignorable = true
		case "zerocopy":
			if f.Type.Kind != Primitive || f.Type.Name != "records" {
				return nil, p.errf(l, "zerocopy applies to records fields only")
			}
			f.ZeroCopy = true
		default:
			return nil, p.errf(l, "unknown attribute %q", w)
		}
	}
	if f.ZeroCopy && f.Tag >= 0 {
		return nil, p.errf(l, "a zerocopy field cannot be tagged")
	}
	if f.Tag >= 0 && f.Tagged.Empty() {
		f.Tagged = f.Versions
	}
	if !f.Tagged.Empty() {
		if f.Tag < 0 {
			return nil, p.errf(l, "tagged= without tag=")
		}
		if !flexible.Covers(f.Tagged) {
			return nil, p.errf(l, "tagged versions %s are not all flexible", f.Tagged)
		}
	}
	if strings.HasPrefix(f.Default, `"`) && (len(f.Default) < 2 || !strings.HasSuffix(f.Default, `"`)) {
		return nil, p.errf(l, "unterminated string default (defaults cannot hold spaces)")
	}
	return f, nil
}

// HasZeroCopy reports whether s or a struct nested in it has a zerocopy field.
func (s *Struct) HasZeroCopy() bool {
	for _, f := range s.Fields {
		if f.ZeroCopy || (f.Type.Struct != nil && f.Type.Struct.HasZeroCopy()) {
			return true
		}
	}
	return false
}

// checkStructNames makes sure every nested struct name in a message is unique, since each
// becomes one Go type.
func checkStructNames(m *Message) error {
	seen := map[string]bool{}
	var walk func(s *Struct) error
	walk = func(s *Struct) error {
		for _, f := range s.Fields {
			if f.Type.Struct == nil {
				continue
			}
			if seen[f.Type.Name] {
				return fmt.Errorf("%s: struct name %s used twice", m.Name, f.Type.Name)
			}
			seen[f.Type.Name] = true
			if err := walk(f.Type.Struct); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(m.Struct)
}
