package compress

import (
	"bytes"
	"strings"
	"testing"
)

// Every level Kafka accepts compresses and decompresses back; Kafka's defaults give exactly
// what Compress gives; the levels are applied (the codec's highest level compresses smaller
// than its lowest); levels outside Kafka's ranges are refused with the range.
func TestCompressLevel(t *testing.T) {
	src := testData(48<<10, 21) // small: the deepest LZ4 and zstd levels are slow
	for _, tc := range []struct {
		c          Codec
		levels     []int
		def        int
		low, high  int
		outOfRange []int
	}{
		{Gzip, []int{-1, 1, 2, 3, 4, 5, 6, 7, 8, 9}, -1, 1, 9, []int{-2, 10, 100}},
		{LZ4, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, 9, 1, 17, []int{-1, 18}},
		{Zstd, []int{-131072, -5, -1, 1, 2, 3, 4, 6, 9, 10, 19, 22}, 3, -5, 19, []int{-131073, 23}},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			size := map[int]int{}
			for _, l := range tc.levels {
				comp, err := CompressLevel([]byte("prefix"), src, tc.c, l)
				if err != nil {
					t.Fatalf("level %d: %v", l, err)
				}
				if !bytes.HasPrefix(comp, []byte("prefix")) {
					t.Fatalf("level %d: dst's contents not kept", l)
				}
				got, err := Decompress(nil, comp[len("prefix"):], tc.c, len(src))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("level %d: round trip: %v (equal %v)", l, err, bytes.Equal(got, src))
				}
				size[l] = len(comp)
			}
			def, err := Compress(nil, src, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []int{0, tc.def} {
				at, err := CompressLevel(nil, src, tc.c, l)
				if err != nil || !bytes.Equal(at, def) {
					t.Errorf("level %d is not the default level (%d bytes, Compress gives %d; %v)", l, len(at), len(def), err)
				}
			}
			if size[tc.high] >= size[tc.low] {
				t.Errorf("level %d gives %d bytes, level %d %d: the level is not applied", tc.high, size[tc.high], tc.low, size[tc.low])
			}
			for _, l := range append(tc.outOfRange, 0) {
				err := CheckLevel(tc.c, l)
				_, cerr := CompressLevel(nil, src, tc.c, l)
				if l == 0 && tc.c != Gzip {
					if err != nil && tc.c == Zstd {
						t.Errorf("zstd level 0 (zstd's default) refused: %v", err)
					}
					continue
				}
				if l == 0 { // gzip: 0 is not a Kafka level, but CompressLevel reads 0 as the default
					if err == nil || cerr != nil {
						t.Errorf("gzip level 0: CheckLevel %v, CompressLevel %v", err, cerr)
					}
					continue
				}
				if err == nil || cerr == nil {
					t.Errorf("level %d accepted (CheckLevel %v, CompressLevel %v)", l, err, cerr)
				} else if !strings.Contains(err.Error(), "level") {
					t.Errorf("level %d: error %q does not say what is wrong", l, err)
				}
			}
		})
	}
	for _, c := range []Codec{None, Snappy} {
		if _, _, _, ok := LevelRange(c); ok {
			t.Errorf("%s has a level range", c)
		}
		comp, err := CompressLevel(nil, src, c, 5)
		def, _ := Compress(nil, src, c)
		if err != nil || !bytes.Equal(comp, def) {
			t.Errorf("%s: a level changes the output or fails: %v", c, err)
		}
	}
}
