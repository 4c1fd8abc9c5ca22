package wire_test

// Data structures (schema `data`: no API key, no header, not in the registry) get the message
// vectors' treatment: one golden vector per structure and version
// (../vectors/data/<name>/v<N>.json, <name> in snake case), checked byte for byte against our
// codec and franz-go's kmsg, plus random agreement rounds with kmsg. TestGoldenVectors -update
// rewrites them with the rest; alone:
//
//	go test ./wire -run TestGoldenDataVectors -update

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/protocol-spec/internal/randfill"
	"github.com/spoolmq/spool/protocol-spec/schema"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

const dataDir = "../vectors/data"

// dataVector is the file format of vectors/data/<name>/v<N>.json. Hex is the bytes as they
// travel: the int16 version, then the structure at that version.
type dataVector struct {
	Data    string          `json:"data"`
	Version int16           `json:"version"`
	Hex     string          `json:"hex"`
	Value   json.RawMessage `json:"value"`
}

// versionedData is a generated version-prefixed data structure.
type versionedData interface {
	wire.DataMessage
	Decode(b []byte, v int16) error
	AppendVersioned(b []byte, v int16) []byte
	DecodeVersioned(b []byte) (int16, error)
}

// kmsgData is kmsg's counterpart of a data structure; it keeps its version in a field.
type kmsgData interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

// dataType ties a data structure of ours to kmsg's.
type dataType struct {
	name       string
	min, max   int16
	fresh      func() versionedData
	kmsg       func() kmsgData
	setVersion func(k kmsgData, v int16)
}

var dataTypes = []dataType{
	{
		name: "ConsumerProtocolAssignment", min: wire.ConsumerProtocolAssignmentMinVersion, max: wire.ConsumerProtocolAssignmentMaxVersion,
		fresh: func() versionedData { return new(wire.ConsumerProtocolAssignment) },
		kmsg:  func() kmsgData { k := kmsg.NewConsumerMemberAssignment(); return &k },
		setVersion: func(k kmsgData, v int16) {
			k.(*kmsg.ConsumerMemberAssignment).Version = v
		},
	},
	{
		name: "ConsumerProtocolSubscription", min: wire.ConsumerProtocolSubscriptionMinVersion, max: wire.ConsumerProtocolSubscriptionMaxVersion,
		fresh: func() versionedData { return new(wire.ConsumerProtocolSubscription) },
		kmsg:  func() kmsgData { k := kmsg.NewConsumerMemberMetadata(); return &k },
		setVersion: func(k kmsgData, v int16) {
			k.(*kmsg.ConsumerMemberMetadata).Version = v
		},
	},
}

func dataVectorFile(d dataType, v int16) string {
	return filepath.Join(snakeName(d.name), fmt.Sprintf("v%d.json", v))
}

// TestDataTypesMatchSpec keeps dataTypes in step with the schemas: every data structure of
// messages/*.spool is here with its versions, and each is version-prefixed (the only kind these
// tests know how to frame).
func TestDataTypesMatchSpec(t *testing.T) {
	spec, err := schema.LoadDir("../messages")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range spec.Data {
		names = append(names, d.Name)
		i := slices.IndexFunc(dataTypes, func(dt dataType) bool { return dt.name == d.Name })
		if i < 0 {
			t.Errorf("data %s (%s) has no entry in dataTypes, so no vectors", d.Name, d.File)
			continue
		}
		if dt := dataTypes[i]; dt.min != d.Versions.Lo || dt.max != d.Versions.Hi || !d.VersionPrefix {
			t.Errorf("data %s: schema versions %s prefix %v, dataTypes %d-%d", d.Name, d.Versions, d.VersionPrefix, dt.min, dt.max)
		}
	}
	for _, dt := range dataTypes {
		if !slices.Contains(names, dt.name) {
			t.Errorf("dataTypes has %s, the schemas do not", dt.name)
		}
	}
	// Data structures are not APIs: nothing about them may reach the registry (ApiVersions).
	for _, a := range wire.APIs {
		if slices.Contains(names, a.Name) {
			t.Errorf("data %s is in the API registry", a.Name)
		}
	}
}

// generateDataVector builds the vector of one structure and version from a fixed seed, made
// readable by the humanizer, then decoded again so that the value is what a decoder sees.
func generateDataVector(d dataType, v int16) (dataVector, error) {
	seed := seedFor(fmt.Sprintf("%s/v%d", d.name, v))
	m := d.fresh()
	f := randfill.New(seed)
	f.MaxElems = 2
	f.Fill(m)
	h := &humanizer{rng: rand.New(rand.NewPCG(seed, seed>>1|1)), v: v}
	h.walk(reflect.ValueOf(m).Elem())
	b := m.AppendVersioned(nil, v)
	back := d.fresh()
	if got, err := back.DecodeVersioned(b); err != nil || got != v {
		return dataVector{}, fmt.Errorf("%s v%d: decoding the generated value: version %d, %v", d.name, v, got, err)
	}
	if again := back.AppendVersioned(nil, v); !bytes.Equal(again, b) {
		return dataVector{}, fmt.Errorf("%s v%d: the generated value does not round trip\nfirst:  %x\nsecond: %x", d.name, v, b, again)
	}
	val, err := compactJSON(back)
	if err != nil {
		return dataVector{}, err
	}
	return dataVector{Data: d.name, Version: v, Hex: hex.EncodeToString(b), Value: val}, nil
}

func expectedDataFiles() map[string]struct {
	d dataType
	v int16
} {
	out := map[string]struct {
		d dataType
		v int16
	}{}
	for _, d := range dataTypes {
		for v := d.min; v <= d.max; v++ {
			out[dataVectorFile(d, v)] = struct {
				d dataType
				v int16
			}{d, v}
		}
	}
	return out
}

func writeDataVectors(t *testing.T) {
	t.Helper()
	want := expectedDataFiles()
	for name, e := range want {
		vec, err := generateDataVector(e.d, e.v)
		if err != nil {
			t.Fatal(err)
		}
		data, err := canonicalJSON(vec)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dataDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range listJSON(t, dataDir) {
		if _, ok := want[name]; !ok {
			if err := os.Remove(filepath.Join(dataDir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGoldenDataVectors checks every committed data vector against our codec and kmsg, and that
// the files cover every data structure and version and nothing else.
func TestGoldenDataVectors(t *testing.T) {
	if *update {
		writeDataVectors(t)
	}
	want := expectedDataFiles()
	have := listJSON(t, dataDir)
	for _, name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected data vector file %s (run with -update)", name)
		}
	}
	for name := range want {
		if !slices.Contains(have, name) {
			t.Errorf("no data vector %s (run with -update)", name)
		}
	}
	for _, name := range have {
		e, ok := want[name]
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) { checkDataVector(t, name, e.d, e.v) })
	}
}

func checkDataVector(t *testing.T, name string, d dataType, v int16) {
	raw, err := os.ReadFile(filepath.Join(dataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var vec dataVector
	if err := strictUnmarshal(raw, &vec); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if vec.Data != d.name || vec.Version != v {
		t.Fatalf("file says %s v%d, its path says %s v%d", vec.Data, vec.Version, d.name, v)
	}
	if canon, err := canonicalJSON(vec); err != nil || !bytes.Equal(canon, raw) {
		t.Errorf("file is not in canonical form (run with -update): %v", err)
	}
	b, err := hex.DecodeString(vec.Hex)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}

	// Ours, decoding: the prefix names the version, the rest gives the value with nothing left.
	m := d.fresh()
	if got, err := m.DecodeVersioned(b); err != nil || got != v {
		t.Fatalf("DecodeVersioned: version %d, %v", got, err)
	}
	if err := decodeWhole(d.fresh(), b[2:], v); err != nil {
		t.Fatalf("decoding the body: %v", err)
	}
	got, err := compactJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	if same, err := sameJSON(got, vec.Value); err != nil || !same {
		t.Errorf("decoding the hex does not give the value (err %v)\nwant: %s\ngot:  %s", err, compactOrRaw(vec.Value), got)
	}

	// Ours, encoding: the value gives the hex.
	fromValue := d.fresh()
	if err := strictUnmarshal(vec.Value, fromValue); err != nil {
		t.Fatalf("the value does not fit %T: %v", fromValue, err)
	}
	if enc := fromValue.AppendVersioned(nil, v); !bytes.Equal(enc, b) {
		t.Errorf("encoding the value does not give the hex\nwant: %x\ngot:  %x", b, enc)
	}

	// kmsg reads the hex (version prefix included) and writes it back unchanged.
	k := d.kmsg()
	if err := k.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot decode the hex: %v", err)
	}
	if back := k.AppendTo(nil); !bytes.Equal(back, b) {
		t.Errorf("kmsg re-encodes the hex differently\nwant: %x\nkmsg: %x", b, back)
	}
}

// TestDataVectorGeneratorDeterministic proves that -update reproduces its own output.
func TestDataVectorGeneratorDeterministic(t *testing.T) {
	for name, e := range expectedDataFiles() {
		a, errA := generateDataVector(e.d, e.v)
		b, errB := generateDataVector(e.d, e.v)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		ja, _ := canonicalJSON(a)
		jb, _ := canonicalJSON(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: two generations differ", name)
		}
	}
}

// TestDataKmsgAgreement: random values of every data structure at every version agree with
// kmsg byte for byte, in both directions.
func TestDataKmsgAgreement(t *testing.T) {
	for _, d := range dataTypes {
		for v := d.min; v <= d.max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", d.name, v), func(t *testing.T) {
				for round := range crossCheckRounds {
					seed := seedFor(d.name)<<8 ^ uint64(v)<<16 ^ uint64(round)

					m := d.fresh()
					randfill.New(seed).Fill(m)
					b := m.AppendVersioned(nil, v)
					k := d.kmsg()
					if err := k.ReadFrom(b); err != nil {
						t.Fatalf("seed %d: kmsg cannot decode ours: %v\n%x", seed, err, b)
					}
					if back := k.AppendTo(nil); !bytes.Equal(back, b) {
						t.Fatalf("seed %d: kmsg re-encodes ours differently\nours: %x\nkmsg: %x", seed, b, back)
					}

					k = d.kmsg()
					randfill.New(seed ^ 0xabcdef).Fill(k)
					d.setVersion(k, v)
					b = k.AppendTo(nil)
					m = d.fresh()
					if got, err := m.DecodeVersioned(b); err != nil || got != v {
						t.Fatalf("seed %d: we cannot decode kmsg's encoding: version %d, %v\n%x", seed, got, err, b)
					}
					if back := m.AppendVersioned(nil, v); !bytes.Equal(back, b) {
						t.Fatalf("seed %d: we re-encode kmsg's differently\nkmsg: %x\nours: %x", seed, b, back)
					}
				}
			})
		}
	}
}

// TestDataVersionPrefix pins the framing rules of version-prefixed data: a newer version than
// we know is read as the newest we know (its extra fields ignored), a negative version and
// short input are malformed, Decode refuses versions outside the schema, and a huge count fails
// without allocating for it.
func TestDataVersionPrefix(t *testing.T) {
	rack := "rack-a"
	sub := wire.ConsumerProtocolSubscription{Topics: []string{"orders"}, GenerationId: 4, RackId: &rack,
		OwnedPartitions: []wire.ConsumerProtocolSubscriptionTopicPartition{{Topic: "orders", Partitions: []int32{0, 2}}}}
	newest := sub.AppendVersioned(nil, wire.ConsumerProtocolSubscriptionMaxVersion)

	future := wire.AppendInt16(nil, 9)
	future = append(future, newest[2:]...)
	future = wire.AppendInt64(future, 77) // a field of version 9
	var got wire.ConsumerProtocolSubscription
	v, err := got.DecodeVersioned(future)
	if err != nil || v != 9 {
		t.Fatalf("version 9: version %d, %v", v, err)
	}
	if g, w := got.AppendTo(nil, wire.ConsumerProtocolSubscriptionMaxVersion), newest[2:]; !bytes.Equal(g, w) {
		t.Fatalf("version 9 read as %x, want the v%d fields %x", g, wire.ConsumerProtocolSubscriptionMaxVersion, w)
	}

	asg := wire.ConsumerProtocolAssignment{AssignedPartitions: []wire.ConsumerProtocolAssignmentTopicPartition{{Topic: "orders", Partitions: []int32{1}}}}
	asgBytes := asg.AppendVersioned(nil, 0)
	for _, d := range dataTypes {
		good := newest
		if d.name == "ConsumerProtocolAssignment" {
			good = asgBytes
		}
		for name, b := range map[string][]byte{
			"empty":            nil,
			"one byte":         {0},
			"negative version": {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
			"truncated":        good[:len(good)-1],
			"huge count":       {0, 0, 0x7f, 0xff, 0xff, 0xff},
		} {
			if _, err := d.fresh().DecodeVersioned(b); !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("%s, %s: %v, want an error wrapping ErrMalformed", d.name, name, err)
			}
		}
	}

	var s wire.ConsumerProtocolSubscription
	if err := s.Decode(newest[2:], 4); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Errorf("Decode at v4: %v, want ErrUnsupportedVersion", err)
	}
	if err := s.Decode(newest[2:], 3); err != nil || s.GenerationId != 4 || s.RackId == nil || *s.RackId != rack {
		t.Errorf("Decode at v3: %+v, %v", s, err)
	}
	// A field a version lacks reads as its default: GenerationId is -1 before v2.
	if _, err := s.DecodeVersioned(sub.AppendVersioned(nil, 1)); err != nil || s.GenerationId != -1 || s.RackId != nil || len(s.OwnedPartitions) != 1 {
		t.Errorf("v1: %+v, %v", s, err)
	}
}

// FuzzDataVersioned decodes arbitrary bytes as each version-prefixed data structure: never a
// panic, bounded allocation, and a stable re-encoding of whatever decodes.
func FuzzDataVersioned(f *testing.F) {
	for _, name := range listJSON(f, dataDir) {
		raw, err := os.ReadFile(filepath.Join(dataDir, name))
		if err != nil {
			f.Fatal(err)
		}
		var vec dataVector
		if err := json.Unmarshal(raw, &vec); err != nil {
			f.Fatal(err)
		}
		b, err := hex.DecodeString(vec.Hex)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(slices.IndexFunc(dataTypes, func(d dataType) bool { return d.name == vec.Data })), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		d := dataTypes[int(which)%len(dataTypes)]
		v, err := d.fresh().DecodeVersioned(data)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		decodeStable(t, func() wire.DataMessage { return d.fresh() }, min(v, d.max), data[2:])
	})
}
