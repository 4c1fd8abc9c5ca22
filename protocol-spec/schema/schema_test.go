package schema

import (
	"strings"
	"testing"
)

func TestParseErrorsNameTheLine(t *testing.T) {
	header := "api 99 Thing\nversions 0-3\nflexible 2+\n\nrequest\n"
	cases := map[string]string{
		"bad type indentation":   header + "  A int32 0+\n   B int32 0+\nresponse\n",
		"unknown attribute":      header + "  A int32 0+ shiny\nresponse\n",
		"nullable int":           header + "  A int32 0+ nullable=0+\nresponse\n",
		"tag outside flexible":   header + "  A int32 0+ tag=0\nresponse\n",
		"duplicate tag":          header + "  A int32 2+ tag=0\n  B int32 2+ tag=0\nresponse\n",
		"duplicate field":        header + "  A int32 0+\n  A int32 0+\nresponse\n",
		"bad range":              header + "  A int32 3-1\nresponse\n",
		"empty struct":           header + "  A []Thing 0+\nresponse\n",
		"missing response":       header + "  A int32 0+\n",
		"zerocopy on int":        header + "  A int32 0+ zerocopy\nresponse\n",
		"open versions":          "api 99 Thing\nversions 0+\nflexible none\nrequest\nresponse\n",
		"tabs":                   header + "\tA int32 0+\nresponse\n",
		"unknown directive":      "api 99 Thing\nversions 0-1\nflexible none\ncolour blue\nrequest\nresponse\n",
		"lower-case struct type": header + "  A []thing 0+\n    B int32 0+\nresponse\n",
		"data without name":      "data\nversions 0-1\nflexible none\nfields\n  A int32 0+\n",
		"data lower-case name":   "data thing\nversions 0-1\nflexible none\nfields\n  A int32 0+\n",
		"data unknown directive": "data Thing\nversions 0-1\nflexible none\napi-key 3\nfields\n  A int32 0+\n",
		"data prefix value":      "data Thing\nversions 0-1\nflexible none\nversion-prefix int32\nfields\n  A int32 0+\n",
		"data without fields":    "data Thing\nversions 0-1\nflexible none\n",
		"data open versions":     "data Thing\nversions 0+\nflexible none\nfields\n  A int32 0+\n",
		"data twice-used struct": "data Thing\nversions 0-1\nflexible none\nfields\n  A []S 0+\n    X int8 0+\n  B []S 0+\n    Y int8 0+\n",
	}
	for name, src := range cases {
		err := parse(&Spec{}, "thing.spool", strings.NewReader(src))
		if err == nil {
			t.Errorf("%s: parsed without error", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "thing.spool") {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
	}
}

func TestParseModel(t *testing.T) {
	src := `# A doc line.
api 99 Thing
versions 0-4
flexible 3+

request
  Name string 0+ nullable=1+ default=null   // the name
  Items []Item 2+
    Id int32 2+ default=-1
  Extra bool 3+ tag=0 default=true

response
  Error int16 0+
`
	spec := &Spec{}
	if err := parse(spec, "thing.spool", strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	a := spec.APIs[0]
	if a.Key != 99 || a.Name != "Thing" || a.Versions != (Range{0, 4}) || a.Flexible != (Range{3, Open}) || a.Doc != "A doc line." {
		t.Fatalf("api: %+v", a)
	}
	f := a.Request.Struct.Fields
	if f[0].Nullable != (Range{1, Open}) || f[0].Default != "null" || f[0].Doc != "the name" {
		t.Errorf("Name: %+v", f[0])
	}
	if f[1].Type.Kind != StructArray || f[1].Type.Struct.Fields[0].Default != "-1" {
		t.Errorf("Items: %+v", f[1])
	}
	if f[2].Tag != 0 || f[2].Tagged != (Range{3, Open}) {
		t.Errorf("Extra: %+v", f[2])
	}
	if got := (Range{2, Open}).Intersect(a.Versions); got != (Range{2, 4}) {
		t.Errorf("Intersect = %v", got)
	}
	if s := (Range{2, Open}).String() + " " + (Range{1, 3}).String() + " " + None.String(); s != "2+ 1-3 none" {
		t.Errorf("String = %q", s)
	}
}

func TestParseData(t *testing.T) {
	src := `# Opaque bytes inside another message.
data Thing
versions 0-2
flexible none
version-prefix

fields
  Names []string 0+
  Owned []Part 1+
    Id int32 1+
  Gen int32 2+ default=-1

data Other
versions 0-0
flexible none

fields
  A int8 0+
`
	spec := &Spec{}
	if err := parse(spec, "thing.spool", strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	if len(spec.APIs) != 0 || len(spec.Headers) != 0 || len(spec.Data) != 2 {
		t.Fatalf("parsed %d APIs, %d headers, %d data, want 0, 0, 2", len(spec.APIs), len(spec.Headers), len(spec.Data))
	}
	d := spec.DataType("Thing")
	if d == nil || d.Versions != (Range{0, 2}) || !d.Flexible.Empty() || !d.VersionPrefix || d.Doc != "Opaque bytes inside another message." {
		t.Fatalf("Thing: %+v", d)
	}
	f := d.Fields.Fields
	if len(f) != 3 || f[1].Type.Kind != StructArray || f[1].Type.Struct.Fields[0].Name != "Id" || f[2].Default != "-1" {
		t.Fatalf("Thing fields: %+v", f)
	}
	if o := spec.DataType("Other"); o == nil || o.VersionPrefix {
		t.Fatalf("Other: %+v", o)
	}
	if spec.DataType("Nothing") != nil {
		t.Fatal("DataType found a name that is not there")
	}
}
