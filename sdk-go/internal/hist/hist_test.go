package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantilesMatchExact records random data of several shapes and checks each reported
// quantile against the exact one from the sorted data.
func TestQuantilesMatchExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func() int64{
		"uniform-small": func() int64 { return rng.Int64N(300) },
		"uniform-wide":  func() int64 { return rng.Int64N(1 << 40) },
		"lognormal":     func() int64 { return int64(math.Exp(rng.NormFloat64()*2 + 13)) },
		"exponential":   func() int64 { return int64(rng.ExpFloat64() * 2e6) },
	}
	qs := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for name, gen := range shapes {
		t.Run(name, func(t *testing.T) {
			var h Hist
			vals := make([]int64, 200000)
			for i := range vals {
				vals[i] = gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if h.Count() != uint64(len(vals)) || h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
				t.Fatalf("count %d max %d min %d; want %d %d %d", h.Count(), h.Max(), h.Min(), len(vals), vals[len(vals)-1], vals[0])
			}
			for _, q := range qs {
				rank := max(int(math.Ceil(q*float64(len(vals)))), 1)
				exact := vals[rank-1]
				got := h.Quantile(q)
				if diff := math.Abs(float64(got - exact)); diff > 0.01*float64(exact) {
					t.Errorf("q=%v: got %d, exact %d (%.3f%% off)", q, got, exact, 100*diff/float64(exact))
				}
			}
		})
	}
}

func TestEdges(t *testing.T) {
	var h Hist
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Min() != 0 {
		t.Fatal("empty histogram is not all zero")
	}
	h.Record(-5)
	h.Record(math.MaxInt64)
	if h.Min() != 0 || h.Max() != math.MaxInt64 {
		t.Fatalf("min %d max %d", h.Min(), h.Max())
	}
	if got := h.Quantile(1); got != math.MaxInt64 {
		t.Fatalf("q1 = %d", got)
	}
	if got := h.Quantile(0.5); got != 0 {
		t.Fatalf("q0.5 = %d", got)
	}
	// Every bucket's range starts where the previous one ended.
	for i := 1; i < nBuckets; i++ {
		lo, _ := bounds(i)
		plo, pw := bounds(i - 1)
		if plo+pw != lo || index(lo) != i || index(lo-1) != i-1 {
			t.Fatalf("bucket %d: [%d,+%d) then %d", i, plo, pw, lo)
		}
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h Hist
	v := int64(1)
	if n := testing.AllocsPerRun(1000, func() { h.Record(v); v = v*3 + 7 }); n != 0 {
		t.Fatalf("%v allocations per Record", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Hist
	for i := range b.N {
		h.Record(int64(i) * 977)
	}
}
