package spool_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
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

// stickyConfPartitioner is the partitioner of a Conf with these keys.
func stickyConfPartitioner(t *testing.T, kv map[string]string) spool.Partitioner {
	t.Helper()
	conf, err := spool.NewConfFromMap(kv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := conf.Partitioner()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStickyRandomPartitioners checks librdkafka's sticky.partitioning.linger.ms: records
// murmur2_random and consistent_random would place at random stay on one partition per topic
// while the linger lasts, move once it has passed, and are placed one by one with 0; keyed
// records are placed by their hash throughout.
func TestStickyRandomPartitioners(t *testing.T) {
	if k, _ := spool.LookupConfKey("sticky.partitioning.linger.ms"); k.Default != "10" {
		t.Fatalf("sticky.partitioning.linger.ms default %q, want librdkafka's 10", k.Default)
	}
	for _, name := range []string{spool.PartitionerMurmur2Random, spool.PartitionerConsistentRandom} {
		t.Run(name, func(t *testing.T) {
			// A linger longer than the test: every unkeyed record of a topic on one partition.
			p := stickyConfPartitioner(t, map[string]string{"partitioner": name, "sticky.partitioning.linger.ms": "900000"})
			first := p.Partition(&spool.Record{Topic: "a"}, 6)
			for range 200 {
				if got := p.Partition(&spool.Record{Topic: "a"}, 6); got != first {
					t.Fatalf("unkeyed records moved from %d to %d within the linger", first, got)
				}
				p.Partition(&spool.Record{Topic: "b"}, 6) // another topic's pick is its own
			}
			if name == spool.PartitionerMurmur2Random {
				if got := p.Partition(&spool.Record{Topic: "a", Key: []byte("foobar")}, 10); got != 6 {
					t.Fatalf("keyed record foobar on %d, want 6 (murmur2)", got)
				}
			}
			// 0: a partition per record (200 records on one of 6 by chance: 6^-199).
			p = stickyConfPartitioner(t, map[string]string{"partitioner": name, "sticky.partitioning.linger.ms": "0"})
			seen := map[int]bool{}
			for range 200 {
				seen[p.Partition(&spool.Record{Topic: "a"}, 6)] = true
			}
			if len(seen) < 2 {
				t.Fatalf("with linger 0 200 unkeyed records all went to %v", seen)
			}
			// 1 ms: a new pick once it has passed (the same partition again 1 in 6 times).
			p = stickyConfPartitioner(t, map[string]string{"partitioner": name, "sticky.partitioning.linger.ms": "1"})
			first = p.Partition(&spool.Record{Topic: "a"}, 6)
			moved := false
			for range 500 {
				time.Sleep(2 * time.Millisecond)
				if p.Partition(&spool.Record{Topic: "a"}, 6) != first {
					moved = true
					break
				}
			}
			if !moved {
				t.Fatalf("unkeyed records stayed on %d for 500 lingers of 1 ms", first)
			}
		})
	}
}

// TestStickyLingerOption checks that a client configured by a Conf applies
// sticky.partitioning.linger.ms to its partitioner: unkeyed records produced within the
// linger land on one partition.
func TestStickyLingerOption(t *testing.T) {
	t.Parallel()
	addr := brokertest.Start(t, brokertest.Options{}).Addr
	cl := confClient(t, map[string]string{"bootstrap.servers": addr, "partitioner": "murmur2_random", "sticky.partitioning.linger.ms": "900000"})
	ctx := testCtx(t)
	topic := createTopic(t, cl, 6)
	parts := map[int32]int{}
	for i := range 30 {
		r := &spool.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r); err != nil {
			t.Fatal(err)
		}
		parts[r.Partition]++
	}
	if len(parts) != 1 {
		t.Fatalf("30 unkeyed records within the linger spread over %v", parts)
	}
}
