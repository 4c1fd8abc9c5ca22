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
