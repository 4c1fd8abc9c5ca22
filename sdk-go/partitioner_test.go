package spool_test

import (
	"sync"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Vectors from Kafka's UtilsTest.testMurmur2 and our extra keys
// (shared/reference/murmur2-vectors.md): murmur2, and the partition for 3, 6 and 10 partitions.
var murmur2Vectors = []struct {
	key         string
	hash        int32
	p3, p6, p10 int
}{
	{"21", -973932308, 0, 0, 0},
	{"foobar", -790332482, 0, 0, 6},
	{"a-little-bit-long-string", -985981536, 2, 2, 2},
	{"a-little-bit-longer-string", -1486304829, 2, 5, 9},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 2, 5, 7},
	{"abc", 479470107, 0, 3, 7},
	{"key1", 28543940, 2, 2, 0},
	{"key2", 1674751211, 2, 5, 1},
	{"key3", -1745673403, 1, 1, 5},
	{"hello", 2132663229, 0, 3, 9},
	{"", 275646681, 0, 3, 1},
	{"a", -1563381124, 1, 4, 4},
}

func TestMurmur2Vectors(t *testing.T) {
	h := spool.Hash()
	for _, v := range murmur2Vectors {
		if got := spool.Murmur2([]byte(v.key)); got != v.hash {
			t.Errorf("murmur2(%q) = %d, want %d", v.key, got, v.hash)
		}
		for n, want := range map[int]int{3: v.p3, 6: v.p6, 10: v.p10} {
			if got := h.Partition(&spool.Record{Key: []byte(v.key)}, n); got != want {
				t.Errorf("Hash(%q) %% %d = %d, want %d", v.key, n, got, want)
			}
		}
	}
}

// TestHashAgreesWithFranzGo checks keyed records land where franz-go's Kafka-compatible
// partitioner (KafkaHasher over murmur2, the Java client's choice) puts them.
func TestHashAgreesWithFranzGo(t *testing.T) {
	fp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	h := spool.Hash()
	for i := 0; i < 5000; i++ {
		key := []byte{byte(i), byte(i >> 8), 'k', byte(i * 7)}[:1+i%4]
		for _, n := range []int{1, 2, 3, 6, 10, 17, 100} {
			want := fp.Partition(&kgo.Record{Key: key}, n)
			if got := h.Partition(&spool.Record{Key: key}, n); got != want {
				t.Fatalf("key %x, %d partitions: ours %d, franz-go %d", key, n, got, want)
			}
		}
	}
}

func TestRoundRobinEven(t *testing.T) {
	rr := spool.RoundRobin()
	counts := make([]int, 7)
	for range 7000 {
		counts[rr.Partition(&spool.Record{Key: []byte("same")}, 7)]++
	}
	for p, c := range counts {
		if c != 1000 {
			t.Fatalf("partition %d got %d of 7000", p, c)
		}
	}
	// Unkeyed records through Hash go round-robin too.
	h := spool.Hash()
	seen := map[int]bool{}
	for range 4 {
		seen[h.Partition(&spool.Record{}, 4)] = true
	}
	if len(seen) != 4 {
		t.Fatalf("unkeyed Hash used %d partitions of 4", len(seen))
	}
}

func TestStickySwitches(t *testing.T) {
	s := spool.Sticky(10, true)
	first := s.Partition(&spool.Record{Topic: "a"}, 5)
	for range 9 {
		if p := s.Partition(&spool.Record{Topic: "a"}, 5); p != first {
			t.Fatalf("sticky moved early: %d then %d", first, p)
		}
	}
	if p := s.Partition(&spool.Record{Topic: "a"}, 5); p == first {
		t.Fatal("sticky did not move after 10 records")
	}
	if p := s.Partition(&spool.Record{Topic: "a", Key: []byte("foobar")}, 10); p != 6 {
		t.Fatalf("sticky with keys: foobar on %d, want 6", p)
	}
}

// TestStickyConcurrent checks that concurrent callers, as Produce's are, still fill each
// partition with exactly `every` records per turn.
func TestStickyConcurrent(t *testing.T) {
	const every, n, callers, each = 100, 5, 4, 250
	s := spool.Sticky(every, false)
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := map[int]int{}
			for range each {
				mine[s.Partition(&spool.Record{Topic: "c"}, n)]++
			}
			mu.Lock()
			for p, c := range mine {
				counts[p] += c
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for p := range n {
		if counts[p] != callers*each/n {
			t.Fatalf("partition counts %v, want %d each", counts, callers*each/n)
		}
	}
}

func BenchmarkMurmur2(b *testing.B) {
	key := []byte("a-little-bit-longer-string")
	b.SetBytes(int64(len(key)))
	for b.Loop() {
		spool.Murmur2(key)
	}
}
