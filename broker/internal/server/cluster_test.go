package server_test

// Cluster mode against a real ZooKeeper and three spoold processes: replication, failover
// under load, and the history checker (no acknowledged record lost or moved, no duplicates).

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/peer"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// clusterProps keep failure detection at its defaults except where a test says otherwise.
var clusterProps = map[string]string{"num.partitions": "1", "replica.lag.time.max.ms": "2000", "broker.session.timeout.ms": "2000"}

// withProps is clusterProps with extra on top.
func withProps(extra map[string]string) map[string]string {
	props := maps.Clone(clusterProps)
	maps.Copy(props, extra)
	return props
}

// loadedCluster is a cluster under acks=all load: ZooKeeper, n brokers with props, topic
// replicated to three of them (min.insync.replicas=2), and producers producing to every
// partition into hist.
type loadedCluster struct {
	c    *brokertest.Cluster
	zk   *brokertest.ZooKeeper
	adm  *kadm.Client
	hist *brokertest.History
	load *loadGen
}

// startLoaded starts a loadedCluster on the shared ZooKeeper and waits for its first 1000
// acknowledgements.
func startLoaded(t *testing.T, n int, props map[string]string, topic string, partitions int32, producers int) loadedCluster {
	t.Helper()
	return startLoadedOn(t, brokertest.SharedZooKeeper(t), n, props, topic, partitions, producers)
}

// startLoadedOn is startLoaded on zk.
func startLoadedOn(t *testing.T, zk *brokertest.ZooKeeper, n int, props map[string]string, topic string, partitions int32, producers int) loadedCluster {
	t.Helper()
	c := brokertest.StartCluster(t, n, zk.Connect(""), props)
	adm := admin(t, c.Addrs())
	createReplicated(t, adm, topic, partitions)
	hist := brokertest.NewHistory()
	load := startLoad(t, c.Addrs(), topic, partitions, producers, hist)
	waitAcks(t, hist, 0, 1000, "the first writes")
	return loadedCluster{c: c, zk: zk, adm: adm, hist: hist, load: load}
}

// startCluster starts three brokers with clusterProps on the shared ZooKeeper.
func startCluster(t *testing.T) (*brokertest.Cluster, *brokertest.ZooKeeper) {
	t.Helper()
	zk := brokertest.SharedZooKeeper(t)
	return brokertest.StartCluster(t, 3, zk.Connect(""), clusterProps), zk
}

func admin(t *testing.T, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// waitMetadata waits until cond holds for the topic's metadata as the cluster reports it.
func waitMetadata(t *testing.T, adm *kadm.Client, topic string, what string, cond func(kadm.TopicDetail) bool) kadm.TopicDetail {
	t.Helper()
	var got kadm.TopicDetail
	brokertest.WaitForState(t, 30*time.Second, "metadata of "+topic+": "+what, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td, ok := md.Topics[topic]
		got = td
		return ok && td.Err == nil && cond(td), fmt.Sprintf("%+v", td)
	})
	return got
}

func createReplicated(t *testing.T, adm *kadm.Client, topic string, partitions int32) kadm.TopicDetail {
	t.Helper()
	minISR := "2"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	return waitMetadata(t, adm, topic, "every partition led with a full ISR", func(td kadm.TopicDetail) bool {
		if len(td.Partitions) != int(partitions) {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 || len(p.Replicas) != 3 {
				return false
			}
		}
		return true
	})
}

// loadGen produces acks=all idempotent records to every partition until stopped, recording
// every acknowledgement in the history.
type loadGen struct {
	clients []*kgo.Client
	hist    *brokertest.History
	stop    chan struct{}
	done    sync.WaitGroup
	seq     atomic.Int64
	errs    atomic.Int64
	lastErr atomic.Value
}

func startLoad(t *testing.T, addrs []string, topic string, partitions int32, producers int, hist *brokertest.History) *loadGen {
	t.Helper()
	g := &loadGen{hist: hist, stop: make(chan struct{})}
	for w := 0; w < producers; w++ {
		// Short client timeouts so that a paused broker costs the producer seconds, not the
		// 40 s of franz-go's defaults; retries keep every record (idempotence dedupes them).
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
			kgo.MetadataMinAge(50*time.Millisecond), kgo.ProduceRequestTimeout(2*time.Second), kgo.RequestTimeoutOverhead(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		// One goroutine per partition with its own in-flight window, so a stalled partition
		// does not hold back the others.
		for p := int32(0); p < partitions; p++ {
			g.done.Add(1)
			go func(w int, p int32) {
				defer g.done.Done()
				inflight := make(chan struct{}, 4)
				for i := 0; ; i++ {
					select {
					case <-g.stop:
						return
					case inflight <- struct{}{}:
					}
					value := fmt.Sprintf("w%d-p%d-%d", w, p, i)
					cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
						<-inflight
						if err != nil {
							g.errs.Add(1)
							g.lastErr.Store(err.Error())
							return
						}
						g.hist.Acked(r.Partition, r.Offset, string(r.Value))
					})
				}
			}(w, p)
		}
		g.clients = append(g.clients, cl)
	}
	return g
}

// Stop ends the load and waits for the records in flight, for a minute at most: a record still
// unacknowledged then is simply not in the history (nothing claims it was written).
func (g *loadGen) Stop() {
	close(g.stop)
	g.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, cl := range g.clients {
		cl.Flush(ctx)
	}
}

// waitAcks waits until the history holds n more acknowledgements than from.
func waitAcks(t *testing.T, h *brokertest.History, from, n int, what string) {
	t.Helper()
	brokertest.WaitForState(t, 60*time.Second, what, func() (bool, string) {
		return h.Count() >= from+n, fmt.Sprintf("%d of %d acknowledgements", h.Count()-from, n)
	})
}

// readAll consumes every partition from the start up to its high watermark.
func readAll(t *testing.T, addrs []string, topic string, adm *kadm.Client, hist *brokertest.History) []brokertest.Read {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The admin client may still route to a broker killed moments ago: ask until an answer
	// covers every partition. A leader elected moments ago may also answer a high watermark
	// below what its predecessor acknowledged, until its followers fetch again: wait until the
	// end offsets cover every acknowledged offset, so that what is read stops short only if a
	// record is really missing (and then the wait fails, naming the partition).
	need := hist.Ends()
	want := map[int32]int64{}
	brokertest.WaitForState(t, 60*time.Second, "the end offsets of "+topic+" to cover every acknowledged offset", func() (bool, string) {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return false, err.Error()
		}
		behind := ""
		ends.Each(func(o kadm.ListedOffset) {
			want[o.Partition] = o.Offset
			if o.Offset < need[o.Partition] {
				behind += fmt.Sprintf(" partition %d ends at %d, acknowledged up to %d;", o.Partition, o.Offset, need[o.Partition]-1)
			}
		})
		return behind == "", behind
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var reads []brokertest.Read
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %v (have %v, want %v)", ctx.Err(), next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			reads = append(reads, brokertest.Read{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].Partition < reads[j].Partition })
	return reads
}

func leaderOf(td kadm.TopicDetail, p int32) int32 { return td.Partitions[p].Leader }

// partitionView is one partition as a broker reports it.
type partitionView struct {
	Leader int32
	ISR    []int32
}

// clusterView is the metadata one broker reports: the controller and the topic's partitions.
type clusterView struct {
	Controller int32
	Partitions map[int32]partitionView
}

// viewFrom asks one broker directly (no client-side caching, no retries elsewhere), so a test
// can ask only the brokers it knows are up.
func viewFrom(addr, topic string) (clusterView, error) {
	conn, err := peer.Dial(context.Background(), addr, time.Second, nil)
	if err != nil {
		return clusterView{}, err
	}
	defer conn.Close()
	req, resp := &wire.MetadataRequest{}, &wire.MetadataResponse{}
	req.Default()
	name := topic
	req.Topics = []wire.MetadataRequestTopic{{Name: &name}}
	if err := conn.RoundTrip(req, resp, 12, time.Now().Add(2*time.Second)); err != nil {
		return clusterView{}, err
	}
	v := clusterView{Controller: resp.ControllerId, Partitions: map[int32]partitionView{}}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			v.Partitions[p.PartitionIndex] = partitionView{Leader: p.LeaderId, ISR: p.IsrNodes}
		}
	}
	return v, nil
}

// faultRun drives one fault under load and measures it.
type faultRun struct {
	t     *testing.T
	c     *brokertest.Cluster
	topic string
	hist  *brokertest.History
	down  map[int32]bool // brokers not to ask
}

// wait polls the view of a broker that is up until cond holds.
func (f *faultRun) wait(what string, cond func(clusterView) bool) clusterView {
	f.t.Helper()
	var last clusterView
	brokertest.WaitForState(f.t, 45*time.Second, what, func() (bool, string) {
		var lastErr error
		for id, b := range f.c.Brokers {
			if f.down[id] {
				continue
			}
			v, err := viewFrom(b.Addr, f.topic)
			if err != nil {
				lastErr = err
				continue
			}
			last = v
			return cond(v), fmt.Sprintf("view %+v", v)
		}
		return false, fmt.Sprint(lastErr)
	})
	return last
}

// led lists the partitions broker id leads in v.
func led(v clusterView, id int32) []int32 {
	var out []int32
	for p, pv := range v.Partitions {
		if pv.Leader == id {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// movedOff reports whether no partition is led by id, every partition has a leader, and id
// is in no ISR.
func movedOff(id int32) func(clusterView) bool {
	return func(v clusterView) bool {
		for _, pv := range v.Partitions {
			if pv.Leader == id || pv.Leader < 0 || slices.Contains(pv.ISR, id) {
				return false
			}
		}
		return true
	}
}

// settled reports whether there is a controller and every partition has a leader and all n
// replicas in its ISR.
func settled(n int) func(clusterView) bool {
	return func(v clusterView) bool {
		if v.Controller < 0 {
			return false
		}
		for _, pv := range v.Partitions {
			if pv.Leader < 0 || len(pv.ISR) != n {
				return false
			}
		}
		return len(v.Partitions) > 0
	}
}

// inEveryISR reports whether id is back in every partition's ISR.
func inEveryISR(id int32) func(clusterView) bool {
	return func(v clusterView) bool {
		for _, pv := range v.Partitions {
			if !slices.Contains(pv.ISR, id) {
				return false
			}
		}
		return len(v.Partitions) > 0
	}
}

// unavailability reports, for the partitions, the longest time each took no acknowledged
// write from the fault on, over the next two seconds of acknowledgements (so a write in
// flight when the fault struck does not hide the gap that follows).
func (f *faultRun) unavailability(name string, at time.Time, partitions []int32) {
	f.t.Helper()
	brokertest.WaitFor(f.t, 45*time.Second, name+": every affected partition writable again", func() bool {
		for _, p := range partitions {
			if f.hist.FirstAckAfter(p, at) < 0 {
				return false
			}
		}
		return true
	})
	// Two seconds of acknowledgements after the partitions came back, so a longer gap later
	// in the recovery is seen too.
	settled := time.Now()
	brokertest.WaitFor(f.t, 45*time.Second, name+": two seconds of writes after the recovery", func() bool {
		for _, p := range partitions {
			if f.hist.FirstAckAfter(p, settled.Add(2*time.Second)) < 0 {
				return false
			}
		}
		return true
	})
	var gaps []time.Duration
	for _, p := range partitions {
		gaps = append(gaps, f.hist.LongestGap(p, at, settled))
	}
	slices.Sort(gaps)
	if len(gaps) == 0 {
		f.t.Logf("%s: no partition affected", name)
		return
	}
	f.t.Logf("%s: partitions %v unavailable p50 %v, max %v (longest time without an acknowledged write after the fault)",
		name, partitions, gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
}

// brokerFault is one fault of a broker: which broker, how it is struck, when its partitions
// count as moved (default: no partition led by it, it in no ISR), and how it comes back.
type brokerFault struct {
	name    string
	victim  func(clusterView) int32
	strike  func(t *testing.T, id int32)
	moved   func(id int32) func(clusterView) bool
	recover func(t *testing.T, id int32)
}

// run strikes, waits for the partitions to move, reports the unavailability, brings the
// broker back and waits until it is in every ISR again.
func (f *faultRun) run(bf brokerFault) {
	f.t.Helper()
	// The victim is chosen from a settled view: right after a fault (ZooKeeper's restart
	// expires every session) a partition may be briefly without a leader.
	v := f.wait(bf.name+": every partition led, every ISR full", settled(len(f.c.Brokers)))
	victim := bf.victim(v)
	if _, ok := f.c.Brokers[victim]; !ok {
		f.t.Fatalf("%s: no broker %d to strike in view %+v", bf.name, victim, v)
	}
	parts := led(v, victim)
	at := time.Now()
	bf.strike(f.t, victim)
	f.down[victim] = true
	moved := movedOff(victim)
	if bf.moved != nil {
		moved = bf.moved(victim)
	}
	f.wait(bf.name+": its partitions moved", moved)
	f.unavailability(fmt.Sprintf("%s (broker %d)", bf.name, victim), at, parts)
	bf.recover(f.t, victim)
	delete(f.down, victim)
	f.wait(bf.name+": the broker back in every ISR", inEveryISR(victim))
}

// TestClusterFaults runs one cluster (3 brokers, RF 3, min.insync.replicas=2) under
// acks=all idempotent load through a sequence of faults, then checks the history: nothing
// acknowledged lost or moved, no duplicates, offsets increasing.
func TestClusterFaults(t *testing.T) {
	heavy(t)
	const topic, partitions = "orders", 6
	// A ZooKeeper of its own: the faults include restarting it.
	lc := startLoadedOn(t, brokertest.StartZooKeeper(t), 3, withProps(map[string]string{"zookeeper.session.timeout.ms": "4000"}), topic, partitions, 2)
	zk, c, adm, hist, load := lc.zk, lc.c, lc.adm, lc.hist, lc.load
	f := &faultRun{t: t, c: c, topic: topic, hist: hist, down: map[int32]bool{}}

	leaderOfPartition := func(p int32) func(clusterView) int32 {
		return func(v clusterView) int32 { return v.Partitions[p].Leader }
	}
	kill := func(t *testing.T, id int32) { c.Kill(t, id) }
	restart := func(t *testing.T, id int32) { c.Restart(t, id) }
	t.Run("kill -9 of a leader", func(t *testing.T) {
		f.t = t
		f.run(brokerFault{name: "kill -9 of a leader", victim: leaderOfPartition(0), strike: kill, recover: restart})
	})
	t.Run("SIGTERM of a leader (controlled shutdown)", func(t *testing.T) {
		f.t = t
		f.run(brokerFault{name: "SIGTERM of a leader", victim: leaderOfPartition(0), recover: restart,
			strike: func(t *testing.T, id int32) {
				c.Brokers[id].Stop(t) // SIGTERM: leaderships move away before it exits
				c.Proxies[id].Down()
			}})
	})
	t.Run("kill -9 of the controller", func(t *testing.T) {
		f.t = t
		f.run(brokerFault{name: "kill -9 of the controller", victim: func(v clusterView) int32 { return v.Controller }, strike: kill, recover: restart,
			moved: func(id int32) func(clusterView) bool {
				return func(v clusterView) bool { return v.Controller >= 0 && v.Controller != id && movedOff(id)(v) }
			}})
	})
	t.Run("SIGSTOP of a leader past its session", func(t *testing.T) {
		f.t = t
		f.run(brokerFault{name: "SIGSTOP of a leader", victim: leaderOfPartition(1),
			strike: func(t *testing.T, id int32) { c.Brokers[id].Signal(t, syscall.SIGSTOP) },
			recover: func(t *testing.T, id int32) {
				// Past the ZooKeeper session timeout: on waking, its session has expired and it
				// has been replaced; it must not acknowledge anything as the old leader.
				brokertest.WaitFor(t, time.Minute, "the paused broker's ZooKeeper session to expire", func() bool {
					return !zk.HasEphemeral(fmt.Sprintf("%s/brokers/ids/%d", c.Chroot, id))
				})
				c.Brokers[id].Signal(t, syscall.SIGCONT)
			}})
	})
	t.Run("a follower cut off, then healed", func(t *testing.T) {
		f.t = t
		v := f.wait("a view", func(clusterView) bool { return true })
		var victim int32 = -1
		for id := range c.Brokers {
			if len(led(v, id)) < partitions {
				victim = id
				break
			}
		}
		for _, px := range c.Proxies {
			px.Drop(brokertest.DropFollowerFetches(victim))
		}
		f.wait("the cut-off follower out of the ISRs it follows", func(v clusterView) bool {
			for _, pv := range v.Partitions {
				if pv.Leader != victim && slices.Contains(pv.ISR, victim) {
					return false
				}
			}
			return true
		})
		waitAcks(t, hist, hist.Count(), 500, "producing with the follower cut off")
		for _, px := range c.Proxies {
			px.Drop(nil)
		}
		f.wait("the healed follower back in every ISR", inEveryISR(victim))
	})
	t.Run("ZooKeeper restarted", func(t *testing.T) {
		f.t = t
		zk.Restart(t)
		waitAcks(t, hist, hist.Count(), 500, "producing after ZooKeeper's restart")
		// Every session may have expired while it was down: the cluster must come back whole.
		f.wait("after ZooKeeper's restart: every partition led, every ISR full", settled(len(c.Brokers)))
		// The controller still works: a leader killed now still fails over.
		f.run(brokerFault{name: "kill -9 of a leader after ZooKeeper's restart", victim: leaderOfPartition(2), strike: kill, recover: restart})
	})
	f.t = t
	waitAcks(t, hist, hist.Count(), 500, "after the faults")
	load.Stop()
	t.Logf("producer errors (retried by the client, never acknowledged): %d", load.errs.Load())
	t.Log("history: " + hist.Check(t, readAll(t, c.Addrs(), topic, adm, hist)))
}

func TestClusterRefusesAcksAllBelowMinISR(t *testing.T) {
	heavy(t)
	c, _ := startCluster(t)
	adm := admin(t, c.Addrs())
	const topic = "strict"
	td := createReplicated(t, adm, topic, 1)
	leader := leaderOf(td, 0)
	var others []int32
	for id := range c.Brokers {
		if id != leader {
			others = append(others, id)
		}
	}
	// Two of three down: the survivor may not acknowledge acks=all writes.
	c.Kill(t, others[0])
	c.Brokers[others[1]].Signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { c.Brokers[others[1]].Signal(t, syscall.SIGCONT) })
	waitMetadata(t, adm, topic, "ISR down to the leader", func(td kadm.TopicDetail) bool {
		return len(td.Partitions[0].ISR) == 1
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[leader].Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("refused")}).FirstErr()
	if err == nil {
		t.Fatal("acks=all write acknowledged with an ISR of 1 and min.insync.replicas=2")
	}
	t.Logf("acks=all with ISR below the minimum: %v", err)
	// One follower comes back: producing resumes.
	c.Brokers[others[1]].Signal(t, syscall.SIGCONT)
	waitMetadata(t, adm, topic, "ISR back to two", func(td kadm.TopicDetail) bool {
		return len(td.Partitions[0].ISR) >= 2
	})
	cl2, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if err := cl2.ProduceSync(ctx, &kgo.Record{Value: []byte("accepted")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with the ISR back at two: %v", err)
	}
}

// TestClusterSurvivesZooKeeperNodeLoss runs the cluster on a three-node ZooKeeper ensemble and
// kills one ZooKeeper node under load: producing goes on, a leader failover afterwards still
// works, and nothing acknowledged is lost.
func TestClusterSurvivesZooKeeperNodeLoss(t *testing.T) {
	heavy(t)
	ens := brokertest.StartZooKeeperEnsemble(t, 3)
	c := brokertest.StartCluster(t, 3, ens.Connect(), clusterProps)
	adm := admin(t, c.Addrs())
	const topic, partitions = "ensemble", 3
	createReplicated(t, adm, topic, partitions)
	hist := brokertest.NewHistory()
	load := startLoad(t, c.Addrs(), topic, partitions, 1, hist)
	waitAcks(t, hist, 0, 500, "before the ZooKeeper node dies")
	ens.Members[0].Kill(t)
	waitAcks(t, hist, hist.Count(), 500, "after a ZooKeeper node died")

	f := &faultRun{t: t, c: c, topic: topic, hist: hist, down: map[int32]bool{}}
	f.run(brokerFault{name: "kill -9 of a leader on a degraded ensemble",
		victim:  func(v clusterView) int32 { return v.Partitions[0].Leader },
		strike:  func(t *testing.T, id int32) { c.Kill(t, id) },
		recover: func(t *testing.T, id int32) { c.Restart(t, id) }})
	load.Stop()
	t.Log("history: " + hist.Check(t, readAll(t, c.Addrs(), topic, adm, hist)))
}

// TestClusterGroupCoordinatorFailover runs a consumer group on a cluster: its coordinator is
// the leader of the group's __consumer_offsets partition (replicated, RF 3). Killing that
// broker moves the coordinator; committed offsets survive, the members find the new
// coordinator, and every record is consumed.
func TestClusterGroupCoordinatorFailover(t *testing.T) {
	heavy(t)
	c, _ := startCluster(t)
	adm := admin(t, c.Addrs())
	const topic, partitions, total = "events", 6, 3000
	createReplicated(t, adm, topic, partitions)
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	produceN := func(from, n int) {
		for i := from; i < from+n; i++ {
			prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produceN(0, total/2)

	var mu sync.Mutex
	seen := map[string]bool{}
	consumer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
				})
				cl.CommitUncommittedOffsets(ctx)
			}
		}()
		return cl
	}
	consumer()
	consumer()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	brokertest.WaitFor(t, 60*time.Second, "the group consumes the first half", func() bool { return count() == total/2 })
	// Committed offsets are read by a new client each time: this checks the brokers, not a
	// client's cached coordinator.
	committed := func() int64 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		os, err := kadm.NewClient(cl).FetchOffsets(fctx, "billing")
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			t.Logf("fetching committed offsets: %v", err)
			return -1
		}
		var sum int64
		os.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum
	}
	brokertest.WaitFor(t, 30*time.Second, "the first half committed", func() bool { return committed() == total/2 })

	co := adm.FindGroupCoordinators(ctx, "billing")
	var coordinator int32 = -1
	co.Each(func(r kadm.FindCoordinatorResponse) { coordinator = r.NodeID })
	if coordinator < 0 {
		t.Fatalf("no coordinator for the group: %+v", co)
	}
	c.Kill(t, coordinator)
	brokertest.WaitFor(t, 30*time.Second, "a new coordinator", func() bool {
		moved := false
		adm.FindGroupCoordinators(ctx, "billing").Each(func(r kadm.FindCoordinatorResponse) { moved = r.Err == nil && r.NodeID != coordinator })
		return moved
	})
	// The client may ask the dead coordinator first; once an answer comes, it must hold
	// exactly what was committed.
	brokertest.WaitFor(t, 30*time.Second, "committed offsets from the new coordinator", func() bool {
		got := committed()
		if got >= 0 && got != total/2 {
			t.Fatalf("committed offsets after the coordinator died: sum %d, want %d", got, total/2)
		}
		return got == total/2
	})
	produceN(total/2, total/2)
	brokertest.WaitFor(t, 60*time.Second, "the group consumes the second half", func() bool { return count() == total })
	brokertest.WaitFor(t, 30*time.Second, "everything committed", func() bool { return committed() == total })
	t.Logf("coordinator %d killed: %d records consumed by the group, offsets committed and kept", coordinator, count())
}

// TestClusterRealClientsAcrossFailover: franz-go, the Java client and kcat (librdkafka)
// produce with acks=all and retries while a consumer group of all three consumes; the leader
// of a partition is killed midway. Every record a producer had acknowledged is in the log and
// reaches the group.
func TestClusterRealClientsAcrossFailover(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	java, cp := buildJavaMember(t)
	props := maps.Clone(clusterProps)
	props["group.initial.rebalance.delay.ms"] = "0"
	zk := brokertest.SharedZooKeeper(t)
	c := brokertest.StartCluster(t, 3, zk.Connect(""), props)
	adm := admin(t, c.Addrs())
	const topic, group, partitions = "mixed", "mixed-group", 6
	td := createReplicated(t, adm, topic, partitions)
	victim := leaderOf(td, 0)
	var seeds []string
	for id, px := range c.Proxies {
		if id != victim {
			seeds = append(seeds, px.Addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	l := newLedger()
	l.startMember(t, ctx, seeds[0], group, "fz", topic, kgo.Balancers(kgo.RangeBalancer()))
	l.startJavaMember(t, java, cp, strings.Join(seeds, ","), topic, group, "java", "range,cooperative-sticky")
	kc := exec.Command(kcat, "-b", strings.Join(seeds, ","), "-G", group, "-u", "-q", "-f", "%s\n",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=300", "-X", "auto.commit.interval.ms=100",
		"-X", "partition.assignment.strategy=range,roundrobin", "-o", "beginning", topic)
	kout, err := kc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kc.Process.Kill(); kc.Wait() })
	go func() {
		sc := bufio.NewScanner(kout)
		for sc.Scan() {
			l.record(group, "kcat", sc.Text())
		}
	}()
	waitDescribed(t, ctx, adm, group, "a stable group of franz-go, Java and kcat", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 3
	})

	hist := brokertest.NewHistory()
	load := startLoad(t, c.Addrs(), topic, partitions, 1, hist)

	// The Java producer reports each acknowledgement; kcat exits 0 only if all were.
	jp := exec.Command(java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "Producer", strings.Join(c.Addrs(), ","), topic)
	jin, err := jp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	jout, err := jp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	jp.Stderr = testWriter{t}
	kp := exec.Command(kcat, "-b", strings.Join(c.Addrs(), ","), "-P", "-t", topic, "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5")
	kin, err := kp.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	kp.Stderr = testWriter{t}
	for _, cmd := range []*exec.Cmd{jp, kp} {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	javaAcks := make(chan int, 1)
	var javaAcked atomic.Int64
	go func() {
		n := 0
		sc := bufio.NewScanner(jout)
		for sc.Scan() {
			var v string
			var p int32
			var off int64
			if _, err := fmt.Sscanf(sc.Text(), "ACK %s %d %d", &v, &p, &off); err == nil {
				hist.Acked(p, off, v)
				javaAcked.Add(1)
				n++
			}
		}
		javaAcks <- n
	}()
	const perProducer = 1500
	var kcatValues []string
	feed := func(from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(jin, "j-%05d\n", i)
			kv := fmt.Sprintf("k-%05d", i)
			kcatValues = append(kcatValues, kv)
			fmt.Fprintln(kin, kv)
		}
	}
	// A third before the kill, acknowledged; the rest while the partition fails over.
	feed(0, perProducer/3)
	brokertest.WaitFor(t, time.Minute, "the Java producer's first third acknowledged", func() bool { return javaAcked.Load() >= perProducer/3 })
	c.Kill(t, victim)
	feed(perProducer/3, perProducer)
	jin.Close()
	kin.Close()
	if err := kp.Wait(); err != nil {
		t.Fatalf("kcat producer: %v (not every record was delivered)", err)
	}
	if err := jp.Wait(); err != nil {
		t.Fatalf("java producer: %v (not every record was acknowledged)", err)
	}
	if n := <-javaAcks; n != perProducer {
		t.Fatalf("java acknowledged %d of %d records", n, perProducer)
	}
	load.Stop()

	reads := readAll(t, c.Addrs(), topic, adm, hist)
	t.Log("history (franz-go and Java acknowledgements): " + hist.Check(t, reads))
	inLog := map[string]bool{}
	var all []string
	for _, r := range reads {
		inLog[r.Value] = true
		all = append(all, r.Value)
	}
	for _, v := range kcatValues {
		if !inLog[v] {
			t.Fatalf("kcat delivered %q but it is not in the log", v)
		}
	}
	l.waitFor(t, ctx, "the group consumed every record at least once", func() bool {
		for _, v := range all {
			if l.consumed[group][v] == 0 {
				return false
			}
		}
		return true
	})
	who := l.countBy(group, all)
	t.Logf("leader %d killed; %d records in the log; consumed by %v", victim, len(all), who)
}
