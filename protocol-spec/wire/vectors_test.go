package wire_test

// Golden vectors: one request and one response encoding per API and version of the window
// (../vectors/messages/<api>/<kind>_v<N>.json) and one vector per header special case
// (../vectors/headers/*.json). Each file holds the hex encoding and a readable form (the Go
// struct marshalled by encoding/json).
//
// A normal run checks every committed file byte for byte: our decoder turns the hex into the
// readable value, our encoder turns the value into the hex, and franz-go's kmsg decodes the hex
// and encodes it back unchanged. Rewrite the files with
//
//	go test ./wire -run TestGoldenVectors -update
//
// The generator is deterministic (a fixed seed per API, version and kind), so a rewrite with an
// unchanged codec reproduces the committed files exactly.

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/protocol-spec/internal/randfill"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

var update = flag.Bool("update", false, "rewrite the golden vectors under ../vectors from the deterministic generator")

const (
	messagesDir = "../vectors/messages"
	headersDir  = "../vectors/headers"
)

var kinds = []string{"request", "response"}

// messageVector is the file format of vectors/messages/<api>/<kind>_v<N>.json.
type messageVector struct {
	API     string          `json:"api"`
	Key     int16           `json:"key"`
	Kind    string          `json:"kind"` // "request" or "response"
	Version int16           `json:"version"`
	Hex     string          `json:"hex"`
	Value   json.RawMessage `json:"value"`
}

// snakeName turns an API name into its file name stem: ApiVersions -> api_versions.
func snakeName(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func vectorFile(api *wire.API, kind string, v int16) string {
	return filepath.Join(snakeName(api.Name), fmt.Sprintf("%s_v%d.json", kind, v))
}

func newMessage(api *wire.API, kind string) wire.Message {
	if kind == "request" {
		return api.NewRequest()
	}
	return api.NewResponse()
}

func newKmsg(key int16, kind string) kmsgCodec {
	if kind == "request" {
		return kmsg.RequestForKey(key)
	}
	return kmsg.ResponseForKey(key)
}

// canonicalJSON is the stable file form: two-space indentation, no HTML escaping, final newline.
func canonicalJSON(x any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compactJSON marshals x without indentation and without HTML escaping.
func compactJSON(x any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// strictUnmarshal decodes JSON into x, refusing fields x does not have.
func strictUnmarshal(data []byte, x any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(x); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func sameJSON(a, b []byte) (bool, error) {
	var ca, cb bytes.Buffer
	if err := json.Compact(&ca, a); err != nil {
		return false, err
	}
	if err := json.Compact(&cb, b); err != nil {
		return false, err
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes()), nil
}

// decodeWhole decodes b at version v and requires every byte to be consumed.
func decodeWhole(m interface {
	ReadFrom(*wire.Reader, int16)
}, b []byte, v int16) error {
	r := wire.NewReader(b)
	m.ReadFrom(r, v)
	if err := r.Err(); err != nil {
		return err
	}
	if r.Remaining() != 0 {
		return fmt.Errorf("%d bytes left over after decoding", r.Remaining())
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// Generation.

func seedFor(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// generateMessageVector builds the vector of one API, kind and version: a randomly populated
// message (bounded arrays), made readable by humanize, encoded, then decoded again so that the
// readable form is exactly what a decoder sees.
func generateMessageVector(api *wire.API, kind string, v int16) (messageVector, error) {
	seed := seedFor(fmt.Sprintf("%s/%s/v%d", api.Name, kind, v))
	m := newMessage(api, kind)
	f := randfill.New(seed)
	f.MaxElems = 2
	f.Fill(m)
	h := &humanizer{rng: rand.New(rand.NewPCG(seed, seed>>1|1)), api: api, kind: kind, v: v}
	h.message(m)
	b := m.AppendTo(nil, v)
	back := newMessage(api, kind)
	if err := decodeWhole(back, b, v); err != nil {
		return messageVector{}, fmt.Errorf("%s %s v%d: decoding the generated message: %w", api.Name, kind, v, err)
	}
	if again := back.AppendTo(nil, v); !bytes.Equal(again, b) {
		return messageVector{}, fmt.Errorf("%s %s v%d: the generated message does not round trip\nfirst:  %x\nsecond: %x", api.Name, kind, v, b, again)
	}
	val, err := compactJSON(back)
	if err != nil {
		return messageVector{}, err
	}
	return messageVector{API: api.Name, Key: api.Key, Kind: kind, Version: v, Hex: hex.EncodeToString(b), Value: val}, nil
}

// vectorKey names one vector of the window.
type vectorKey struct {
	api  *wire.API
	kind string
	v    int16
}

// expectedMessageFiles maps every file the window requires, relative to messagesDir, to its
// API, kind and version.
func expectedMessageFiles() map[string]vectorKey {
	out := map[string]vectorKey{}
	for i := range wire.APIs {
		api := &wire.APIs[i]
		for v := api.MinVersion; v <= api.MaxVersion; v++ {
			for _, kind := range kinds {
				out[vectorFile(api, kind, v)] = vectorKey{api, kind, v}
			}
		}
	}
	return out
}

func writeMessageVectors(t *testing.T) {
	t.Helper()
	want := expectedMessageFiles()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e := want[name]
		vec, err := generateMessageVector(e.api, e.kind, e.v)
		if err != nil {
			t.Fatal(err)
		}
		data, err := canonicalJSON(vec)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(messagesDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Remove files the window no longer has (a narrowed range, a removed API).
	for _, name := range listJSON(t, messagesDir) {
		if _, ok := want[name]; !ok {
			if err := os.Remove(filepath.Join(messagesDir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, _ := os.ReadDir(messagesDir)
	for _, e := range entries {
		if e.IsDir() {
			os.Remove(filepath.Join(messagesDir, e.Name())) // only succeeds when empty
		}
	}
}

// listJSON lists the .json files under dir, relative to it, sorted.
func listJSON(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".json") {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	slices.Sort(out)
	return out
}

// ---------------------------------------------------------------------------------------------
// Checks.

// TestGoldenVectors checks every committed message vector against our codec and kmsg, and that
// the set of files covers the whole window (every API, version and kind) and nothing else.
func TestGoldenVectors(t *testing.T) {
	if *update {
		writeMessageVectors(t)
		writeHeaderVectors(t)
		writeDataVectors(t)
	}
	want := expectedMessageFiles()
	have := listJSON(t, messagesDir)
	t.Run("coverage", func(t *testing.T) {
		seen := map[string]bool{}
		for _, name := range have {
			seen[name] = true
			if _, ok := want[name]; !ok {
				t.Errorf("unexpected vector file %s (not an API, kind and version of the window; run with -update)", name)
			}
		}
		var missing []string
		for name := range want {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		for _, name := range missing {
			t.Errorf("no vector for %s (run with -update)", name)
		}
		// Every API directory is named after its schema file.
		for i := range wire.APIs {
			spool := filepath.Join("..", "messages", snakeName(wire.APIs[i].Name)+".spool")
			if _, err := os.Stat(spool); err != nil {
				t.Errorf("API %s: vector directory %s has no schema file: %v", wire.APIs[i].Name, snakeName(wire.APIs[i].Name), err)
			}
		}
	})
	for _, name := range have {
		e, ok := want[name]
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) { checkMessageVector(t, name, e.api, e.kind, e.v) })
	}
}

func checkMessageVector(t *testing.T, name string, api *wire.API, kind string, v int16) {
	raw, err := os.ReadFile(filepath.Join(messagesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var vec messageVector
	if err := strictUnmarshal(raw, &vec); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if vec.API != api.Name || vec.Key != api.Key || vec.Kind != kind || vec.Version != v {
		t.Fatalf("file says api=%q key=%d kind=%q version=%d, its path says %s key %d %s v%d",
			vec.API, vec.Key, vec.Kind, vec.Version, api.Name, api.Key, kind, v)
	}
	if canon, err := canonicalJSON(vec); err != nil || !bytes.Equal(canon, raw) {
		t.Errorf("file is not in canonical form (run with -update): %v", err)
	}
	b, err := hex.DecodeString(vec.Hex)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}

	// Ours, decoding: the hex gives the readable value and nothing is left over.
	m := newMessage(api, kind)
	if err := decodeWhole(m, b, v); err != nil {
		t.Fatalf("decoding the hex: %v", err)
	}
	got, err := compactJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	if same, err := sameJSON(got, vec.Value); err != nil || !same {
		t.Errorf("decoding the hex does not give the value (err %v)\nwant: %s\ngot:  %s", err, compactOrRaw(vec.Value), got)
	}
	if again := m.AppendTo(nil, v); !bytes.Equal(again, b) {
		t.Errorf("decoding and re-encoding changes the bytes\nwant: %x\ngot:  %x", b, again)
	}

	// Ours, encoding: the readable value gives the hex.
	fromValue := newMessage(api, kind)
	if err := strictUnmarshal(vec.Value, fromValue); err != nil {
		t.Fatalf("the value does not fit %T: %v", fromValue, err)
	}
	if enc := fromValue.AppendTo(nil, v); !bytes.Equal(enc, b) {
		t.Errorf("encoding the value does not give the hex\nwant: %x\ngot:  %x", b, enc)
	}

	// franz-go's kmsg decodes the hex and encodes the same bytes back.
	k := newKmsg(api.Key, kind)
	if k == nil {
		t.Fatalf("kmsg has no %s for key %d", kind, api.Key)
	}
	k.SetVersion(v)
	if err := k.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot decode the hex: %v", err)
	}
	if back := k.AppendTo(nil); !bytes.Equal(back, b) {
		t.Errorf("kmsg re-encodes the hex differently\nwant: %x\nkmsg: %x", b, back)
	}
}

func compactOrRaw(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// designWindow is the protocol window of DESIGN.md section 3: key, name, versions, first
// flexible version (-1: never flexible). Pinning it here means the vector coverage cannot shrink by narrowing the
// registry and rerunning -update without this table changing too.
var designWindow = []struct {
	key          int16
	name         string
	min, max     int16
	flexibleFrom int16
}{
	{0, "Produce", 0, 9, 9}, {1, "Fetch", 4, 12, 12}, {2, "ListOffsets", 1, 6, 6},
	{3, "Metadata", 0, 12, 9}, {8, "OffsetCommit", 2, 8, 8}, {9, "OffsetFetch", 1, 7, 6},
	{10, "FindCoordinator", 0, 3, 3}, {11, "JoinGroup", 0, 7, 6}, {12, "Heartbeat", 0, 4, 4},
	{13, "LeaveGroup", 0, 4, 4}, {14, "SyncGroup", 0, 5, 4}, {15, "DescribeGroups", 0, 5, 5},
	{16, "ListGroups", 0, 4, 3}, {17, "SaslHandshake", 0, 1, -1}, {18, "ApiVersions", 0, 4, 3}, {19, "CreateTopics", 2, 7, 5},
	{20, "DeleteTopics", 1, 6, 4}, {22, "InitProducerId", 0, 4, 2},
	{24, "AddPartitionsToTxn", 0, 5, 3}, {25, "AddOffsetsToTxn", 0, 4, 3}, {26, "EndTxn", 0, 4, 3},
	{27, "WriteTxnMarkers", 0, 1, 1}, {28, "TxnOffsetCommit", 0, 4, 3},
	{29, "DescribeAcls", 0, 3, 2}, {30, "CreateAcls", 0, 3, 2}, {31, "DeleteAcls", 0, 3, 2}, {32, "DescribeConfigs", 1, 4, 4},
	{33, "AlterConfigs", 0, 2, 2}, {35, "DescribeLogDirs", 0, 4, 2},
	{36, "SaslAuthenticate", 0, 2, 2}, {37, "CreatePartitions", 0, 3, 2}, {42, "DeleteGroups", 0, 2, 2},
	{43, "ElectLeaders", 0, 2, 2}, {44, "IncrementalAlterConfigs", 0, 1, 1},
	{45, "AlterPartitionReassignments", 0, 0, 0}, {46, "ListPartitionReassignments", 0, 0, 0},
	{47, "OffsetDelete", 0, 0, -1},
	{50, "DescribeUserScramCredentials", 0, 0, 0}, {51, "AlterUserScramCredentials", 0, 0, 0},
	{60, "DescribeCluster", 0, 1, 0}, {61, "DescribeProducers", 0, 0, 0}, {65, "DescribeTransactions", 0, 0, 0},
	{66, "ListTransactions", 0, 1, 0},
}

// TestWindowMatchesDesign checks the registry against DESIGN.md section 3, the header versions
// it derives, and kmsg's idea of which versions are flexible.
func TestWindowMatchesDesign(t *testing.T) {
	if len(wire.APIs) != len(designWindow) {
		t.Errorf("registry has %d APIs, DESIGN.md section 3 has %d", len(wire.APIs), len(designWindow))
	}
	for _, d := range designWindow {
		api := wire.LookupAPI(d.key)
		if api == nil {
			t.Errorf("key %d (%s) is missing from the registry", d.key, d.name)
			continue
		}
		if api.Name != d.name || api.MinVersion != d.min || api.MaxVersion != d.max || api.FlexibleFrom != d.flexibleFrom {
			t.Errorf("key %d: registry has %s %d-%d flexible %d+, DESIGN.md says %s %d-%d flexible %d+",
				d.key, api.Name, api.MinVersion, api.MaxVersion, api.FlexibleFrom, d.name, d.min, d.max, d.flexibleFrom)
		}
		for v := api.MinVersion; v <= api.MaxVersion; v++ {
			flex := d.flexibleFrom >= 0 && v >= d.flexibleFrom
			wantReq, wantResp := int16(1), int16(0)
			if flex {
				wantReq, wantResp = 2, 1
			}
			if d.key == wire.KeyApiVersions {
				wantResp = 0 // always, so that any client can read the reply
			}
			if got := api.RequestHeaderVersion(v); got != wantReq {
				t.Errorf("%s v%d: request header v%d, want v%d", d.name, v, got, wantReq)
			}
			if got := api.ResponseHeaderVersion(v); got != wantResp {
				t.Errorf("%s v%d: response header v%d, want v%d", d.name, v, got, wantResp)
			}
			req := kmsg.RequestForKey(d.key)
			req.SetVersion(v)
			resp := kmsg.ResponseForKey(d.key)
			resp.SetVersion(v)
			if req.IsFlexible() != flex || resp.IsFlexible() != flex || api.IsFlexible(v) != flex {
				t.Errorf("%s v%d: flexible: DESIGN %v, ours %v, kmsg request %v, kmsg response %v", d.name, v, flex, api.IsFlexible(v), req.IsFlexible(), resp.IsFlexible())
			}
		}
	}
}

// TestGoldenVectorGeneratorDeterministic proves that -update reproduces its own output: two
// generations of every vector agree byte for byte.
func TestGoldenVectorGeneratorDeterministic(t *testing.T) {
	for name, e := range expectedMessageFiles() {
		a, err := generateMessageVector(e.api, e.kind, e.v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := generateMessageVector(e.api, e.kind, e.v)
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := canonicalJSON(a)
		jb, _ := canonicalJSON(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: two generations differ", name)
		}
	}
	for i, a := range headerVectors() {
		b := headerVectors()[i]
		ja, _ := canonicalJSON(a)
		jb, _ := canonicalJSON(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("header vector %s: two generations differ", a.Name)
		}
	}
}

// TestReadableFormShowsEveryField checks that every field of every generated message struct
// is exported: the readable form of a vector (encoding/json) and randfill only see exported
// fields, and a field the SDK and broker cannot set from outside the package is a codec bug.
func TestReadableFormShowsEveryField(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(t *testing.T, typ reflect.Type, path string)
	walk = func(t *testing.T, typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			sf := typ.Field(i)
			if !sf.IsExported() {
				t.Errorf("%s.%s (%s) is unexported: encoding/json, randfill and every caller outside package wire cannot see it", path, sf.Name, typ.Name())
				continue
			}
			walk(t, sf.Type, path+"."+sf.Name)
		}
	}
	for i := range wire.APIs {
		api := &wire.APIs[i]
		for _, kind := range kinds {
			m := newMessage(api, kind)
			walk(t, reflect.TypeOf(m), reflect.TypeOf(m).Elem().Name())
		}
	}
	walk(t, reflect.TypeOf(wire.RequestHeader{}), "RequestHeader")
	walk(t, reflect.TypeOf(wire.ResponseHeader{}), "ResponseHeader")
}

// TestVectorPayloadsParse checks that the embedded payloads the generator makes meaningful
// (record batches, consumer protocol metadata and assignments) are valid by kmsg's reading.
func TestVectorPayloadsParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := &humanizer{rng: rng, api: wire.LookupAPI(wire.KeyProduce), kind: "request", v: 9}
	batch := h.recordBatch()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatalf("record batch: %v", err)
	}
	if rb.Magic != 2 || int(rb.Length) != len(batch)-12 || uint32(rb.CRC) != crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("record batch header: magic %d length %d crc %x", rb.Magic, rb.Length, rb.CRC)
	}
	n := 0
	for rest := rb.Records; len(rest) > 0; n++ {
		l, sz := binary.Varint(rest)
		if sz <= 0 || int(l) > len(rest)-sz {
			t.Fatalf("record %d: bad length", n)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rest[:sz+int(l)]); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		rest = rest[sz+int(l):]
	}
	if n != int(rb.NumRecords) {
		t.Fatalf("batch says %d records, holds %d", rb.NumRecords, n)
	}
	for magic := int8(0); magic <= 1; magic++ {
		set := h.legacyMessageSet(magic)
		var key, value []byte
		if magic == 0 {
			var msg kmsg.MessageV0
			if err := msg.ReadFrom(set); err != nil || msg.Magic != 0 || int(msg.MessageSize) != len(set)-12 {
				t.Fatalf("message set magic 0: %v %+v", err, msg)
			}
			key, value = msg.Key, msg.Value
		} else {
			var msg kmsg.MessageV1
			if err := msg.ReadFrom(set); err != nil || msg.Magic != 1 || int(msg.MessageSize) != len(set)-12 {
				t.Fatalf("message set magic 1: %v %+v", err, msg)
			}
			key, value = msg.Key, msg.Value
		}
		if len(key) == 0 || len(value) == 0 {
			t.Fatalf("message set magic %d: empty key or value", magic)
		}
		if got, want := binary.BigEndian.Uint32(set[12:16]), crc32.ChecksumIEEE(set[16:]); got != want {
			t.Fatalf("message set magic %d: crc %x, want %x", magic, got, want)
		}
	}
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(h.subscription()); err != nil || len(meta.Topics) == 0 {
		t.Fatalf("consumer subscription: %v %+v", err, meta)
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(h.assignment()); err != nil || len(asg.Topics) == 0 {
		t.Fatalf("consumer assignment: %v %+v", err, asg)
	}
}

// ---------------------------------------------------------------------------------------------
// humanize: after randfill, well-known fields get values a real client or broker would send
// (topic and group names, hosts, ports, error codes with their messages, record batches, the
// consumer protocol), so that the vectors read like traffic. Everything else keeps its random
// value, which exercises edge values of the encoding.

type humanizer struct {
	rng  *rand.Rand
	api  *wire.API
	kind string
	v    int16
}

var (
	topicNames = []string{"orders", "payments", "clicks", "inventory.updates", "audit-log"}
	groupNames = []string{"orders-service", "billing", "analytics", "search-indexer"}
	configs    = [][2]string{
		{"retention.ms", "604800000"},
		{"cleanup.policy", "compact"},
		{"segment.bytes", "1073741824"},
		{"min.insync.replicas", "2"},
		{"compression.type", "producer"},
		{"max.message.bytes", "1048588"},
	}
	// Error codes a broker plausibly returns, by the kind of API.
	topicErrors = []int16{3, 5, 6, 7, 29}         // UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, TOPIC_AUTHORIZATION_FAILED
	groupErrors = []int16{14, 15, 16, 22, 25, 27} // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
	groupAPIs   = map[int16]bool{wire.KeyOffsetCommit: true, wire.KeyOffsetFetch: true, wire.KeyFindCoordinator: true,
		wire.KeyJoinGroup: true, wire.KeyHeartbeat: true, wire.KeyLeaveGroup: true, wire.KeySyncGroup: true,
		wire.KeyDescribeGroups: true, wire.KeyListGroups: true, wire.KeyDeleteGroups: true, wire.KeyOffsetDelete: true}
)

func (h *humanizer) pick(xs ...string) string { return xs[h.rng.IntN(len(xs))] }
func (h *humanizer) between(lo, hi int) int64 { return int64(lo + h.rng.IntN(hi-lo+1)) }

func (h *humanizer) memberID() string {
	return fmt.Sprintf("%s-%08x-%04x-%04x", h.pick("rdkafka", "spool-go", "consumer-1"), h.rng.Uint32(), h.rng.Uint32()&0xffff, h.rng.Uint32()&0xffff)
}

func (h *humanizer) clusterID() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(h.rng.Uint32())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (h *humanizer) errorCode() int16 {
	if h.rng.IntN(5) < 3 {
		return 0
	}
	codes := topicErrors
	if groupAPIs[h.api.Key] {
		codes = groupErrors
	}
	return codes[h.rng.IntN(len(codes))]
}

// message humanizes a whole message, then applies per-message touches.
func (h *humanizer) message(m wire.Message) {
	h.walk(reflect.ValueOf(m).Elem())
	switch m := m.(type) {
	case *wire.ApiVersionsResponse:
		// The window itself, as our broker advertises it.
		m.ErrorCode = 0
		m.ApiKeys = nil
		for _, a := range wire.APIs {
			m.ApiKeys = append(m.ApiKeys, wire.ApiVersionsResponseApiVersion{ApiKey: a.Key, MinVersion: a.MinVersion, MaxVersion: a.MaxVersion})
		}
	case *wire.FetchRequest:
		m.ReplicaId = -1 // a consumer
		m.SessionId, m.SessionEpoch = 0, -1
	case *wire.ListOffsetsRequest:
		m.ReplicaId = -1
	}
}

func (h *humanizer) walk(v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Name == "UnknownTags" {
			continue
		}
		h.field(t.Name(), sf.Name, v.Field(i))
	}
	h.fixStruct(t.Name(), v)
}

func (h *humanizer) field(owner, name string, f reflect.Value) {
	switch f.Kind() {
	case reflect.Struct:
		h.walk(f)
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.Uint8 {
			// Records may be null; the other byte fields we know are not nullable.
			if !f.IsNil() || name != "Records" {
				if b := h.bytes(name); b != nil {
					f.SetBytes(b)
				}
			}
			return
		}
		if f.Len() == 0 && h.rng.IntN(4) != 0 {
			// Mostly one element rather than none, so that the vector shows the element's
			// encoding; a nil array stays nil (null) a quarter of the time.
			n := 1 + h.rng.IntN(2)
			s := reflect.MakeSlice(f.Type(), n, n)
			for i := 0; i < n; i++ {
				fill := randfill.New(h.rng.Uint64())
				fill.MaxElems = 2
				fill.Fill(s.Index(i).Addr().Interface())
			}
			f.Set(s)
		}
		for i := 0; i < f.Len(); i++ {
			if f.Index(i).Kind() == reflect.Struct {
				h.walk(f.Index(i))
			} else {
				h.scalar(owner, name, f.Index(i))
			}
		}
	case reflect.Pointer:
		if !f.IsNil() {
			h.scalar(owner, name, f.Elem())
		}
	default:
		h.scalar(owner, name, f)
	}
}

func (h *humanizer) scalar(owner, name string, f reflect.Value) {
	switch f.Kind() {
	case reflect.String:
		if s, ok := h.str(owner, name); ok {
			f.SetString(s)
		}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := h.num(name); ok {
			f.SetInt(n)
		}
	case reflect.Bool:
		switch name {
		case "IsInternal", "ValidateOnly", "ZkMigrationReady":
			f.SetBool(false)
		case "AllowAutoTopicCreation":
			f.SetBool(true)
		}
	}
}

func isConfigOwner(owner string) bool {
	return strings.Contains(owner, "Config") && !strings.Contains(owner, "Resource") || strings.HasSuffix(owner, "ResourceResult") || strings.HasSuffix(owner, "Synonym")
}

func (h *humanizer) str(owner, name string) (string, bool) {
	switch name {
	case "Name":
		switch {
		case isConfigOwner(owner):
			return configs[h.rng.IntN(len(configs))][0], true
		case strings.Contains(owner, "FeatureKey"):
			return h.pick("metadata.version", "kraft.version", "group.version"), true
		case strings.HasSuffix(owner, "Protocol"):
			return h.pick("range", "cooperative-sticky"), true
		}
		return h.pick(topicNames...), true
	case "Topic", "Topics", "TopicNames", "ResourceName":
		return h.pick(topicNames...), true
	case "ConfigurationKeys":
		return configs[h.rng.IntN(len(configs))][0], true
	case "GroupId", "Groups", "GroupsNames", "Key":
		return h.pick(groupNames...), true
	case "MemberId", "Leader":
		return h.memberID(), true
	case "GroupInstanceId":
		return fmt.Sprintf("instance-%d", h.between(1, 9)), true
	case "ClientId":
		return h.pick("rdkafka", "spool-go", "console-consumer"), true
	case "ClientHost":
		return fmt.Sprintf("/10.0.%d.%d", h.between(0, 3), h.between(2, 250)), true
	case "ProtocolType":
		return "consumer", true
	case "ProtocolName", "ProtocolData":
		return h.pick("range", "cooperative-sticky"), true
	case "GroupState", "StatesFilter":
		return h.pick("Stable", "Empty", "PreparingRebalance", "CompletingRebalance"), true
	case "Host":
		return "broker-1.spool.internal", true // fixStruct matches it to the node id
	case "Rack", "RackId":
		return h.pick("rack-a", "rack-b", "rack-c"), true
	case "ClusterId":
		return h.clusterID(), true
	case "TransactionalId":
		return fmt.Sprintf("txn-orders-%d", h.between(1, 9)), true
	case "ErrorMessage", "BatchIndexErrorMessage":
		return "", true // fixStruct derives it from the error code
	case "CommittedMetadata", "Metadata":
		return "", true
	case "ClientSoftwareName":
		return h.pick("librdkafka", "spool-go", "apache-kafka-java"), true
	case "ClientSoftwareVersion":
		return h.pick("2.3.0", "0.1.0", "3.9.0"), true
	case "Documentation":
		return "See the Kafka documentation of this configuration.", true
	case "Value":
		return "", true // fixStruct pairs it with the config name
	}
	return "", false
}

func (h *humanizer) num(name string) (int64, bool) {
	switch name {
	case "ErrorCode", "TopicConfigErrorCode":
		return int64(h.errorCode()), true
	case "ThrottleTimeMs":
		if h.rng.IntN(4) == 0 {
			return h.between(1, 100), true
		}
		return 0, true
	case "Partition", "PartitionIndex", "Index", "Partitions", "PartitionIndexes":
		return h.between(0, 11), true
	case "BatchIndex":
		return h.between(0, 4), true
	case "NodeId", "BrokerId", "LeaderId", "ControllerId", "BrokerIds", "ReplicaNodes", "IsrNodes", "OfflineReplicas":
		return h.between(1, 3), true
	case "PreferredReadReplica":
		return -1, true
	case "Port":
		return 9092, true
	case "NumPartitions":
		return h.between(1, 12), true
	case "Count":
		return h.between(6, 12), true
	case "ReplicationFactor":
		return h.between(1, 3), true
	case "LeaderEpoch", "CurrentLeaderEpoch", "CommittedLeaderEpoch", "LastFetchedEpoch", "Epoch":
		return h.between(0, 20), true
	case "GenerationId", "GenerationIdOrMemberEpoch":
		return h.between(1, 30), true
	case "SessionTimeoutMs":
		return 45000, true
	case "SessionId":
		return 0, true // sessionless fetch
	case "SessionEpoch":
		return -1, true
	case "RebalanceTimeoutMs":
		return 300000, true
	case "TimeoutMs":
		return 30000, true
	case "MaxWaitMs":
		return 500, true
	case "MinBytes":
		return 1, true
	case "MaxBytes":
		return 52428800, true
	case "PartitionMaxBytes":
		return 1048576, true
	case "TransactionTimeoutMs":
		return 60000, true
	case "RetentionTimeMs":
		return -1, true
	case "Acks":
		return []int64{-1, -1, 1}[h.rng.IntN(3)], true
	case "IsolationLevel", "KeyType":
		return h.between(0, 1), true
	case "ProducerId":
		return h.between(1000, 5000), true
	case "ProducerEpoch":
		return h.between(0, 3), true
	case "BaseOffset", "FetchOffset", "CommittedOffset", "HighWatermark", "LastStableOffset",
		"LogStartOffset", "Offset", "EndOffset", "FirstOffset":
		return h.between(0, 100000), true
	case "LogAppendTimeMs":
		return -1, true
	case "Timestamp":
		if h.kind == "request" {
			return []int64{-1, -2, 1718000000000 + h.between(0, 1e6)}[h.rng.IntN(3)], true
		}
		return 1718000000000 + h.between(0, 1e6), true
	case "FinalizedFeaturesEpoch":
		return h.between(0, 50), true
	case "MinVersion", "MinVersionLevel":
		return 1, true
	case "MaxVersion", "MaxVersionLevel":
		return h.between(1, 21), true
	case "AuthorizedOperations", "TopicAuthorizedOperations", "ClusterAuthorizedOperations":
		return -2147483648, true // not requested
	case "ResourceType":
		return []int64{2, 4}[h.rng.IntN(2)], true // TOPIC or BROKER
	case "ConfigSource", "Source":
		return h.between(1, 5), true
	case "ConfigType":
		return h.between(1, 9), true
	case "ConfigOperation":
		return h.between(0, 3), true
	case "EndpointType":
		return 1, true
	}
	return 0, false
}

// fixStruct makes sibling fields agree with each other.
func (h *humanizer) fixStruct(owner string, v reflect.Value) {
	field := func(name string) reflect.Value { return v.FieldByName(name) }
	if code, msg := field("ErrorCode"), field("ErrorMessage"); code.IsValid() && msg.IsValid() && msg.Kind() == reflect.Pointer {
		if code.Int() == 0 {
			msg.SetZero()
		} else if !msg.IsNil() {
			if e, ok := wire.ErrorForCode(int16(code.Int())).(*wire.Error); ok {
				msg.Elem().SetString(e.Description)
			}
		}
	}
	if msg := field("BatchIndexErrorMessage"); msg.IsValid() && !msg.IsNil() {
		msg.Elem().SetString("The record failed validation.")
	}
	if typ, name := field("ResourceType"), field("ResourceName"); typ.IsValid() && name.IsValid() && typ.Int() == 4 {
		name.SetString(fmt.Sprint(h.between(1, 3)))
	}
	if isConfigOwner(owner) {
		if name, value := field("Name"), field("Value"); name.IsValid() && value.IsValid() {
			c := configs[h.rng.IntN(len(configs))]
			name.SetString(c[0])
			if value.Kind() == reflect.Pointer {
				if !value.IsNil() {
					value.Elem().SetString(c[1])
				}
			} else {
				value.SetString(c[1])
			}
		}
	}
	host := field("Host")
	for _, id := range []string{"NodeId", "BrokerId"} {
		if n := field(id); host.IsValid() && n.IsValid() {
			host.SetString(fmt.Sprintf("broker-%d.spool.internal", n.Int()))
		}
	}
	if kt, key := field("KeyType"), field("Key"); kt.IsValid() && key.IsValid() && kt.Int() == 1 {
		key.SetString(fmt.Sprintf("txn-orders-%d", h.between(1, 9)))
	}
	if hw, lso, lo := field("HighWatermark"), field("LastStableOffset"), field("LogStartOffset"); hw.IsValid() && lso.IsValid() && lo.IsValid() {
		hw.SetInt(lo.Int() + h.between(0, 5000))
		lso.SetInt(hw.Int())
	}
	if lo, hi := field("MinVersion"), field("MaxVersion"); lo.IsValid() && hi.IsValid() && hi.Int() < lo.Int() {
		hi.SetInt(lo.Int())
	}
}

func (h *humanizer) bytes(name string) []byte {
	switch name {
	case "Records":
		if h.api.Key == wire.KeyProduce && h.v <= 2 {
			return h.legacyMessageSet(int8(h.v / 2)) // v0-1: magic 0, v2: magic 1
		}
		return h.recordBatch()
	case "Metadata", "MemberMetadata":
		return h.subscription()
	case "Assignment", "MemberAssignment":
		return h.assignment()
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatch is a record batch v2 (magic 2) with one to three small records, uncompressed.
func (h *humanizer) recordBatch() []byte {
	n := int(h.between(1, 3))
	base := int64(1718000000000) + h.between(0, 1e6)
	var recs []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                      // attributes
		body = wire.AppendVarlong(body, int64(i)*3) // timestamp delta
		body = wire.AppendVarint(body, int32(i))    // offset delta
		key := fmt.Sprintf("order-%d", h.between(1000, 9999))
		body = wire.AppendVarint(body, int32(len(key)))
		body = append(body, key...)
		value := fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, h.between(1, 500))
		body = wire.AppendVarint(body, int32(len(value)))
		body = append(body, value...)
		body = wire.AppendVarint(body, 0) // no headers
		recs = wire.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	var b []byte
	b = wire.AppendInt64(b, 0)  // base offset (assigned by the broker)
	b = wire.AppendInt32(b, 0)  // batch length, below
	b = wire.AppendInt32(b, -1) // partition leader epoch
	b = wire.AppendInt8(b, 2)   // magic
	b = wire.AppendUint32(b, 0) // crc, below
	crcFrom := len(b)
	b = wire.AppendInt16(b, 0)                 // attributes: no compression, create time
	b = wire.AppendInt32(b, int32(n-1))        // last offset delta
	b = wire.AppendInt64(b, base)              // base timestamp
	b = wire.AppendInt64(b, base+int64(n-1)*3) // max timestamp
	b = wire.AppendInt64(b, -1)                // producer id
	b = wire.AppendInt16(b, -1)                // producer epoch
	b = wire.AppendInt32(b, -1)                // base sequence
	b = wire.AppendInt32(b, int32(n))          // record count
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[crcFrom:], castagnoli))
	return b
}

// legacyMessageSet is a message set holding one message of magic 0 or 1.
func (h *humanizer) legacyMessageSet(magic int8) []byte {
	var msg []byte
	msg = wire.AppendUint32(msg, 0) // crc, below
	msg = wire.AppendInt8(msg, magic)
	msg = wire.AppendInt8(msg, 0) // attributes
	if magic == 1 {
		msg = wire.AppendInt64(msg, 1718000000000+h.between(0, 1e6))
	}
	msg = wire.AppendBytes(msg, []byte(fmt.Sprintf("order-%d", h.between(1000, 9999))), false)
	msg = wire.AppendBytes(msg, []byte(fmt.Sprintf(`{"amount":%d}`, h.between(1, 500))), false)
	binary.BigEndian.PutUint32(msg, crc32.ChecksumIEEE(msg[4:]))
	var b []byte
	b = wire.AppendInt64(b, 0)
	b = wire.AppendInt32(b, int32(len(msg)))
	return append(b, msg...)
}

// subscription is a consumer protocol subscription (ConsumerProtocolSubscription v0), as a
// member puts it in JoinGroup.
func (h *humanizer) subscription() []byte {
	s := wire.ConsumerProtocolSubscription{Topics: topicNames[:1+h.rng.IntN(2)]} // no user data
	return s.AppendVersioned(nil, 0)
}

// assignment is a consumer protocol assignment (ConsumerProtocolAssignment v0), as a leader
// puts it in SyncGroup.
func (h *humanizer) assignment() []byte {
	tp := wire.ConsumerProtocolAssignmentTopicPartition{Topic: h.pick(topicNames...)}
	for p := range int32(h.between(1, 3)) {
		tp.Partitions = append(tp.Partitions, p)
	}
	a := wire.ConsumerProtocolAssignment{AssignedPartitions: []wire.ConsumerProtocolAssignmentTopicPartition{tp}}
	return a.AppendVersioned(nil, 0)
}

// ---------------------------------------------------------------------------------------------
// Header vectors.

// headerVector is the file format of vectors/headers/<name>.json.
type headerVector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Kind is "request_header", "response_header" or "response_frame" (size, header, body).
	Kind string `json:"kind"`
	// API, Key and Version name the message the header goes with; HeaderVersion follows from
	// them through the API registry.
	API           string          `json:"api"`
	Key           int16           `json:"key"`
	Version       int16           `json:"version"`
	HeaderVersion int16           `json:"header_version"`
	Hex           string          `json:"hex"`
	Value         json.RawMessage `json:"value"`
}

// frameValue is the readable form of a response_frame vector.
type frameValue struct {
	Size   int32               `json:"size"`
	Header wire.ResponseHeader `json:"header"`
	Body   json.RawMessage     `json:"body"`
}

func strPtr(s string) *string { return &s }

// headerVectors builds the header vectors; they are written by hand, not drawn at random.
func headerVectors() []headerVector {
	var out []headerVector
	reqHeader := func(name, desc string, key, version int16, corr int32, clientID *string) {
		api := wire.LookupAPI(key)
		hv := api.RequestHeaderVersion(version)
		h := wire.RequestHeader{RequestApiKey: key, RequestApiVersion: version, CorrelationId: corr, ClientId: clientID}
		val, _ := compactJSON(h)
		out = append(out, headerVector{Name: name, Description: desc, Kind: "request_header", API: api.Name, Key: key,
			Version: version, HeaderVersion: hv, Hex: hex.EncodeToString(h.AppendTo(nil, hv)), Value: val})
	}
	respHeader := func(name, desc string, key, version int16, corr int32) {
		api := wire.LookupAPI(key)
		hv := api.ResponseHeaderVersion(version)
		h := wire.ResponseHeader{CorrelationId: corr}
		val, _ := compactJSON(h)
		out = append(out, headerVector{Name: name, Description: desc, Kind: "response_header", API: api.Name, Key: key,
			Version: version, HeaderVersion: hv, Hex: hex.EncodeToString(h.AppendTo(nil, hv)), Value: val})
	}
	reqHeader("request_v1_client_id",
		"Request header v1 (Metadata v4, not flexible): api key, api version, correlation id, then the client id as a classic int16-length string.",
		wire.KeyMetadata, 4, 1, strPtr("spool-go"))
	reqHeader("request_v2_classic_client_id",
		"Request header v2 (Fetch v12, flexible): the client id is still a classic int16-length string, never compact; an empty tagged-field section (one 0x00 byte) ends the header.",
		wire.KeyFetch, 12, 2, strPtr("rdkafka"))
	reqHeader("request_v1_null_client_id",
		"Request header v1 (Produce v7) with a null client id: length -1 (ffff) and no bytes.",
		wire.KeyProduce, 7, 3, nil)
	respHeader("response_v0",
		"Response header v0 (Metadata v4 response): the correlation id alone.",
		wire.KeyMetadata, 4, 1)
	respHeader("response_v1",
		"Response header v1 (Fetch v12 response, flexible): the correlation id, then an empty tagged-field section.",
		wire.KeyFetch, 12, 2)

	// ApiVersions v3: a flexible body behind a v0 response header, framed as on the wire.
	api := wire.LookupAPI(wire.KeyApiVersions)
	const v = 3
	body := &wire.ApiVersionsResponse{}
	body.Default()
	for _, a := range wire.APIs {
		body.ApiKeys = append(body.ApiKeys, wire.ApiVersionsResponseApiVersion{ApiKey: a.Key, MinVersion: a.MinVersion, MaxVersion: a.MaxVersion})
	}
	hv := api.ResponseHeaderVersion(v)
	hdr := wire.ResponseHeader{CorrelationId: 1}
	payload := body.AppendTo(hdr.AppendTo(nil, hv), v)
	frame := wire.AppendInt32(nil, int32(len(payload)))
	frame = append(frame, payload...)
	bodyJSON, _ := compactJSON(body)
	val, _ := compactJSON(frameValue{Size: int32(len(payload)), Header: hdr, Body: bodyJSON})
	out = append(out, headerVector{Name: "api_versions_v3_response_frame",
		Description: "A whole ApiVersions v3 response as sent on the wire: int32 size, response header v0 (correlation id only, no tagged-field section, although the body is flexible, so that a client that does not yet know the broker's versions can parse it), then the flexible body listing Spool's window.",
		Kind:        "response_frame", API: api.Name, Key: api.Key, Version: v, HeaderVersion: hv, Hex: hex.EncodeToString(frame), Value: val})
	return out
}

func writeHeaderVectors(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(headersDir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, hv := range headerVectors() {
		data, err := canonicalJSON(hv)
		if err != nil {
			t.Fatal(err)
		}
		want[hv.Name+".json"] = true
		if err := os.WriteFile(filepath.Join(headersDir, hv.Name+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range listJSON(t, headersDir) {
		if !want[name] {
			os.Remove(filepath.Join(headersDir, name))
		}
	}
}

// TestGoldenHeaderVectors checks every header special case: the registry picks the header
// version, our codec decodes and encodes the bytes, the bytes match what the protocol says by
// hand, and kmsg's request formatter writes the same request header.
func TestGoldenHeaderVectors(t *testing.T) {
	if *update {
		writeHeaderVectors(t) // also done by TestGoldenVectors; harmless twice
	}
	have := listJSON(t, headersDir)
	var want []string
	for _, hv := range headerVectors() {
		want = append(want, hv.Name+".json")
	}
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("header vector files %v, want %v (run with -update)", have, want)
	}
	for _, name := range have {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(headersDir, name))
			if err != nil {
				t.Fatal(err)
			}
			var vec headerVector
			if err := strictUnmarshal(raw, &vec); err != nil {
				t.Fatalf("parsing: %v", err)
			}
			if canon, err := canonicalJSON(vec); err != nil || !bytes.Equal(canon, raw) {
				t.Errorf("file is not in canonical form (run with -update): %v", err)
			}
			api := wire.LookupAPI(vec.Key)
			if api == nil || api.Name != vec.API || !api.HasVersion(vec.Version) {
				t.Fatalf("%s key %d v%d is not in the window", vec.API, vec.Key, vec.Version)
			}
			b, err := hex.DecodeString(vec.Hex)
			if err != nil {
				t.Fatal(err)
			}
			switch vec.Kind {
			case "request_header":
				checkRequestHeaderVector(t, api, &vec, b)
			case "response_header":
				checkResponseHeaderVector(t, api, &vec, b)
			case "response_frame":
				checkResponseFrameVector(t, api, &vec, b)
			default:
				t.Fatalf("unknown kind %q", vec.Kind)
			}
		})
	}
}

func checkRequestHeaderVector(t *testing.T, api *wire.API, vec *headerVector, b []byte) {
	if hv := api.RequestHeaderVersion(vec.Version); hv != vec.HeaderVersion {
		t.Fatalf("registry gives request header v%d for %s v%d, the vector says v%d", hv, api.Name, vec.Version, vec.HeaderVersion)
	}
	var h wire.RequestHeader
	if err := decodeWhole(&h, b, vec.HeaderVersion); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	got, _ := compactJSON(h)
	if same, err := sameJSON(got, vec.Value); err != nil || !same {
		t.Errorf("decoding gives %s, want %s", got, compactOrRaw(vec.Value))
	}
	var fromValue wire.RequestHeader
	if err := strictUnmarshal(vec.Value, &fromValue); err != nil {
		t.Fatal(err)
	}
	if enc := fromValue.AppendTo(nil, vec.HeaderVersion); !bytes.Equal(enc, b) {
		t.Errorf("encoding the value gives %x, want %x", enc, b)
	}
	if h.RequestApiKey != api.Key || h.RequestApiVersion != vec.Version {
		t.Errorf("header names key %d v%d, the vector %d v%d", h.RequestApiKey, h.RequestApiVersion, api.Key, vec.Version)
	}

	// By hand: int16 key, int16 version, int32 correlation id, int16-length client id (ffff for
	// null) in every header version, then one 0x00 (no tags) in v2.
	want := binary.BigEndian.AppendUint16(nil, uint16(api.Key))
	want = binary.BigEndian.AppendUint16(want, uint16(vec.Version))
	want = binary.BigEndian.AppendUint32(want, uint32(h.CorrelationId))
	if h.ClientId == nil {
		want = append(want, 0xff, 0xff)
	} else {
		want = binary.BigEndian.AppendUint16(want, uint16(len(*h.ClientId)))
		want = append(want, *h.ClientId...)
	}
	if vec.HeaderVersion >= 2 {
		want = append(want, 0)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("header bytes %x, by hand %x", b, want)
	}

	// kmsg's request formatter: size, then the same header, then the body.
	req := kmsg.RequestForKey(api.Key)
	req.SetVersion(vec.Version)
	f := kmsg.NewRequestFormatter()
	if h.ClientId != nil {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*h.ClientId))
	}
	framed := f.AppendRequest(nil, req, h.CorrelationId)
	if len(framed) < 4+len(b) || !bytes.Equal(framed[4:4+len(b)], b) {
		t.Errorf("kmsg frames the request header as %x, we encode %x", framed[4:min(len(framed), 4+len(b))], b)
	}
	if body := req.AppendTo(nil); !bytes.Equal(framed[4+len(b):], body) {
		t.Errorf("kmsg's frame continues with %x after the header, not the body %x", framed[4+len(b):], body)
	}
}

func checkResponseHeaderVector(t *testing.T, api *wire.API, vec *headerVector, b []byte) {
	if hv := api.ResponseHeaderVersion(vec.Version); hv != vec.HeaderVersion {
		t.Fatalf("registry gives response header v%d for %s v%d, the vector says v%d", hv, api.Name, vec.Version, vec.HeaderVersion)
	}
	var h wire.ResponseHeader
	if err := decodeWhole(&h, b, vec.HeaderVersion); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	got, _ := compactJSON(h)
	if same, err := sameJSON(got, vec.Value); err != nil || !same {
		t.Errorf("decoding gives %s, want %s", got, compactOrRaw(vec.Value))
	}
	var fromValue wire.ResponseHeader
	if err := strictUnmarshal(vec.Value, &fromValue); err != nil {
		t.Fatal(err)
	}
	if enc := fromValue.AppendTo(nil, vec.HeaderVersion); !bytes.Equal(enc, b) {
		t.Errorf("encoding the value gives %x, want %x", enc, b)
	}
	// By hand (kmsg has no response header type): int32 correlation id, then 0x00 in v1.
	want := binary.BigEndian.AppendUint32(nil, uint32(h.CorrelationId))
	if vec.HeaderVersion >= 1 {
		want = append(want, 0)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("header bytes %x, by hand %x", b, want)
	}
}

func checkResponseFrameVector(t *testing.T, api *wire.API, vec *headerVector, b []byte) {
	if api.Key != wire.KeyApiVersions || !api.IsFlexible(vec.Version) {
		t.Fatalf("the frame vector is about ApiVersions at a flexible version, not %s v%d", api.Name, vec.Version)
	}
	hv := api.ResponseHeaderVersion(vec.Version)
	if hv != 0 || vec.HeaderVersion != 0 {
		t.Fatalf("ApiVersions v%d response header: registry says v%d, vector says v%d, want v0", vec.Version, hv, vec.HeaderVersion)
	}
	var val frameValue
	if err := strictUnmarshal(vec.Value, &val); err != nil {
		t.Fatal(err)
	}

	// Decoding: size, header v0, flexible body, nothing left.
	r := wire.NewReader(b)
	size := r.Int32()
	if r.Err() != nil || int(size) != r.Remaining() || size != val.Size {
		t.Fatalf("size %d, %d bytes follow, value says %d", size, r.Remaining(), val.Size)
	}
	var h wire.ResponseHeader
	h.ReadFrom(r, hv)
	if h.CorrelationId != val.Header.CorrelationId {
		t.Errorf("correlation id %d, want %d", h.CorrelationId, val.Header.CorrelationId)
	}
	bodyBytes := r.Rest()
	body := api.NewResponse()
	body.ReadFrom(r, vec.Version)
	if r.Err() != nil || r.Remaining() != 0 {
		t.Fatalf("decoding the body: %v, %d bytes left", r.Err(), r.Remaining())
	}
	got, _ := compactJSON(body)
	if same, err := sameJSON(got, val.Body); err != nil || !same {
		t.Errorf("decoding the body gives %s, want %s", got, compactOrRaw(val.Body))
	}
	if !bytes.Equal(b[4:8], binary.BigEndian.AppendUint32(nil, uint32(val.Header.CorrelationId))) {
		t.Errorf("the header is not the bare correlation id: %x", b[4:8])
	}

	// Encoding the value gives the frame.
	fromValue := api.NewResponse()
	if err := strictUnmarshal(val.Body, fromValue); err != nil {
		t.Fatal(err)
	}
	payload := fromValue.AppendTo(val.Header.AppendTo(nil, hv), vec.Version)
	if enc := append(wire.AppendInt32(nil, int32(len(payload))), payload...); !bytes.Equal(enc, b) {
		t.Errorf("encoding the value gives %x, want %x", enc, b)
	}

	// kmsg reads the body and writes it back unchanged.
	k := kmsg.ResponseForKey(api.Key)
	k.SetVersion(vec.Version)
	if err := k.ReadFrom(bodyBytes); err != nil {
		t.Fatalf("kmsg cannot decode the body: %v", err)
	}
	if back := k.AppendTo(nil); !bytes.Equal(back, bodyBytes) {
		t.Errorf("kmsg re-encodes the body as %x, want %x", back, bodyBytes)
	}

	// Reading the header as v1 (as the flexible body would suggest) misparses the frame.
	r = wire.NewReader(b[4:])
	var wrong wire.ResponseHeader
	wrong.ReadFrom(r, 1)
	misread := api.NewResponse()
	misread.ReadFrom(r, vec.Version)
	if r.Err() == nil && r.Remaining() == 0 {
		if j, _ := compactJSON(misread); bytes.Equal(j, got) {
			t.Errorf("a v1 header parse gives the same body: the vector does not pin the v0 header")
		}
	}
}
