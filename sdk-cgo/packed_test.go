package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByOpaque checks the merge sort of delivery reports against slices.Sort on
// interleaved ascending runs (what the report queue holds), on random order and on edge cases.
func TestSortByOpaque(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]uintptr{nil, {5}, {1, 2, 3}, {3, 2, 1}, {2, 2, 1, 1}}
	for range 50 {
		// k runs of ascending opaques, split into chunks and interleaved
		var all []uintptr
		runs := make([][]uintptr, 1+rng.IntN(7))
		next := uintptr(1)
		for i := range runs {
			for range rng.IntN(300) {
				runs[i] = append(runs[i], next)
				next += uintptr(1 + rng.IntN(3))
			}
		}
		for len(runs) > 0 {
			i := rng.IntN(len(runs))
			n := min(len(runs[i]), 1+rng.IntN(40))
			all = append(all, runs[i][:n]...)
			if runs[i] = runs[i][n:]; len(runs[i]) == 0 {
				runs = slices.Delete(runs, i, i+1)
			}
		}
		cases = append(cases, all)
		shuffled := slices.Clone(all)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		cases = append(cases, shuffled)
	}
	for _, c := range cases {
		rs := make([]report, len(c))
		for i, o := range c {
			rs[i].opaque = o
		}
		got := sortByOpaque(rs)
		want := slices.Clone(c)
		slices.Sort(want)
		if len(got) != len(want) {
			t.Fatalf("sortByOpaque(%v) has %d reports", c, len(got))
		}
		for i := range got {
			if got[i].opaque != want[i] {
				t.Fatalf("sortByOpaque(%v) = ... %d at %d, want %d", c, got[i].opaque, i, want[i])
			}
		}
	}
}
