package wire_test

// Fuzz targets for every decoder of the window, seeded from the golden vectors:
//
//	go test ./wire -run XXX -fuzz FuzzRequest -fuzztime 20s
//	go test ./wire -run XXX -fuzz FuzzResponse -fuzztime 20s
//	go test ./wire -run XXX -fuzz FuzzRequestHeader -fuzztime 20s
//	go test ./wire -run XXX -fuzz FuzzResponseHeader -fuzztime 20s
//
// Properties: decoding never panics; a failure wraps ErrMalformed; a decoder never allocates
// more than a small multiple of its input; a decoded message re-encodes to bytes that decode
// again and re-encode identically (the encoding is stable after one round), and never to more
// bytes than it was decoded from.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// allocBudget is the most a decoder may allocate for n input bytes. A decoder bounds every
// array by the bytes remaining divided by the least size of an element, so its allocation is
// linear in its input; the factor covers Go structs being larger than their encoding (a
// compact empty string is one byte on the wire and sixteen in Go, a struct element a few
// bytes on the wire and up to a few hundred in Go). The constant covers the error message and
// the imprecision of the runtime's allocation counter (it counts whole spans).
func allocBudget(n int) uint64 { return 256*uint64(n) + 1<<20 }

// heapAllocated is the cumulative number of bytes allocated on the heap. runtime/metrics does
// not stop the world, so it is cheap enough to call around every fuzz input.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

type fuzzSeed struct {
	key, version int16
	data         []byte
}

// vectorSeeds reads the committed message vectors of one kind.
func vectorSeeds(tb testing.TB, kind string) []fuzzSeed {
	tb.Helper()
	var out []fuzzSeed
	for _, name := range listJSON(tb, messagesDir) {
		raw, err := os.ReadFile(filepath.Join(messagesDir, name))
		if err != nil {
			tb.Fatal(err)
		}
		var vec messageVector
		if err := strictUnmarshal(raw, &vec); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if vec.Kind != kind {
			continue
		}
		b, err := hex.DecodeString(vec.Hex)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, fuzzSeed{vec.Key, vec.Version, b})
	}
	if len(out) == 0 {
		tb.Fatalf("no %s vectors under %s", kind, messagesDir)
	}
	return out
}

// headerSeeds reads the committed header vectors: request or response headers with their
// header version (a response frame gives its header, without the size).
func headerSeeds(tb testing.TB, request bool) []fuzzSeed {
	tb.Helper()
	var out []fuzzSeed
	for _, name := range listJSON(tb, headersDir) {
		raw, err := os.ReadFile(filepath.Join(headersDir, name))
		if err != nil {
			tb.Fatal(err)
		}
		var vec headerVector
		if err := strictUnmarshal(raw, &vec); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		b, err := hex.DecodeString(vec.Hex)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		switch {
		case request && vec.Kind == "request_header":
		case !request && vec.Kind == "response_header":
		case !request && vec.Kind == "response_frame":
			b = b[4:]
		default:
			continue
		}
		out = append(out, fuzzSeed{version: vec.HeaderVersion, data: b})
	}
	return out
}

// leastAllocated returns the fewest bytes f allocated over three runs. TotalAlloc counts the
// whole process, so the runtime or a goroutine a previous test left behind can add to one
// measurement (CI once saw 5.8 KB charged to two 5-byte decodes); they cannot subtract.
func leastAllocated(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		f()
		runtime.ReadMemStats(&ms)
		least = min(least, ms.TotalAlloc-before)
	}
	return least
}

// decodeStable runs the fuzz properties on one input for a decoder built by fresh.
func decodeStable[M interface {
	AppendTo([]byte, int16) []byte
	ReadFrom(*wire.Reader, int16)
}](t *testing.T, fresh func() M, version int16, data []byte) {
	t.Helper()
	m := fresh()
	before := heapAllocated()
	r := wire.NewReader(data)
	m.ReadFrom(r, version)
	err := r.Err()
	if got := heapAllocated() - before; got > allocBudget(len(data)) {
		// The cheap counter is coarse and counts the whole process: confirm exactly.
		exact := leastAllocated(func() { fresh().ReadFrom(wire.NewReader(data), version) })
		if exact > allocBudget(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d bytes (budget %d)", len(data), exact, allocBudget(len(data)))
		}
	}
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("decoding error does not wrap ErrMalformed: %v", err)
		}
		return
	}
	first := m.AppendTo(nil, version)
	if len(first) > r.Offset() {
		t.Fatalf("%d bytes decoded re-encode to %d bytes\nin:  %x\nout: %x", r.Offset(), len(first), data[:r.Offset()], first)
	}
	m2 := fresh()
	r2 := wire.NewReader(first)
	m2.ReadFrom(r2, version)
	if err := r2.Err(); err != nil {
		t.Fatalf("cannot decode our own re-encoding: %v\nin:  %x\nout: %x", err, data, first)
	}
	if r2.Remaining() != 0 {
		t.Fatalf("our re-encoding has %d bytes the decoder does not read\nin:  %x\nout: %x", r2.Remaining(), data, first)
	}
	if second := m2.AppendTo(nil, version); !bytes.Equal(first, second) {
		t.Fatalf("re-encoding is not stable\nin:     %x\nfirst:  %x\nsecond: %x", data, first, second)
	}
}

func fuzzMessages(f *testing.F, kind string) {
	for _, s := range vectorSeeds(f, kind) {
		f.Add(s.key, s.version, s.data)
	}
	f.Fuzz(func(t *testing.T, key, version int16, data []byte) {
		api := wire.LookupAPI(key)
		if api == nil || !api.HasVersion(version) {
			return
		}
		decodeStable(t, func() wire.Message { return newMessage(api, kind) }, version, data)
	})
}

// FuzzRequest decodes arbitrary bytes as a request of any API and version of the window.
func FuzzRequest(f *testing.F) { fuzzMessages(f, "request") }

// FuzzResponse decodes arbitrary bytes as a response of any API and version of the window.
func FuzzResponse(f *testing.F) { fuzzMessages(f, "response") }

// FuzzRequestHeader decodes arbitrary bytes as a request header (versions 0-2).
func FuzzRequestHeader(f *testing.F) {
	bodies := vectorSeeds(f, "request")
	for _, s := range headerSeeds(f, true) {
		f.Add(s.version, s.data)
		// A header followed by a body, as on the wire: the header decoder stops at its end.
		for _, body := range bodies[:3] {
			f.Add(s.version, append(append([]byte(nil), s.data...), body.data...))
		}
	}
	f.Fuzz(func(t *testing.T, version int16, data []byte) {
		if version < 0 || version > 2 {
			return
		}
		decodeStable(t, func() *wire.RequestHeader { return new(wire.RequestHeader) }, version, data)
	})
}

// FuzzResponseHeader decodes arbitrary bytes as a response header (versions 0-1).
func FuzzResponseHeader(f *testing.F) {
	for _, s := range headerSeeds(f, false) {
		f.Add(s.version, s.data)
	}
	f.Fuzz(func(t *testing.T, version int16, data []byte) {
		if version < 0 || version > 1 {
			return
		}
		decodeStable(t, func() *wire.ResponseHeader { return new(wire.ResponseHeader) }, version, data)
	})
}

// ---------------------------------------------------------------------------------------------
// Deterministic hostile-input tests (they run on every `go test`, fuzzing or not).

// TestHugeCountsFailFast feeds messages whose first array (or tag section, or tagged field)
// claims about 2^31 elements or bytes in a few bytes of input: each must fail with
// ErrMalformed, allocate next to nothing, and return at once.
func TestHugeCountsFailFast(t *testing.T) {
	classicHuge := []byte{0x7f, 0xff, 0xff, 0xff}       // int32 2^31-1
	compactHuge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f} // uvarint 2^32-1, a compact count of 2^32-2
	compact2p31 := []byte{0x80, 0x80, 0x80, 0x80, 0x08} // uvarint 2^31
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name    string
		key     int16
		kind    string
		version int16
		data    []byte
	}{
		{"Produce response v0 responses", wire.KeyProduce, "response", 0, classicHuge},
		{"Produce request v0 topics", wire.KeyProduce, "request", 0, cat([]byte{0xff, 0xff, 0, 0, 0x75, 0x30}, classicHuge)},
		{"Produce request v9 topics", wire.KeyProduce, "request", 9, cat([]byte{0, 0xff, 0xff, 0, 0, 0x75, 0x30}, compactHuge)},
		{"Metadata request v9 topics", wire.KeyMetadata, "request", 9, compact2p31},
		{"Metadata response v0 brokers", wire.KeyMetadata, "response", 0, classicHuge},
		{"DescribeGroups request v0 []string", wire.KeyDescribeGroups, "request", 0, classicHuge},
		{"DescribeGroups request v5 []string", wire.KeyDescribeGroups, "request", 5, compactHuge},
		{"Fetch response v12 responses", wire.KeyFetch, "response", 12, cat(make([]byte, 10), compact2p31)},
		{"Fetch response v12 tag count", wire.KeyFetch, "response", 12, cat(make([]byte, 10), []byte{1}, compactHuge)},
		{"Fetch response v12 tag size", wire.KeyFetch, "response", 12, cat(make([]byte, 10), []byte{1, 1, 5}, compactHuge)},
		{"OffsetFetch request v1 []int32", wire.KeyOffsetFetch, "request", 1, cat([]byte{0, 1, 'g', 0, 0, 0, 1, 0, 1, 't'}, classicHuge)},
		{"ApiVersions response v3 api keys", wire.KeyApiVersions, "response", 3, cat([]byte{0, 0}, compactHuge)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api := wire.LookupAPI(c.key)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			start := time.Now()
			const rounds = 100
			var err error
			for range rounds {
				err = newMessage(api, c.kind).Decode(c.data, c.version)
				if err == nil {
					t.Fatalf("decoding %x succeeded", c.data)
				}
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&ms)
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			if per := (ms.TotalAlloc - before) / rounds; per > 4096 {
				t.Errorf("each failed decode of %d bytes allocated %d bytes", len(c.data), per)
			}
			if elapsed > time.Second { // ~1000x margin: a real count loop would take minutes
				t.Errorf("%d failed decodes took %v", rounds, elapsed)
			}
		})
	}
	t.Run("response header v1 tag count", func(t *testing.T) {
		var h wire.ResponseHeader
		if err := h.Decode(cat([]byte{0, 0, 0, 1}, compactHuge), 1); !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("request header v2 tag size", func(t *testing.T) {
		var h wire.RequestHeader
		if err := h.Decode(cat([]byte{0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 1, 0}, compactHuge), 2); !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestMutatedVectorsBounded applies hostile edits at every offset of every vector (an int32
// count of 2^31-1 written over the bytes, a huge uvarint inserted, a truncation) and checks the
// fuzz properties on each result, and that decoding all of them allocates no more than the
// budget for their total size.
func TestMutatedVectorsBounded(t *testing.T) {
	inserts := [][]byte{{0xff, 0xff, 0xff, 0xff, 0x0f}, {0x80, 0x80, 0x80, 0x80, 0x08}, {0x7f, 0xff, 0xff, 0xff}}
	worst := 0.0
	for _, kind := range kinds {
		for _, s := range vectorSeeds(t, kind) {
			api := wire.LookupAPI(s.key)
			var inputs [][]byte
			for i := 0; i <= len(s.data); i++ {
				if i+4 <= len(s.data) {
					b := bytes.Clone(s.data)
					copy(b[i:], inserts[2])
					inputs = append(inputs, b)
				}
				for _, ins := range inserts[:2] {
					inputs = append(inputs, bytes.Join([][]byte{s.data[:i], ins, s.data[i:]}, nil))
				}
			}
			total := 0
			for _, in := range inputs {
				total += len(in)
			}
			// Allocation of the decodes alone, measured exactly.
			alloc := leastAllocated(func() {
				for _, in := range inputs {
					_ = newMessage(api, kind).Decode(in, s.version)
				}
			})
			if ratio := float64(alloc) / float64(total); ratio > worst {
				worst = ratio
			}
			// Per decode: a constant (the message struct, the error) plus a linear part.
			if alloc > 32*uint64(total)+2048*uint64(len(inputs)) {
				t.Errorf("%s %s v%d: decoding %d mutated inputs (%d bytes) allocated %d bytes", api.Name, kind, s.version, len(inputs), total, alloc)
			}
			name := fmt.Sprintf("%s/%s/v%d", api.Name, kind, s.version)
			for _, in := range inputs {
				decodeStable(t, func() wire.Message { return newMessage(api, kind) }, s.version, in)
				if t.Failed() {
					t.Fatalf("%s: input %x", name, in)
				}
			}
		}
	}
	t.Logf("worst allocation: %.1f bytes per input byte (constant per-decode costs included)", worst)
}

// TestTruncatedVectorsFail checks that every strict prefix of every vector fails to decode
// (each vector decodes exactly, so a prefix always runs out of bytes) and never panics.
func TestTruncatedVectorsFail(t *testing.T) {
	for _, kind := range kinds {
		for _, s := range vectorSeeds(t, kind) {
			api := wire.LookupAPI(s.key)
			for n := 0; n < len(s.data); n++ {
				err := newMessage(api, kind).Decode(s.data[:n], s.version)
				if !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("%s %s v%d: prefix of %d/%d bytes: got %v, want ErrMalformed", api.Name, kind, s.version, n, len(s.data), err)
				}
			}
		}
	}
	for _, request := range []bool{true, false} {
		for _, s := range headerSeeds(t, request) {
			for n := 0; n < len(s.data); n++ {
				var err error
				if request {
					err = new(wire.RequestHeader).Decode(s.data[:n], s.version)
				} else {
					err = new(wire.ResponseHeader).Decode(s.data[:n], s.version)
				}
				if s.version == 0 && !request && n >= 4 {
					continue // a frame's header is only its first four bytes
				}
				if !errors.Is(err, wire.ErrMalformed) {
					t.Fatalf("header v%d prefix %d/%d: got %v", s.version, n, len(s.data), err)
				}
			}
		}
	}
}

// TestDecodeRejectsUnsupportedVersions checks that Decode refuses versions outside the window
// with ErrUnsupportedVersion instead of guessing.
func TestDecodeRejectsUnsupportedVersions(t *testing.T) {
	for i := range wire.APIs {
		api := &wire.APIs[i]
		for _, kind := range kinds {
			for _, v := range []int16{api.MinVersion - 1, api.MaxVersion + 1, -1, 0x7fff} {
				if api.HasVersion(v) {
					continue
				}
				if err := newMessage(api, kind).Decode(nil, v); !errors.Is(err, wire.ErrUnsupportedVersion) {
					t.Errorf("%s %s v%d: got %v, want ErrUnsupportedVersion", api.Name, kind, v, err)
				}
			}
		}
	}
}

// TestMinimalElementsDecode guards the other side of the array bound: the least element size
// a decoder assumes must never exceed the real least encoding, or valid messages would be
// refused. For every array reachable in every message, it builds a message whose array holds
// many elements at their defaults (the smallest encoding they have: empty strings and arrays,
// absent tagged fields) at the end of the path, and requires every version to decode it.
func TestMinimalElementsDecode(t *testing.T) {
	const n = 40
	for i := range wire.APIs {
		api := &wire.APIs[i]
		for _, kind := range kinds {
			for _, path := range arrayPaths(reflect.TypeOf(newMessage(api, kind)).Elem(), nil) {
				m := newMessage(api, kind)
				v := reflect.ValueOf(m).Elem()
				for depth, idx := range path {
					f := v.Field(idx)
					count := 1
					if depth == len(path)-1 {
						count = n
					}
					s := reflect.MakeSlice(f.Type(), count, count)
					for j := 0; j < count; j++ {
						if d := s.Index(j).Addr().MethodByName("Default"); d.IsValid() {
							d.Call(nil)
						}
					}
					f.Set(s)
					if depth < len(path)-1 {
						v = s.Index(0)
					}
				}
				for ver := api.MinVersion; ver <= api.MaxVersion; ver++ {
					b := m.AppendTo(nil, ver)
					back := newMessage(api, kind)
					if err := back.Decode(b, ver); err != nil {
						t.Errorf("%s %s v%d, %d minimal elements at %s: %v", api.Name, kind, ver, n, pathName(reflect.TypeOf(m).Elem(), path), err)
						continue
					}
					if again := back.AppendTo(nil, ver); !bytes.Equal(again, b) {
						t.Errorf("%s %s v%d at %s: round trip changed the bytes", api.Name, kind, ver, pathName(reflect.TypeOf(m).Elem(), path))
					}
				}
			}
		}
	}
}

// arrayPaths lists the field-index paths to every array field (of structs or primitives,
// not bytes) reachable from struct type t through struct arrays and struct values. A path
// through a struct value (not an array) is left out: the walk only descends arrays.
func arrayPaths(t reflect.Type, prefix []int) [][]int {
	var out [][]int
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Name == "UnknownTags" || sf.Type.Kind() != reflect.Slice || sf.Type.Elem().Kind() == reflect.Uint8 {
			continue
		}
		p := append(append([]int(nil), prefix...), i)
		out = append(out, p)
		if sf.Type.Elem().Kind() == reflect.Struct {
			out = append(out, arrayPaths(sf.Type.Elem(), p)...)
		}
	}
	return out
}

func pathName(t reflect.Type, path []int) string {
	var parts []string
	for _, idx := range path {
		sf := t.Field(idx)
		parts = append(parts, sf.Name)
		t = sf.Type.Elem()
	}
	return strings.Join(parts, ".")
}
