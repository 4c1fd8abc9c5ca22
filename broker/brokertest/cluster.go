package brokertest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Cluster is several spoold processes sharing one ZooKeeper. Each broker sits behind its own
// fault Proxy, whose address it advertises: clients, followers and the controller's probes all
// reach it through the proxy, so a test can cut or slow any of them.
type Cluster struct {
	t         testing.TB // the test that owns the processes (a subtest's cleanup would stop them early)
	Chroot    string
	zkConnect string
	Brokers   map[int32]*Broker // by node id; a killed broker stays here until restarted
	Proxies   map[int32]*Proxy
	opts      map[int32]Options
}

// StartCluster starts n process brokers (node ids 1..n) in cluster mode on zkConnect (a
// ZooKeeper's or an ensemble's connect string, without a chroot), each with props, and waits
// until each is registered. The cluster keeps its state under a chroot of its own (Chroot:
// /spool-<test name>-<number>), so clusters can share one ZooKeeper (SharedZooKeeper).
func StartCluster(t testing.TB, n int, zkConnect string, props map[string]string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Chroot: chrootFor(t, "/spool-"), zkConnect: zkConnect, Brokers: map[int32]*Broker{}, Proxies: map[int32]*Proxy{}, opts: map[int32]Options{}}
	for id := int32(1); id <= int32(n); id++ {
		c.start(id, props)
	}
	c.WaitBrokers(t, n)
	return c
}

// Add starts one more broker, node id id, with props (a new broker joining the cluster, or
// brokers that differ, such as by broker.rack), and waits until every broker lists it.
func (c *Cluster) Add(t testing.TB, id int32, props map[string]string) *Broker {
	t.Helper()
	b := c.start(id, props)
	c.WaitBrokers(t, len(c.Brokers))
	return b
}

func (c *Cluster) start(id int32, props map[string]string) *Broker {
	px := StartProxy(c.t)
	o := Options{NodeID: id, ZooKeeper: c.zkConnect + c.Chroot, Props: maps.Clone(props), LogLevelName: os.Getenv("SPOOL_TEST_LOG")}
	if o.Props == nil {
		o.Props = map[string]string{}
	}
	o.Props["advertised.listeners"] = px.Addr
	o.DataDir = c.t.TempDir()
	c.opts[id] = o
	c.Proxies[id] = px
	c.Brokers[id] = StartProcess(c.t, o)
	px.SetTarget(c.Brokers[id].Addr)
	return c.Brokers[id]
}

// Addrs are the advertised (proxy) addresses of the brokers, by node id.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(c.Brokers)) {
		out = append(out, c.Proxies[id].Addr)
	}
	return out
}

// Kill crashes broker id with SIGKILL; its advertised port refuses connections until Restart.
func (c *Cluster) Kill(t testing.TB, id int32) {
	t.Helper()
	c.Brokers[id].Kill(t)
	c.Proxies[id].Down()
}

// Restart starts a stopped or killed broker again on its data directory, behind its proxy. It
// belongs to the cluster's test, even when a subtest restarts it.
func (c *Cluster) Restart(t testing.TB, id int32) *Broker {
	t.Helper()
	b := StartProcess(c.t, c.opts[id])
	c.Brokers[id] = b
	c.Proxies[id].SetTarget(b.Addr)
	c.Proxies[id].Up(t)
	return b
}

// WaitBrokers waits until every running broker's metadata lists n brokers.
func (c *Cluster) WaitBrokers(t testing.TB, n int) {
	t.Helper()
	WaitFor(t, 30*time.Second, fmt.Sprintf("%d brokers registered", n), func() bool {
		for _, b := range c.Brokers {
			if b.stopped {
				continue
			}
			if got, err := brokerCount(b.Addr); err != nil || got < n {
				return false
			}
		}
		return true
	})
}

// brokerCount asks addr for metadata and counts the brokers it lists.
func brokerCount(addr string) (int, error) {
	conn, err := peer.Dial(context.Background(), addr, time.Second, nil)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	req, resp := &wire.MetadataRequest{}, &wire.MetadataResponse{}
	req.Default()
	req.Topics = []wire.MetadataRequestTopic{}
	if err := conn.RoundTrip(req, resp, 12, time.Now().Add(5*time.Second)); err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
}

// WaitFor polls cond until it holds, failing t after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitForState(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// WaitForState polls cond until it holds, failing t after timeout with the state cond last
// reported. It is the one polling loop of the test helpers: a condition no event announces
// (another process's state) is checked every 20 ms.
func WaitForState(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokertest: %s did not happen within %v (last: %s)", what, timeout, state)
		}
		<-tick.C
	}
}

// History records what producers had acknowledged and checks it against what consumers read:
// no acknowledged record lost or moved, no value twice, offsets increasing per partition.
type History struct {
	mu    sync.Mutex
	acked map[int32]map[int64]string // partition -> offset -> value
	times map[int32][]time.Time      // partition -> ack times, in order
}

// NewHistory makes an empty history.
func NewHistory() *History {
	return &History{acked: map[int32]map[int64]string{}, times: map[int32][]time.Time{}}
}

// Acked records an acknowledged write.
func (h *History) Acked(partition int32, offset int64, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.acked[partition] == nil {
		h.acked[partition] = map[int64]string{}
	}
	h.acked[partition][offset] = value
	h.times[partition] = append(h.times[partition], time.Now())
}

// Ends is, per partition, one past the highest acknowledged offset: where a reader must read
// to before it may call anything below missing.
func (h *History) Ends() map[int32]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int32]int64{}
	for p, m := range h.acked {
		for off := range m {
			out[p] = max(out[p], off+1)
		}
	}
	return out
}

// Count is how many writes were acknowledged.
func (h *History) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.acked {
		n += len(m)
	}
	return n
}

// FirstAckAfter is the delay from t to the first acknowledgement on partition after t, or -1.
func (h *History) FirstAckAfter(partition int32, t time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, at := range h.times[partition] {
		if at.After(t) {
			return at.Sub(t)
		}
	}
	return -1
}

// LongestGap is the longest time partition went without an acknowledged write in the window
// from t to the first acknowledgement after until (or -1 if none came by then): how long a
// fault made it unavailable, counting from the fault itself.
func (h *History) LongestGap(partition int32, t, until time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, longest := t, time.Duration(0)
	for _, at := range h.times[partition] {
		if !at.After(t) {
			continue
		}
		longest = max(longest, at.Sub(prev))
		prev = at
		if at.After(until) {
			return longest
		}
	}
	return -1
}

// Read is one record a consumer read.
type Read struct {
	Partition int32
	Offset    int64
	Value     string
}

// Check compares the history with everything read back, failing t on a lost, moved or
// duplicated record or offsets out of order; it returns a summary line.
func (h *History) Check(t testing.TB, reads []Read) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	got := map[int32]map[int64]string{}
	seen := map[string]bool{}
	last := map[int32]int64{}
	dups := 0
	for _, r := range reads {
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			t.Errorf("history: partition %d offset %d read after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
		if seen[r.Value] {
			dups++
			t.Errorf("history: value %q read twice", r.Value)
		}
		seen[r.Value] = true
		if got[r.Partition] == nil {
			got[r.Partition] = map[int64]string{}
		}
		got[r.Partition][r.Offset] = r.Value
	}
	acked, lost, moved := 0, 0, 0
	for p, m := range h.acked {
		offs := slices.Collect(maps.Keys(m))
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for _, off := range offs {
			acked++
			v, ok := got[p][off]
			switch {
			case !ok:
				lost++
				if lost <= 10 {
					t.Errorf("history: acknowledged %q at partition %d offset %d was not read back", m[off], p, off)
				}
			case v != m[off]:
				moved++
				if moved <= 10 {
					t.Errorf("history: partition %d offset %d holds %q, acknowledged %q", p, off, v, m[off])
				}
			}
		}
	}
	return fmt.Sprintf("%d acknowledged, %d read, %d lost, %d moved, %d duplicated", acked, len(reads), lost, moved, dups)
}
