package compress

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var codecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

// testData returns n bytes that compress somewhat, like typical record payloads.
func testData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"spool", "kafka", "record", "batch", "offset", "{\"id\":", "\"value\":", "}", " ", "\n"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		if r.IntN(8) == 0 {
			b = append(b, byte(r.Uint32()))
			continue
		}
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

func TestCodecNames(t *testing.T) {
	for _, c := range codecs {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCodec(%q) = %v, %v", c.String(), got, err)
		}
		if !c.Valid() {
			t.Errorf("%v not valid", c)
		}
	}
	if s := Codec(7).String(); s != "codec(7)" {
		t.Errorf("Codec(7).String() = %q", s)
	}
	if Codec(5).Valid() || Codec(-1).Valid() {
		t.Error("codec 5 or -1 valid")
	}
	if _, err := ParseCodec("brotli"); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("ParseCodec(brotli) error %v", err)
	}
	if _, err := Compress(nil, []byte("x"), 5); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("Compress codec 5: %v", err)
	}
	if _, err := Decompress(nil, []byte("x"), 5, 10); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("Decompress codec 5: %v", err)
	}
	if _, err := Decompress(nil, []byte("x"), None, -1); err == nil {
		t.Error("negative limit accepted")
	}
}

func TestRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 100, 4096, 64<<10 - 1, 64 << 10, 64<<10 + 1, 300 << 10, 1 << 20}
	for _, c := range codecs {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%v/%d", c, n), func(t *testing.T) {
				src := testData(n, uint64(n))
				prefix := []byte("prefix")
				comp, err := Compress(append([]byte(nil), prefix...), src, c)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(comp[:len(prefix)], prefix) {
					t.Fatal("Compress clobbered dst")
				}
				got, err := Decompress(append([]byte(nil), prefix...), comp[len(prefix):], c, n)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], src) {
					t.Fatalf("round trip mismatch: %d bytes back, want %d", len(got)-len(prefix), n)
				}
				if n > 0 {
					if _, err := Decompress(nil, comp[len(prefix):], c, n-1); !errors.Is(err, ErrLimit) {
						t.Fatalf("limit %d for %d bytes: err %v", n-1, n, err)
					}
				}
			})
		}
	}
}

func TestEmittedFraming(t *testing.T) {
	src := testData(200<<10, 7)
	lz, _ := Compress(nil, src, LZ4)
	if !bytes.HasPrefix(lz, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}) {
		t.Errorf("lz4 frame starts % x, want 04 22 4d 18 60 40", lz[:6])
	}
	sn, _ := Compress(nil, src, Snappy)
	if IsXerial(sn) {
		t.Error("snappy output is xerial-framed, want a raw block")
	}
	gz, _ := Compress(nil, src, Gzip)
	if !bytes.HasPrefix(gz, []byte{0x1f, 0x8b, 8}) {
		t.Errorf("gzip starts % x", gz[:3])
	}
	zs, _ := Compress(nil, src, Zstd)
	var h zstd.Header
	if err := h.Decode(zs); err != nil || !h.HasFCS || h.FrameContentSize != uint64(len(src)) {
		t.Errorf("zstd header %+v, %v: want a declared content size", h, err)
	}
	// Empty inputs still give a decodable stream of each codec.
	for _, c := range codecs[1:] {
		out, err := Compress(nil, nil, c)
		if err != nil || len(out) == 0 {
			t.Errorf("%v of nothing: %d bytes, %v", c, len(out), err)
		}
	}
}

func TestGzipMultiMember(t *testing.T) {
	a, b := testData(5000, 1), testData(7000, 2)
	var buf bytes.Buffer
	w := stdgzip.NewWriter(&buf)
	w.Name = "x.txt" // optional header fields must be skipped
	w.Comment = "c"
	w.Write(a)
	w.Close()
	w2, _ := stdgzip.NewWriterLevel(&buf, stdgzip.BestCompression)
	w2.Write(b)
	w2.Close()
	got, err := Decompress(nil, buf.Bytes(), Gzip, 12000)
	if err != nil || !bytes.Equal(got, append(append([]byte(nil), a...), b...)) {
		t.Fatalf("multi-member gzip: %d bytes, %v", len(got), err)
	}
	if _, err := Decompress(nil, buf.Bytes(), Gzip, 11999); !errors.Is(err, ErrLimit) {
		t.Fatalf("multi-member over limit: %v", err)
	}
}

func TestXerial(t *testing.T) {
	for _, n := range []int{0, 1, 32 << 10, 100 << 10} {
		for _, bs := range []int{0, 1000, 64 << 10} {
			src := testData(n, uint64(n+bs))
			x := AppendXerial([]byte{9}, src, bs)[1:]
			if !IsXerial(x) || !bytes.Equal(x[8:16], []byte{0, 0, 0, 1, 0, 0, 0, 1}) {
				t.Fatalf("xerial header % x", x[:16])
			}
			got, err := Decompress(nil, x, Snappy, n)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("xerial n=%d bs=%d: %d bytes, %v", n, bs, len(got), err)
			}
			if n > 0 {
				if _, err := Decompress(nil, x, Snappy, n-1); !errors.Is(err, ErrLimit) {
					t.Fatalf("xerial over limit: %v", err)
				}
			}
		}
	}
	// A header alone is a valid empty stream; a partial header or chunk is not.
	x := AppendXerial(nil, nil, 0)
	if got, err := Decompress(nil, x, Snappy, 0); err != nil || len(got) != 0 {
		t.Errorf("empty xerial: %q, %v", got, err)
	}
	for _, bad := range [][]byte{x[:12], append(x, 0, 0), append(x, 0, 0, 0, 9, 1)} {
		if _, err := Decompress(nil, bad, Snappy, 100); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad xerial % x: %v", bad, err)
		}
	}
}

func TestLZ4Variants(t *testing.T) {
	src := testData(5<<20, 3)
	cases := []struct {
		f       LZ4Frame
		flg, bd byte
	}{
		{LZ4Frame{}, 0x60, 0x40},
		{LZ4Frame{ContentSize: true}, 0x68, 0x40},
		{LZ4Frame{ContentChecksum: true}, 0x64, 0x40},
		{LZ4Frame{ContentChecksum: true, BlockSize: 4 << 20}, 0x64, 0x70},
		{LZ4Frame{BlockChecksum: true}, 0x70, 0x40},
		{LZ4Frame{BlockSize: 256 << 10}, 0x60, 0x50},
		{LZ4Frame{BlockSize: 1 << 20, ContentSize: true, ContentChecksum: true, BlockChecksum: true}, 0x7c, 0x60},
	}
	for _, tc := range cases {
		fr, err := AppendLZ4Frame(nil, src, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if fr[4] != tc.flg || fr[5] != tc.bd {
			t.Errorf("%+v: FLG/BD %#x/%#x, want %#x/%#x", tc.f, fr[4], fr[5], tc.flg, tc.bd)
		}
		got, err := Decompress(nil, fr, LZ4, len(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%+v: %d bytes, %v", tc.f, len(got), err)
		}
		if _, err := Decompress(nil, fr, LZ4, len(src)-1); !errors.Is(err, ErrLimit) {
			t.Errorf("%+v over limit: %v", tc.f, err)
		}
		// A flipped content byte breaks a checksummed frame.
		if tc.f.ContentChecksum || tc.f.BlockChecksum {
			bad := bytes.Clone(fr)
			bad[len(bad)/2] ^= 0x55
			if _, err := Decompress(nil, bad, LZ4, len(src)); err == nil {
				t.Errorf("%+v: corrupted frame accepted", tc.f)
			}
		}
	}
	if _, err := AppendLZ4Frame(nil, src, LZ4Frame{BlockSize: 1000}); err == nil {
		t.Error("block size 1000 accepted")
	}
	// A wrong header checksum (HC) is rejected.
	fr, _ := AppendLZ4Frame(nil, src[:1000], LZ4Frame{})
	fr[6] ^= 1
	if _, err := Decompress(nil, fr, LZ4, 1000); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad HC: %v", err)
	}
}

func TestZstdFramings(t *testing.T) {
	a, b := testData(70000, 4), testData(3000, 5)
	// A streamed frame declares no content size.
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	w.Write(a[:1000])
	w.Flush() // a flushed stream cannot declare its size
	w.Write(a[1000:])
	w.Close()
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("stream header %+v, %v", h, err)
	}
	got, err := Decompress(nil, buf.Bytes(), Zstd, len(a))
	if err != nil || !bytes.Equal(got, a) {
		t.Fatalf("zstd without size: %d, %v", len(got), err)
	}
	if _, err := Decompress(nil, buf.Bytes(), Zstd, len(a)-1); !errors.Is(err, ErrLimit) {
		t.Fatalf("zstd without size over limit: %v", err)
	}
	// Two frames, each with a size.
	two, _ := Compress(nil, a, Zstd)
	two, _ = Compress(two, b, Zstd)
	want := append(append([]byte(nil), a...), b...)
	got, err = Decompress([]byte("p"), two, Zstd, len(want))
	if err != nil || !bytes.Equal(got[1:], want) {
		t.Fatalf("two zstd frames: %d, %v", len(got), err)
	}
	if _, err := Decompress(nil, two, Zstd, len(want)-1); !errors.Is(err, ErrLimit) {
		t.Fatalf("two frames over limit: %v", err)
	}
}

// TestBombs feeds inputs that expand enormously and checks that each stops at the limit
// without allocating anywhere near the expanded size.
func TestBombs(t *testing.T) {
	zeros := make([]byte, 64<<20)
	const limit = 1 << 20
	for _, c := range codecs[1:] {
		comp, err := Compress(nil, zeros, c)
		if err != nil {
			t.Fatal(err)
		}
		if c == Snappy {
			x := AppendXerial(nil, zeros, 1<<20)
			testBomb(t, "xerial", x, c, limit)
		}
		if c == Zstd {
			var buf bytes.Buffer
			w, _ := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
			w.Write(zeros)
			w.Close()
			testBomb(t, "zstd-stream", buf.Bytes(), c, limit)
		}
		testBomb(t, c.String(), comp, c, limit)
	}
}

func testBomb(t *testing.T, name string, comp []byte, c Codec, limit int) {
	t.Helper()
	Decompress(nil, comp, c, limit) // warm pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decompress(nil, comp, c, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLimit) {
		t.Errorf("%s bomb (%d bytes): %v", name, len(comp), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("%s bomb allocated %d bytes for a %d limit", name, alloc, limit)
	}
}

// TestMalformed truncates and corrupts valid streams of every codec: each must give an error or
// some output, never a panic (panics are not recovered here).
func TestMalformed(t *testing.T) {
	recoverPanics = false
	defer func() { recoverPanics = true }()
	src := testData(3000, 9)
	var streams [][]byte
	var scodecs []Codec
	for _, c := range codecs[1:] {
		comp, _ := Compress(nil, src, c)
		streams, scodecs = append(streams, comp), append(scodecs, c)
	}
	for _, f := range []LZ4Frame{{ContentSize: true, ContentChecksum: true, BlockChecksum: true}} {
		fr, _ := AppendLZ4Frame(nil, src, f)
		streams, scodecs = append(streams, fr), append(scodecs, LZ4)
	}
	streams, scodecs = append(streams, AppendXerial(nil, src, 1000)), append(scodecs, Snappy)
	r := rand.New(rand.NewPCG(1, 2))
	for i, s := range streams {
		c := scodecs[i]
		for n := 0; n < len(s); n++ {
			if out, err := Decompress(nil, s[:n], c, 1<<20); err == nil && bytes.Equal(out, src) {
				t.Errorf("%v truncated to %d of %d bytes decoded in full", c, n, len(s))
			}
		}
		for range 2000 {
			bad := bytes.Clone(s)
			for range 1 + r.IntN(3) {
				bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			}
			Decompress(nil, bad, c, 1<<20)
		}
	}
	for _, c := range codecs[1:] {
		for _, junk := range [][]byte{nil, {0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0x80}, 40)} {
			if _, err := Decompress(nil, junk, c, 1<<20); err == nil && c != Snappy {
				t.Errorf("%v accepted junk % x", c, junk)
			}
		}
	}
}

func TestDecompressAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need sync.Pool to keep its items (no -race, no -short)")
	}
	src := testData(256<<10, 11)
	for _, c := range codecs {
		comp, _ := Compress(nil, src, c)
		dst := make([]byte, 0, len(src)+1)
		Decompress(dst, comp, c, len(src))
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := Decompress(dst, comp, c, len(src)); err != nil {
				t.Fatal(err)
			}
		})
		// gzip and lz4 readers keep small per-stream state; nothing scales with the data.
		if allocs > 2 {
			t.Errorf("%v: %.1f allocations per Decompress", c, allocs)
		}
		out := make([]byte, 0, 2*len(src))
		Compress(out, src, c)
		allocs = testing.AllocsPerRun(20, func() { Compress(out, src, c) })
		if allocs > 2 {
			t.Errorf("%v: %.1f allocations per Compress", c, allocs)
		}
	}
}

// The FuzzDecompress targets check that no input makes a decoder panic, exceed the limit or
// fail without ErrCorrupt or ErrLimit. Pooled decoders make coverage vary from run to run,
// which stalls the fuzzer's minimization: run them with a short -fuzzminimizetime, e.g.
//
//	go test ./wire/compress -run XXX -fuzz '^FuzzDecompressZstd$' -fuzztime 60s -fuzzminimizetime 2s
func fuzzDecompress(f *testing.F, c Codec, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	for _, n := range []int{0, 10, 5000} {
		comp, _ := Compress(nil, testData(n, uint64(n)), c)
		f.Add(comp)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		recoverPanics = false
		defer func() { recoverPanics = true }()
		const limit = 1 << 20
		out, err := Decompress([]byte("pre"), in, c, limit)
		if string(out[:3]) != "pre" {
			t.Fatalf("prefix clobbered")
		}
		if err == nil && len(out)-3 > limit {
			t.Fatalf("%d bytes out, limit %d", len(out)-3, limit)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrLimit) {
			t.Fatalf("error %v wraps neither ErrCorrupt nor ErrLimit", err)
		}
	})
}

func FuzzDecompressGzip(f *testing.F) { fuzzDecompress(f, Gzip) }

func FuzzDecompressSnappy(f *testing.F) {
	fuzzDecompress(f, Snappy, AppendXerial(nil, testData(3000, 1), 1000))
}

func FuzzDecompressLZ4(f *testing.F) {
	fr, _ := AppendLZ4Frame(nil, testData(3000, 1), LZ4Frame{ContentSize: true, ContentChecksum: true, BlockChecksum: true})
	fuzzDecompress(f, LZ4, fr)
}

func FuzzDecompressZstd(f *testing.F) { fuzzDecompress(f, Zstd) }

func benchCodec(b *testing.B, c Codec, decompress bool) {
	src := testData(1<<20, 13)
	comp, _ := Compress(nil, src, c)
	dst := make([]byte, 0, 2*len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		if decompress {
			_, err = Decompress(dst, comp, c, len(src))
		} else {
			_, err = Compress(dst, src, c)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompress(b *testing.B) {
	for _, c := range codecs[1:] {
		b.Run(c.String(), func(b *testing.B) { benchCodec(b, c, false) })
	}
}

func BenchmarkDecompress(b *testing.B) {
	for _, c := range codecs[1:] {
		b.Run(c.String(), func(b *testing.B) { benchCodec(b, c, true) })
	}
}
