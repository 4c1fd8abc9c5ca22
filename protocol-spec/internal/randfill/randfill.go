// Package randfill populates any message struct with pseudo-random values by reflection, for
// cross-checks against other codecs, golden vectors and fuzz seeds. It works on our generated
// messages and on franz-go's kmsg messages alike.
package randfill

import (
	"math/rand/v2"
	"reflect"
)

// Filler fills structs from a deterministic random source.
type Filler struct {
	rng *rand.Rand
	// Skip names fields left untouched (e.g. "Version", "UnknownTags").
	Skip map[string]bool
	// MaxElems bounds array lengths.
	MaxElems int
}

// New returns a Filler seeded with seed.
func New(seed uint64) *Filler {
	return &Filler{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		Skip:     map[string]bool{"Version": true, "UnknownTags": true},
		MaxElems: 3,
	}
}

// Fill populates the struct that ptr points to.
func (f *Filler) Fill(ptr any) { f.fill(reflect.ValueOf(ptr).Elem(), 0) }

func (f *Filler) fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() || f.Skip[sf.Name] {
				continue
			}
			f.fill(v.Field(i), depth+1)
		}
	case reflect.Bool:
		v.SetBool(f.rng.IntN(2) == 1)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Float64:
		v.SetFloat(float64(f.rng.IntN(2000)-1000) / 8)
	case reflect.String:
		v.SetString(f.str())
	case reflect.Pointer:
		if f.rng.IntN(4) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth)
		v.Set(p)
	case reflect.Array: // UUIDs
		for i := 0; i < v.Len(); i++ {
			f.fill(v.Index(i), depth)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if f.rng.IntN(5) == 0 {
				v.SetZero()
				return
			}
			b := make([]byte, f.rng.IntN(12))
			for i := range b {
				b[i] = byte(f.rng.Uint32())
			}
			v.SetBytes(b)
			return
		}
		if f.rng.IntN(6) == 0 {
			v.SetZero()
			return
		}
		limit := f.MaxElems
		if depth > 3 {
			limit = 2
		}
		n := f.rng.IntN(limit + 1)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	}
}

// int returns small values most of the time and the edges of the range sometimes, so that
// varints and sign handling are exercised.
func (f *Filler) int(bits int) int64 {
	switch f.rng.IntN(6) {
	case 0:
		return -1
	case 1:
		return 0
	case 2:
		return -1 << (bits - 1)
	case 3:
		return 1<<(bits-1) - 1
	default:
		return int64(f.rng.IntN(1000))
	}
}

func (f *Filler) str() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz-._0123456789"
	b := make([]byte, f.rng.IntN(10))
	for i := range b {
		b[i] = alphabet[f.rng.IntN(len(alphabet))]
	}
	return string(b)
}
