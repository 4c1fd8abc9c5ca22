package schema_test

// TestSpecMatchesKafka compares our protocol spec (../messages/*.spool) with Apache Kafka 3.9's
// own message schemas, read at run time from shared/reference/kafka-3.9-messages or else from
// the kafka-clients jar of the local Maven repository (never copied into this repository). The comparison is restricted to the versions we implement: a difference
// that only concerns versions outside an API's `versions` range (or outside the versions of the
// struct holding a field) never reaches the wire and is not reported.

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/schema"
)

// kafkaSchemasRel is where the Kafka schemas live relative to an ancestor of the test's working
// directory (the monorepo is /work/main, the schemas /work/shared/reference/...).
const kafkaSchemasRel = "shared/reference/kafka-3.9-messages"

// intendedDifferences holds the deliberate departures of our spec from Kafka's, keyed by the
// issue key the comparator prints ("API.Side.Path.To.Field:aspect", "RequestHeader.Field:aspect",
// "API.Side:aspect" or "API.Side:order"), each with the reason it is intended. An entry that no
// longer matches a reported difference makes the test fail, so the table cannot go stale.
var intendedDifferences = map[string]string{}

// TestSpecMatchesKafka checks every API, both headers and every data structure of our spec
// against Kafka 3.9.
func TestSpecMatchesKafka(t *testing.T) {
	kdir := kafkaSchemaDir(t)
	spec, err := schema.LoadDir("../messages")
	if err != nil {
		t.Fatalf("loading our spec: %v", err)
	}
	if len(spec.APIs) == 0 {
		t.Fatal("our spec has no APIs")
	}
	used := map[string]bool{}
	total := 0
	report := func(t *testing.T, what string, issues []issue, compared int) {
		t.Helper()
		if compared == 0 {
			t.Errorf("%s: no field was compared; is the comparison vacuous?", what)
		}
		total += compared
		for _, is := range issues {
			if reason, ok := intendedDifferences[is.key]; ok {
				used[is.key] = true
				t.Logf("intended difference %s (%s)", is.msg, reason)
				continue
			}
			t.Error(is.msg)
		}
	}
	for _, a := range spec.APIs {
		t.Run(a.Name, func(t *testing.T) {
			req, err := loadKafkaMessage(filepath.Join(kdir, a.Name+"Request.json"))
			if err != nil {
				t.Fatalf("%s (key %d, %s): %v", a.Name, a.Key, a.File, err)
			}
			resp, err := loadKafkaMessage(filepath.Join(kdir, a.Name+"Response.json"))
			if err != nil {
				t.Fatalf("%s (key %d, %s): %v", a.Name, a.Key, a.File, err)
			}
			issues, n := compareAPI(a, req, resp)
			report(t, a.Name, issues, n)
		})
	}
	for _, name := range []string{"RequestHeader", "ResponseHeader"} {
		t.Run(name, func(t *testing.T) {
			h := spec.Header(name)
			if h == nil {
				t.Fatalf("our spec has no header %s", name)
			}
			k, err := loadKafkaMessage(filepath.Join(kdir, name+".json"))
			if err != nil {
				t.Fatalf("%s (%s): %v", name, h.File, err)
			}
			issues, n := compareHeader(h, k)
			report(t, name, issues, n)
		})
	}
	for _, h := range spec.Headers {
		if h.Name != "RequestHeader" && h.Name != "ResponseHeader" {
			t.Errorf("%s (%s): unexpected header; Kafka has only RequestHeader and ResponseHeader", h.Name, h.File)
		}
	}
	if len(spec.Data) == 0 {
		t.Error("our spec has no data structures; the consumer protocol's are expected")
	}
	for _, d := range spec.Data {
		t.Run(d.Name, func(t *testing.T) {
			k, err := loadKafkaMessage(filepath.Join(kdir, d.Name+".json"))
			if err != nil {
				t.Fatalf("%s (%s): %v", d.Name, d.File, err)
			}
			issues, n := compareData(d, k)
			report(t, d.Name, issues, n)
		})
	}
	var stale []string
	for k := range intendedDifferences {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("intendedDifferences[%q] matches no difference any more; remove it", k)
	}
	t.Logf("compared %d APIs, %d headers and %d data structures (%d fields) with %s", len(spec.APIs), len(spec.Headers), len(spec.Data), total, kdir)
}

// kafkaSchemaDir finds the Kafka schema folder: $SPOOL_KAFKA_SCHEMAS, else
// shared/reference/kafka-3.9-messages under the working directory or one of its ancestors, else
// the schemas inside the kafka-clients jar (kafkaSchemasFromJar), so that a fresh clone runs the
// comparison too. SPOOL_KAFKA_SCHEMAS=jar goes to the jar directly. Only when all of these fail
// is the test skipped, and under CI=true it fails instead.
func kafkaSchemaDir(t testing.TB) string {
	t.Helper()
	valid := func(dir string) bool {
		st, err := os.Stat(filepath.Join(dir, "RequestHeader.json"))
		return err == nil && st.Mode().IsRegular()
	}
	env := os.Getenv("SPOOL_KAFKA_SCHEMAS")
	if env != "" && env != "jar" {
		if !valid(env) {
			t.Fatalf("SPOOL_KAFKA_SCHEMAS=%q does not hold Kafka's message schemas (no RequestHeader.json)", env)
		}
		return env
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for dir := wd; env == ""; {
		if cand := filepath.Join(dir, filepath.FromSlash(kafkaSchemasRel)); valid(cand) {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	dir, err := kafkaSchemasFromJar(t)
	if err == nil && valid(dir) {
		return dir
	}
	msg := fmt.Sprintf("Kafka 3.9 message schemas not found: no %s in %s or any ancestor, SPOOL_KAFKA_SCHEMAS is unset, and the kafka-clients jar gave none (%v)", kafkaSchemasRel, wd, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a missing dependency must fail, not skip)")
	}
	t.Skip(msg)
	return ""
}

// kafkaClientsVersion is the kafka-clients jar whose common/message/*.json the comparison
// reads when shared/reference is not at hand: the version make bench-compare runs. Its schemas
// differ from the 3.9.0 ones of shared/reference only in deprecatedVersions, which the
// comparison does not read.
const kafkaClientsVersion = "3.9.2"

// kafkaSchemasFromJar extracts Kafka's message schemas from the kafka-clients jar in the local
// Maven repository, fetching the jar with mvn (as make bench-compare fetches Kafka) when it is
// not there yet, into a temporary folder.
func kafkaSchemasFromJar(t testing.TB) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	v := kafkaClientsVersion
	repo := filepath.Join(home, ".m2", "repository")
	jar := filepath.Join(repo, "org", "apache", "kafka", "kafka-clients", v, "kafka-clients-"+v+".jar")
	if _, err := os.Stat(jar); err != nil {
		mvn, lerr := exec.LookPath("mvn")
		if lerr != nil {
			return "", fmt.Errorf("no %s, and no mvn to fetch it", jar)
		}
		// The repository is named: Maven's own default follows the account's home directory,
		// not $HOME, so without it the jar can land where this test does not look.
		out, err := exec.Command(mvn, "-q", "-B", "-Dmaven.repo.local="+repo, "dependency:get",
			"-Dartifact=org.apache.kafka:kafka-clients:"+v, "-Dtransitive=false").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("mvn dependency:get kafka-clients %s: %v\n%s", v, err, out)
		}
	}
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	dir := t.TempDir()
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, "common/message/")
		if !ok || !strings.HasSuffix(name, ".json") || strings.Contains(name, "/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return "", fmt.Errorf("%s in %s: %w", f.Name, jar, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return "", fmt.Errorf("%s in %s: %w", f.Name, jar, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// ---- Kafka's schema model ----

type kafkaMessage struct {
	APIKey           *int16         `json:"apiKey"`
	Type             string         `json:"type"`
	Name             string         `json:"name"`
	ValidVersions    string         `json:"validVersions"`
	LatestUnstable   bool           `json:"latestVersionUnstable"`
	FlexibleVersions string         `json:"flexibleVersions"`
	Fields           []*kafkaField  `json:"fields"`
	CommonStructs    []*kafkaStruct `json:"commonStructs"`

	file            string
	valid, flexible schema.Range
}

type kafkaStruct struct {
	Name     string        `json:"name"`
	Versions string        `json:"versions"`
	Fields   []*kafkaField `json:"fields"`
}

type kafkaField struct {
	Name             string        `json:"name"`
	Type             string        `json:"type"`
	Versions         string        `json:"versions"`
	NullableVersions string        `json:"nullableVersions"`
	TaggedVersions   string        `json:"taggedVersions"`
	Tag              *int          `json:"tag"`
	FlexibleVersions string        `json:"flexibleVersions"`
	Default          any           `json:"default"` // string, json.Number or bool
	Ignorable        bool          `json:"ignorable"`
	Fields           []*kafkaField `json:"fields"`

	versions, nullable, tagged schema.Range
	kind                       schema.Kind
	elem                       string // primitive name for Primitive and Array
	def                        string // default as a string, "" when absent
	hasDef                     bool
}

// stripJSONComments removes // and /* */ comments outside strings (Kafka reads its schemas with
// comments allowed).
func stripJSONComments(b []byte) []byte {
	var out bytes.Buffer
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out.WriteByte(c)
			switch c {
			case '\\':
				if i+1 < len(b) {
					i++
					out.WriteByte(b[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out.WriteByte(c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				i = len(b)
			} else {
				i += 2 + end + 1
			}
			out.WriteByte(' ')
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

func loadKafkaMessage(path string) (*kafkaMessage, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("Kafka has no schema %s", filepath.Base(path))
	}
	if err != nil {
		return nil, err
	}
	return parseKafkaMessage(filepath.Base(path), b)
}

func parseKafkaMessage(file string, b []byte) (*kafkaMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(stripJSONComments(b)))
	dec.UseNumber()
	m := &kafkaMessage{file: file}
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var err error
	if m.valid, err = schema.ParseRange(m.ValidVersions); err != nil {
		return nil, fmt.Errorf("%s: validVersions: %w", file, err)
	}
	if m.flexible, err = schema.ParseRange(m.FlexibleVersions); err != nil {
		return nil, fmt.Errorf("%s: flexibleVersions: %w", file, err)
	}
	common := map[string]*kafkaStruct{}
	for _, s := range m.CommonStructs {
		common[s.Name] = s
	}
	var resolve func(path string, fields []*kafkaField, depth int) error
	resolve = func(path string, fields []*kafkaField, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%s: structs nested too deeply at %s", file, path)
		}
		for _, f := range fields {
			p := path + "." + f.Name
			if err := f.resolve(); err != nil {
				return fmt.Errorf("%s: %s: %w", file, p, err)
			}
			if f.kind != schema.StructArray && f.kind != schema.StructValue {
				if len(f.Fields) > 0 {
					return fmt.Errorf("%s: %s: type %s has nested fields", file, p, f.Type)
				}
				continue
			}
			if len(f.Fields) == 0 {
				s, ok := common[f.elem]
				if !ok {
					return fmt.Errorf("%s: %s: struct %s has no fields and is no common struct", file, p, f.elem)
				}
				f.Fields = s.Fields
			}
			if err := resolve(p, f.Fields, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := resolve(strings.TrimSuffix(file, ".json"), m.Fields, 0); err != nil {
		return nil, err
	}
	return m, nil
}

func (f *kafkaField) resolve() error {
	var err error
	if f.Versions == "" {
		return errors.New("no versions")
	}
	if f.versions, err = schema.ParseRange(f.Versions); err != nil {
		return err
	}
	f.nullable, f.tagged = schema.None, schema.None
	if f.NullableVersions != "" {
		if f.nullable, err = schema.ParseRange(f.NullableVersions); err != nil {
			return err
		}
	}
	if f.TaggedVersions != "" {
		if f.tagged, err = schema.ParseRange(f.TaggedVersions); err != nil {
			return err
		}
	}
	elem, isArray := strings.CutPrefix(f.Type, "[]")
	switch {
	case isArray && schema.Primitives[elem]:
		f.kind = schema.Array
	case isArray:
		f.kind = schema.StructArray
	case schema.Primitives[elem]:
		f.kind = schema.Primitive
	default:
		f.kind = schema.StructValue
	}
	f.elem = elem
	switch v := f.Default.(type) {
	case nil:
	case string:
		f.def, f.hasDef = v, true
	case json.Number:
		f.def, f.hasDef = v.String(), true
	case bool:
		f.def, f.hasDef = strconv.FormatBool(v), true
	default:
		return fmt.Errorf("unsupported default %v", v)
	}
	return nil
}

func (f *kafkaField) tag() int {
	if f.Tag == nil {
		return -1
	}
	return *f.Tag
}

// ---- The comparator ----

// issue is one difference: key identifies it (for intendedDifferences), msg explains it.
type issue struct{ key, msg string }

type comparer struct {
	ourFile, kafkaFile string
	issues             []issue
	compared           int // fields present on both sides and compared
}

// add records a difference at where ("API.Side.Path") in aspect, with our value and Kafka's.
func (c *comparer) add(where, aspect, ours, kafka string, line int) {
	loc := c.ourFile
	if line > 0 {
		loc = fmt.Sprintf("%s:%d", c.ourFile, line)
	}
	c.issues = append(c.issues, issue{
		key: where + ":" + aspect,
		msg: fmt.Sprintf("%s: %s differ: ours %s, Kafka %s (ours %s, Kafka %s)", where, aspect, ours, kafka, loc, c.kafkaFile),
	})
}

// compareAPI compares both sides of an API with Kafka's request and response schemas. It
// returns the differences and the number of fields compared.
func compareAPI(a *schema.API, req, resp *kafkaMessage) ([]issue, int) {
	var all []issue
	compared := 0
	for _, side := range []struct {
		name string
		m    *schema.Message
		k    *kafkaMessage
	}{{"Request", a.Request, req}, {"Response", a.Response, resp}} {
		c := &comparer{ourFile: a.File, kafkaFile: side.k.file}
		where := a.Name + "." + side.name
		c.top(where, strings.ToLower(side.name), side.m.Name, a.Versions, a.Flexible, side.k)
		if side.k.APIKey == nil {
			c.add(where, "apiKey", strconv.Itoa(int(a.Key)), "none", 0)
		} else if *side.k.APIKey != a.Key {
			c.add(where, "apiKey", strconv.Itoa(int(a.Key)), strconv.Itoa(int(*side.k.APIKey)), 0)
		}
		c.fields(where, a.Versions, side.m.Struct.Fields, side.k.Fields)
		all = append(all, c.issues...)
		compared += c.compared
	}
	return all, compared
}

// compareHeader compares a header with Kafka's schema for it.
func compareHeader(h *schema.Header, k *kafkaMessage) ([]issue, int) {
	c := &comparer{ourFile: h.File, kafkaFile: k.file}
	c.top(h.Name, "header", h.Name, h.Versions, h.Flexible, k)
	if k.APIKey != nil {
		c.add(h.Name, "apiKey", "none", strconv.Itoa(int(*k.APIKey)), 0)
	}
	c.fields(h.Name, h.Versions, h.Fields.Fields, k.Fields)
	return c.issues, c.compared
}

// compareData compares a data structure with Kafka's schema for it. Kafka's schema does not
// say whether the bytes carry a version prefix (its users add one), so VersionPrefix is not
// compared.
func compareData(d *schema.Data, k *kafkaMessage) ([]issue, int) {
	c := &comparer{ourFile: d.File, kafkaFile: k.file}
	c.top(d.Name, "data", d.Name, d.Versions, d.Flexible, k)
	if k.APIKey != nil {
		c.add(d.Name, "apiKey", "none", strconv.Itoa(int(*k.APIKey)), 0)
	}
	c.fields(d.Name, d.Versions, d.Fields.Fields, k.Fields)
	return c.issues, c.compared
}

// top compares the message-level attributes.
func (c *comparer) top(where, kind, name string, versions, flexible schema.Range, k *kafkaMessage) {
	if k.Type != kind {
		c.add(where, "type", kind, strconv.Quote(k.Type), 0)
	}
	if k.Name != name {
		c.add(where, "name", name, strconv.Quote(k.Name), 0)
	}
	if !k.valid.Covers(versions) {
		c.add(where, "validVersions", "versions "+versions.String(), "validVersions "+k.ValidVersions+" (ours must lie within Kafka's)", 0)
	}
	if k.LatestUnstable && versions.Has(k.valid.Hi) {
		c.add(where, "latestVersionUnstable", "versions "+versions.String(),
			fmt.Sprintf("marks its latest version %d unstable (not for production use)", k.valid.Hi), 0)
	}
	if of, kf := flexible.Intersect(versions), k.flexible.Intersect(versions); of != kf {
		c.add(where, "flexibleVersions", fmt.Sprintf("%s (%s in window %s)", flexible, of, versions),
			fmt.Sprintf("%s (%s in window %s)", k.FlexibleVersions, kf, versions), 0)
	}
}

// fields compares two field lists within the versions win.
func (c *comparer) fields(where string, win schema.Range, ours []*schema.Field, theirs []*kafkaField) {
	ourBy := map[string]*schema.Field{}
	for _, f := range ours {
		ourBy[f.Name] = f
	}
	theirBy := map[string]*kafkaField{}
	for _, f := range theirs {
		theirBy[f.Name] = f
	}
	// relevant: the field exists in win on at least one side.
	relevant := func(name string) bool {
		o, k := ourBy[name], theirBy[name]
		return (o != nil && !o.Versions.Intersect(win).Empty()) || (k != nil && !k.versions.Intersect(win).Empty())
	}
	for _, k := range theirs {
		if !relevant(k.Name) {
			continue
		}
		path := where + "." + k.Name
		o := ourBy[k.Name]
		if o == nil {
			c.add(path, "presence", "missing",
				fmt.Sprintf("has %s %s versions %s (%s in window %s)", k.Name, k.Type, k.Versions, k.versions.Intersect(win), win), 0)
			continue
		}
		c.field(path, win, o, k)
	}
	for _, o := range ours {
		if theirBy[o.Name] == nil && relevant(o.Name) {
			c.add(where+"."+o.Name, "presence",
				fmt.Sprintf("has %s %s versions %s (%s in window %s)", o.Name, o.Type.Spelling(), o.Versions, o.Versions.Intersect(win), win),
				"has no such field", o.Line)
		}
	}
	// Order: the fields both sides have, in each side's order.
	var ourOrder, theirOrder []string
	for _, o := range ours {
		if theirBy[o.Name] != nil && relevant(o.Name) {
			ourOrder = append(ourOrder, o.Name)
		}
	}
	for _, k := range theirs {
		if ourBy[k.Name] != nil && relevant(k.Name) {
			theirOrder = append(theirOrder, k.Name)
		}
	}
	if !slices.Equal(ourOrder, theirOrder) {
		c.add(where, "order", "["+strings.Join(ourOrder, " ")+"]", "["+strings.Join(theirOrder, " ")+"]", 0)
	}
}

// field compares one field present on both sides.
func (c *comparer) field(path string, win schema.Range, o *schema.Field, k *kafkaField) {
	c.compared++
	ow, kw := o.Versions.Intersect(win), k.versions.Intersect(win)
	if ow != kw {
		c.add(path, "versions", fmt.Sprintf("%s (%s in window %s)", o.Versions, ow, win),
			fmt.Sprintf("%s (%s in window %s)", k.Versions, kw, win), o.Line)
	}
	sameKind := o.Type.Kind == k.kind
	if !sameKind || ((o.Type.Kind == schema.Primitive || o.Type.Kind == schema.Array) && o.Type.Name != k.elem) {
		c.add(path, "type", fmt.Sprintf("%s (%s)", o.Type.Spelling(), kindName(o.Type.Kind)),
			fmt.Sprintf("%s (%s)", k.Type, kindName(k.kind)), o.Line)
	}
	// Nullable and tagged versions only matter where the field exists.
	if on, kn := o.Nullable.Intersect(ow), k.nullable.Intersect(kw); on != kn {
		c.add(path, "nullableVersions", fmt.Sprintf("%s (%s where present in window)", o.Nullable, on),
			fmt.Sprintf("%s (%s where present in window)", orNone(k.NullableVersions), kn), o.Line)
	}
	ot, kt := o.Tagged.Intersect(ow), k.tagged.Intersect(kw)
	if ot != kt {
		c.add(path, "taggedVersions", fmt.Sprintf("%s (%s where present in window)", o.Tagged, ot),
			fmt.Sprintf("%s (%s where present in window)", orNone(k.TaggedVersions), kt), o.Line)
	}
	if (!ot.Empty() || !kt.Empty()) && o.Tag != k.tag() {
		c.add(path, "tag", tagString(o.Tag), tagString(k.tag()), o.Line)
	}
	switch k.FlexibleVersions {
	case "", "none":
		if o.FlexNone != (k.FlexibleVersions == "none") {
			c.add(path, "flexibleVersions", flexString(o.FlexNone), flexString(k.FlexibleVersions == "none"), o.Line)
		}
	default:
		c.add(path, "flexibleVersions", flexString(o.FlexNone), strconv.Quote(k.FlexibleVersions)+" (only \"none\" is supported)", o.Line)
	}
	if od, kd := canonDefault(o.Type, o.Default, o.Default != "", true), canonDefault(o.Type, k.def, k.hasDef, false); od != kd {
		ours, kafka := "absent", "absent"
		if o.Default != "" {
			ours = o.Default
		}
		if k.hasDef {
			kafka = strconv.Quote(k.def)
		}
		c.add(path, "default", fmt.Sprintf("%s (%s)", ours, od), fmt.Sprintf("%s (%s)", kafka, kd), o.Line)
	}
	if o.Ignorable != k.Ignorable {
		c.add(path, "ignorable", strconv.FormatBool(o.Ignorable), strconv.FormatBool(k.Ignorable), o.Line)
	}
	if sameKind && o.Type.Struct != nil {
		// Nested fields only matter where the struct itself exists.
		c.fields(path, ow.Intersect(kw), o.Type.Struct.Fields, k.Fields)
	}
}

// canonDefault puts a default into a canonical form for its type: numbers numerically (hex
// included), booleans in lower case, strings without our quotes, null as null, and an absent
// default as the value it stands for (zero, false, the empty string, or "empty" for the rest).
func canonDefault(t schema.Type, raw string, present, ours bool) string {
	quoted := false
	if ours && len(raw) >= 2 && strings.HasPrefix(raw, `"`) && strings.HasSuffix(raw, `"`) {
		raw, quoted = raw[1:len(raw)-1], true
	}
	if present && !quoted && strings.EqualFold(raw, "null") {
		return "null"
	}
	name := t.Name
	if t.Kind != schema.Primitive {
		name = ""
	}
	switch name {
	case "int8", "int16", "uint16", "int32", "int64", "float64":
		if !present {
			return "number 0"
		}
		if n, err := strconv.ParseInt(raw, 0, 64); err == nil {
			return "number " + strconv.FormatInt(n, 10)
		}
		if n, err := strconv.ParseUint(raw, 0, 64); err == nil {
			return "number " + strconv.FormatUint(n, 10)
		}
		if x, err := strconv.ParseFloat(raw, 64); err == nil {
			if x == float64(int64(x)) {
				return "number " + strconv.FormatInt(int64(x), 10)
			}
			return "number " + strconv.FormatFloat(x, 'g', -1, 64)
		}
		return "unparsable " + strconv.Quote(raw)
	case "bool":
		if !present {
			return "false"
		}
		if b := strings.ToLower(raw); b == "true" || b == "false" {
			return b
		}
		return "unparsable " + strconv.Quote(raw)
	case "string":
		return "string " + strconv.Quote(raw)
	}
	if !present {
		return "empty"
	}
	return "literal " + strconv.Quote(raw)
}

func kindName(k schema.Kind) string {
	switch k {
	case schema.Primitive:
		return "primitive"
	case schema.Array:
		return "array of primitives"
	case schema.StructArray:
		return "array of structs"
	case schema.StructValue:
		return "struct"
	}
	return fmt.Sprintf("kind %d", int(k))
}

func tagString(tag int) string {
	if tag < 0 {
		return "none"
	}
	return strconv.Itoa(tag)
}

func flexString(none bool) string {
	if none {
		return `"none"`
	}
	return "unset"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ---- Tests of the comparator itself ----

// The synthetic API and schemas below are written for these tests; they describe no real API.
const widgetSpool = `# Widget: a synthetic API for the comparator's tests.
api 7 Widget
versions 0-3
flexible 2+

request
  Name string 0+
  Count int32 1+ default=0x10 ignorable
  Items []Item 0+ nullable=2+
    Id int64 0+
    Labels []string 1+
    Flag bool 2+ default=TRUE
  Note string 2+ nullable=2+ default=null tag=0
  Title string 0+ default="x"

response
  ErrorCode int16 0+ default=0
  Pos Position 2+ tag=1
    Epoch int32 0+ default=-1

header WidgetHeader
versions 0-2
flexible 2+

fields
  Id int32 0+
  Client string 1+ nullable=1+ flexible=none

data WidgetData
versions 0-1
flexible none
version-prefix

fields
  Names []string 0+
  Gen int32 1+ default=-1
`

var widgetKafka = map[string]string{
	"WidgetRequest.json": `// Synthetic, see http://example.invalid/widget
{
  "apiKey": 7, "type": "request", "name": "WidgetRequest",
  "validVersions": "0-5", "flexibleVersions": "2+",
  "fields": [
    { "name": "Name", "type": "string", "versions": "0+", "about": "not // a comment" },
    { "name": "Count", "type": "int32", "versions": "1+", "default": 16, "ignorable": true }, /* a
      block comment */
    { "name": "Items", "type": "[]Item", "versions": "0+", "nullableVersions": "2+", "fields": [
      { "name": "Id", "type": "int64", "versions": "0+" },
      { "name": "Labels", "type": "[]string", "versions": "1+" },
      { "name": "Flag", "type": "bool", "versions": "2+", "default": "true" },
      // Outside the window: never compared.
      { "name": "Gone", "type": "int8", "versions": "4+" }
    ]},
    { "name": "Note", "type": "string", "versions": "2+", "nullableVersions": "0+", "default": "null",
      "tag": 0, "taggedVersions": "2+" },
    { "name": "Title", "type": "string", "versions": "0-7", "default": "x" },
    { "name": "Future", "type": "int64", "versions": "4+" }
  ]
}`,
	"WidgetResponse.json": `{
  "apiKey": 7, "type": "response", "name": "WidgetResponse",
  "validVersions": "0-5", "latestVersionUnstable": true, "flexibleVersions": "2+",
  "fields": [
    { "name": "ErrorCode", "type": "int16", "versions": "0+" },
    { "name": "Pos", "type": "Position", "versions": "2+", "taggedVersions": "2+", "tag": 1 }
  ],
  "commonStructs": [
    { "name": "Position", "versions": "0+", "fields": [
      { "name": "Epoch", "type": "int32", "versions": "0+", "default": "-1" }
    ]}
  ]
}`,
	"WidgetHeader.json": `{
  "type": "header", "name": "WidgetHeader", "validVersions": "0-2", "flexibleVersions": "2+",
  "fields": [
    { "name": "Id", "type": "int32", "versions": "0+" },
    { "name": "Client", "type": "string", "versions": "1+", "nullableVersions": "1+", "flexibleVersions": "none" }
  ]
}`,
	"WidgetData.json": `{
  "type": "data", "name": "WidgetData", "validVersions": "0-2", "flexibleVersions": "none",
  "fields": [
    { "name": "Names", "type": "[]string", "versions": "0+" },
    { "name": "Gen", "type": "int32", "versions": "1+", "default": "-1" }
  ]
}`,
}

// mutation alters a freshly loaded spec; want is the exact set of issue keys it must cause
// (beyond those of the unaltered spec).
type mutation struct {
	name   string
	mutate func(t *testing.T, s *schema.Spec)
	want   []string
}

// compareSpec compares every API, header and data structure of spec, loading Kafka's schemas
// with load.
func compareSpec(t *testing.T, spec *schema.Spec, load func(file string) (*kafkaMessage, error)) []issue {
	t.Helper()
	var all []issue
	for _, a := range spec.APIs {
		req, err := load(a.Name + "Request.json")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := load(a.Name + "Response.json")
		if err != nil {
			t.Fatal(err)
		}
		issues, _ := compareAPI(a, req, resp)
		all = append(all, issues...)
	}
	for _, h := range spec.Headers {
		k, err := load(h.Name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		issues, _ := compareHeader(h, k)
		all = append(all, issues...)
	}
	for _, d := range spec.Data {
		k, err := load(d.Name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		issues, _ := compareData(d, k)
		all = append(all, issues...)
	}
	return all
}

// runMutations checks that each mutation makes the comparator report exactly its keys (or, with
// atLeast, at least them), each message naming the place and both sides.
func runMutations(t *testing.T, load func(*testing.T) *schema.Spec, kafka func(string) (*kafkaMessage, error), cases []mutation, atLeast bool) {
	t.Helper()
	baseline := map[string]bool{}
	for _, is := range compareSpec(t, load(t), kafka) {
		baseline[is.key] = true
	}
	for _, m := range cases {
		t.Run(m.name, func(t *testing.T) {
			spec := load(t)
			m.mutate(t, spec)
			got := map[string]string{}
			for _, is := range compareSpec(t, spec, kafka) {
				if !baseline[is.key] {
					got[is.key] = is.msg
				}
			}
			for _, k := range m.want {
				msg, ok := got[k]
				if !ok {
					t.Errorf("difference %s not reported; got %v", k, slices.Sorted(mapsKeys(got)))
					continue
				}
				where, _, _ := strings.Cut(k, ":")
				if !strings.HasPrefix(msg, where+": ") || !strings.Contains(msg, "ours ") || !strings.Contains(msg, "Kafka ") {
					t.Errorf("message for %s does not name the place and both values: %s", k, msg)
				}
				t.Logf("reported: %s", msg)
			}
			if !atLeast {
				for k, msg := range got {
					if !slices.Contains(m.want, k) {
						t.Errorf("unexpected difference reported: %s", msg)
					}
				}
			}
		})
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func findAPI(t *testing.T, s *schema.Spec, name string) *schema.API {
	t.Helper()
	for _, a := range s.APIs {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no API %s", name)
	return nil
}

// findField follows a path of field names from a struct.
func findField(t *testing.T, s *schema.Struct, path ...string) *schema.Field {
	t.Helper()
	var f *schema.Field
	for i, name := range path {
		f = nil
		for _, g := range s.Fields {
			if g.Name == name {
				f = g
			}
		}
		if f == nil {
			t.Fatalf("no field %s in %s", strings.Join(path[:i+1], "."), s.Name)
		}
		s = f.Type.Struct
	}
	return f
}

func swapFields(t *testing.T, s *schema.Struct, a, b string) {
	t.Helper()
	i := slices.IndexFunc(s.Fields, func(f *schema.Field) bool { return f.Name == a })
	j := slices.IndexFunc(s.Fields, func(f *schema.Field) bool { return f.Name == b })
	if i < 0 || j < 0 {
		t.Fatalf("no fields %s and %s in %s", a, b, s.Name)
	}
	s.Fields[i], s.Fields[j] = s.Fields[j], s.Fields[i]
}

func removeField(t *testing.T, s *schema.Struct, name string) {
	t.Helper()
	n := len(s.Fields)
	s.Fields = slices.DeleteFunc(s.Fields, func(f *schema.Field) bool { return f.Name == name })
	if len(s.Fields) == n {
		t.Fatalf("no field %s in %s", name, s.Name)
	}
}

// TestCompareCatchesDifferences proves on a synthetic API that the comparator reports each kind
// of difference, and that it treats equivalent spellings and out-of-window versions as equal. It
// needs no Kafka files.
func TestCompareCatchesDifferences(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widget.spool"), []byte(widgetSpool), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T) *schema.Spec {
		s, err := schema.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kafka := func(file string) (*kafkaMessage, error) {
		text, ok := widgetKafka[file]
		if !ok {
			return nil, fmt.Errorf("no synthetic schema %s", file)
		}
		return parseKafkaMessage(file, []byte(text))
	}
	if issues := compareSpec(t, load(t), kafka); len(issues) != 0 {
		for _, is := range issues {
			t.Errorf("unaltered synthetic spec: %s", is.msg)
		}
		t.FailNow()
	}
	req := func(t *testing.T, s *schema.Spec) *schema.Struct { return findAPI(t, s, "Widget").Request.Struct }
	resp := func(t *testing.T, s *schema.Spec) *schema.Struct { return findAPI(t, s, "Widget").Response.Struct }
	hdr := func(t *testing.T, s *schema.Spec) *schema.Header {
		h := s.Header("WidgetHeader")
		if h == nil {
			t.Fatal("no header WidgetHeader")
		}
		return h
	}
	data := func(t *testing.T, s *schema.Spec) *schema.Data {
		d := s.DataType("WidgetData")
		if d == nil {
			t.Fatal("no data WidgetData")
		}
		return d
	}
	open := func(lo int16) schema.Range { return schema.Range{Lo: lo, Hi: schema.Open} }
	cases := []mutation{
		// Equivalent changes: nothing to report.
		{"equal/decimal default", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Count").Default = "16" }, nil},
		{"equal/unquoted string default", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Title").Default = "x" }, nil},
		{"equal/bool default case", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items", "Flag").Default = "true" }, nil},
		{"equal/zero default spelled out", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Name").Default = `""` }, nil},
		{"equal/versions beyond window", func(t *testing.T, s *schema.Spec) {
			findField(t, req(t, s), "Name").Versions = schema.Range{Lo: 0, Hi: 3}
		}, nil},
		{"equal/nested versions outside struct's", func(t *testing.T, s *schema.Spec) {
			findField(t, resp(t, s), "Pos", "Epoch").Versions = open(2)
		}, nil},

		// Message level.
		{"apiKey", func(t *testing.T, s *schema.Spec) { findAPI(t, s, "Widget").Key = 8 },
			[]string{"Widget.Request:apiKey", "Widget.Response:apiKey"}},
		{"valid versions", func(t *testing.T, s *schema.Spec) { findAPI(t, s, "Widget").Versions = schema.Range{Lo: 0, Hi: 6} },
			// The wider window also brings in Kafka's 4+ fields.
			[]string{"Widget.Request:validVersions", "Widget.Response:validVersions", "Widget.Response:latestVersionUnstable",
				"Widget.Request.Future:presence", "Widget.Request.Items.Gone:presence"}},
		{"unstable version", func(t *testing.T, s *schema.Spec) { findAPI(t, s, "Widget").Versions = schema.Range{Lo: 0, Hi: 5} },
			[]string{"Widget.Response:latestVersionUnstable", "Widget.Request.Future:presence", "Widget.Request.Items.Gone:presence"}},
		{"flexible versions", func(t *testing.T, s *schema.Spec) { findAPI(t, s, "Widget").Flexible = open(3) },
			[]string{"Widget.Request:flexibleVersions", "Widget.Response:flexibleVersions"}},
		{"header versions", func(t *testing.T, s *schema.Spec) { hdr(t, s).Versions = schema.Range{Lo: 0, Hi: 3} },
			[]string{"WidgetHeader:validVersions"}},
		{"data versions", func(t *testing.T, s *schema.Spec) { data(t, s).Versions = schema.Range{Lo: 0, Hi: 3} },
			[]string{"WidgetData:validVersions"}},
		{"data flexible", func(t *testing.T, s *schema.Spec) { data(t, s).Flexible = open(1) },
			[]string{"WidgetData:flexibleVersions"}},
		{"data prefix is ours alone", func(t *testing.T, s *schema.Spec) { data(t, s).VersionPrefix = false }, nil},

		// Field level.
		{"versions", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Count").Versions = open(2) },
			[]string{"Widget.Request.Count:versions"}},
		{"nested versions", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items", "Id").Versions = open(1) },
			[]string{"Widget.Request.Items.Id:versions"}},
		{"type", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Count").Type.Name = "int64" },
			[]string{"Widget.Request.Count:type"}},
		{"array element type", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items", "Labels").Type.Name = "bytes" },
			[]string{"Widget.Request.Items.Labels:type"}},
		{"primitive to array", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Name").Type.Kind = schema.Array },
			[]string{"Widget.Request.Name:type"}},
		{"struct array to struct", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items").Type.Kind = schema.StructValue },
			[]string{"Widget.Request.Items:type"}},
		{"struct name is free", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items").Type.Name = "Thing" }, nil},
		{"order", func(t *testing.T, s *schema.Spec) { swapFields(t, req(t, s), "Name", "Count") },
			[]string{"Widget.Request:order"}},
		{"nested order", func(t *testing.T, s *schema.Spec) {
			swapFields(t, findField(t, req(t, s), "Items").Type.Struct, "Id", "Flag")
		},
			[]string{"Widget.Request.Items:order"}},
		{"missing field", func(t *testing.T, s *schema.Spec) { removeField(t, req(t, s), "Note") },
			[]string{"Widget.Request.Note:presence"}},
		{"missing nested field", func(t *testing.T, s *schema.Spec) {
			removeField(t, findField(t, resp(t, s), "Pos").Type.Struct, "Epoch")
		},
			[]string{"Widget.Response.Pos.Epoch:presence"}},
		{"extra field", func(t *testing.T, s *schema.Spec) {
			r := req(t, s)
			r.Fields = append(r.Fields, &schema.Field{Name: "Extra", Type: schema.Type{Kind: schema.Primitive, Name: "int8"},
				Versions: open(3), Nullable: schema.None, Tag: -1, Tagged: schema.None})
		}, []string{"Widget.Request.Extra:presence"}},
		{"nullable versions", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items").Nullable = schema.None },
			[]string{"Widget.Request.Items:nullableVersions"}},
		{"default number", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Count").Default = "17" },
			[]string{"Widget.Request.Count:default"}},
		{"default string", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Title").Default = `"y"` },
			[]string{"Widget.Request.Title:default"}},
		{"default null dropped", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Note").Default = "" },
			[]string{"Widget.Request.Note:default"}},
		{"default bool", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Items", "Flag").Default = "false" },
			[]string{"Widget.Request.Items.Flag:default"}},
		{"default zero vs -1", func(t *testing.T, s *schema.Spec) { findField(t, resp(t, s), "Pos", "Epoch").Default = "" },
			[]string{"Widget.Response.Pos.Epoch:default"}},
		{"tag", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Note").Tag = 1 },
			[]string{"Widget.Request.Note:tag"}},
		{"untagged", func(t *testing.T, s *schema.Spec) {
			f := findField(t, resp(t, s), "Pos")
			f.Tag, f.Tagged = -1, schema.None
		}, []string{"Widget.Response.Pos:taggedVersions", "Widget.Response.Pos:tag"}},
		{"tagged versions", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Note").Tagged = open(3) },
			[]string{"Widget.Request.Note:taggedVersions"}},
		{"flexible none", func(t *testing.T, s *schema.Spec) { findField(t, hdr(t, s).Fields, "Client").FlexNone = false },
			[]string{"WidgetHeader.Client:flexibleVersions"}},
		{"ignorable", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s), "Count").Ignorable = false },
			[]string{"Widget.Request.Count:ignorable"}},
		{"data field default", func(t *testing.T, s *schema.Spec) { findField(t, data(t, s).Fields, "Gen").Default = "" },
			[]string{"WidgetData.Gen:default"}},
		{"data field type", func(t *testing.T, s *schema.Spec) { findField(t, data(t, s).Fields, "Names").Type.Name = "bytes" },
			[]string{"WidgetData.Names:type"}},
	}
	runMutations(t, load, kafka, cases, false)
}

// TestCompareCatchesAlteredSpec alters copies of our real spec in memory and checks that the
// comparison with Kafka's real schemas reports each change.
func TestCompareCatchesAlteredSpec(t *testing.T) {
	kdir := kafkaSchemaDir(t)
	load := func(t *testing.T) *schema.Spec {
		s, err := schema.LoadDir("../messages")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kafka := func(file string) (*kafkaMessage, error) { return loadKafkaMessage(filepath.Join(kdir, file)) }
	req := func(t *testing.T, s *schema.Spec, api string) *schema.Struct {
		return findAPI(t, s, api).Request.Struct
	}
	resp := func(t *testing.T, s *schema.Spec, api string) *schema.Struct {
		return findAPI(t, s, api).Response.Struct
	}
	cases := []mutation{
		{"versions", func(t *testing.T, s *schema.Spec) {
			findField(t, req(t, s, "Produce"), "TransactionalId").Versions = schema.Range{Lo: 4, Hi: schema.Open}
		}, []string{"Produce.Request.TransactionalId:versions"}},
		{"type", func(t *testing.T, s *schema.Spec) { findField(t, req(t, s, "Produce"), "Acks").Type.Name = "int32" },
			[]string{"Produce.Request.Acks:type"}},
		{"nested array type", func(t *testing.T, s *schema.Spec) {
			findField(t, resp(t, s, "Metadata"), "Topics", "Partitions", "ReplicaNodes").Type.Name = "int64"
		}, []string{"Metadata.Response.Topics.Partitions.ReplicaNodes:type"}},
		{"order", func(t *testing.T, s *schema.Spec) { swapFields(t, req(t, s, "Produce"), "TimeoutMs", "TopicData") },
			[]string{"Produce.Request:order"}},
		{"missing", func(t *testing.T, s *schema.Spec) { removeField(t, resp(t, s, "ApiVersions"), "SupportedFeatures") },
			[]string{"ApiVersions.Response.SupportedFeatures:presence"}},
		{"nullable", func(t *testing.T, s *schema.Spec) {
			findField(t, resp(t, s, "JoinGroup"), "ProtocolName").Nullable = schema.None
		},
			[]string{"JoinGroup.Response.ProtocolName:nullableVersions"}},
		{"tag", func(t *testing.T, s *schema.Spec) {
			findField(t, resp(t, s, "Fetch"), "Responses", "Partitions", "DivergingEpoch").Tag = 5
		}, []string{"Fetch.Response.Responses.Partitions.DivergingEpoch:tag"}},
		{"default", func(t *testing.T, s *schema.Spec) {
			findField(t, req(t, s, "Fetch"), "MaxBytes").Default = "0x7ffffffe"
		},
			[]string{"Fetch.Request.MaxBytes:default"}},
		{"flexible none", func(t *testing.T, s *schema.Spec) {
			findField(t, s.Header("RequestHeader").Fields, "ClientId").FlexNone = false
		},
			[]string{"RequestHeader.ClientId:flexibleVersions"}},
		{"api versions", func(t *testing.T, s *schema.Spec) { findAPI(t, s, "Produce").Versions = schema.Range{Lo: 0, Hi: 12} },
			[]string{"Produce.Request:validVersions", "Produce.Response:validVersions"}},
		{"flexible", func(t *testing.T, s *schema.Spec) {
			findAPI(t, s, "Heartbeat").Flexible = schema.Range{Lo: 3, Hi: schema.Open}
		},
			[]string{"Heartbeat.Request:flexibleVersions", "Heartbeat.Response:flexibleVersions"}},
		{"data field versions", func(t *testing.T, s *schema.Spec) {
			findField(t, s.DataType("ConsumerProtocolSubscription").Fields, "GenerationId").Versions = schema.Range{Lo: 1, Hi: schema.Open}
		}, []string{"ConsumerProtocolSubscription.GenerationId:versions"}},
		{"data nested field", func(t *testing.T, s *schema.Spec) {
			removeField(t, findField(t, s.DataType("ConsumerProtocolAssignment").Fields, "AssignedPartitions").Type.Struct, "Partitions")
		}, []string{"ConsumerProtocolAssignment.AssignedPartitions.Partitions:presence"}},
	}
	runMutations(t, load, kafka, cases, true)
}
