package main

// The cluster workloads: three brokers of each system on their own ZooKeeper (Debian's
// zookeeper package), topics with replication factor 3 and min.insync.replicas=2. C1: acks=all
// produce throughput of 100 B and 1 KiB records under each load generator, and the failover
// time under kill -9 of a partition leader, measured with one franz-go producer for both. C2:
// end-to-end latency (send until a long-polling consumer has it) of one partition at a fixed
// low rate under each load generator. Both run on the same clusters, C2 first (on a quiet
// cluster), then C1's produce phases, then its kill.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterID is the cluster workload's id in -only, the tables and work directories.
const clusterID = "C1"

// clusterHeading starts the cluster workload's section of the report.
const clusterHeading = "## Cluster (" + clusterID + ")"

// e2eClusterID is the cluster end-to-end latency workload's id in -only and the tables.
const e2eClusterID = "C2"

// e2eClusterHeading starts C2's section of the report.
const e2eClusterHeading = "## Cluster end-to-end latency (" + e2eClusterID + ")"

// e2eClusterTarget is issue 27's goal for C2: Spool's p99 at most this times Kafka's.
const e2eClusterTarget = 0.5

// clusterBrokers is the number of brokers of each cluster, node ids 1..clusterBrokers.
const clusterBrokers = 3

// clusterSizes are the cluster workloads' record counts and rates, and which of them run.
type clusterSizes struct {
	records100, records1k int64
	probeRate             int // records/s the failover prober writes, over all partitions
	// e2eRecords at e2eRate records/s are C2's: spool bench e2e sends them open loop at
	// that rate; Kafka's EndToEndLatency sends as many, one at a time (closed loop).
	e2eRecords int64
	e2eRate    int
	// c1 and c2 say which cluster workloads run (-only); both share the clusters.
	c1, c2 bool
}

// fullClusterSizes: each produce phase takes a few seconds against either cluster on a 2-core
// machine; 2,000 records/s is the rate of the Kafka measurement quoted in issue 11. C2 sends
// 200 records/s for 30 s (issue 27: a fixed low rate, far below what either cluster takes).
var fullClusterSizes = clusterSizes{records100: 300_000, records1k: 60_000, probeRate: 2_000, e2eRecords: 6_000, e2eRate: 200, c1: true, c2: true}
var quickClusterSizes = clusterSizes{records100: 3_000, records1k: 1_000, probeRate: 500, e2eRecords: 200, e2eRate: 200, c1: true, c2: true}

func (s clusterSizes) scaled(f float64) clusterSizes {
	m := func(n int64) int64 { return max(1, int64(float64(n)*f)) }
	s.records100, s.records1k, s.e2eRecords = m(s.records100), m(s.records1k), m(s.e2eRecords)
	return s
}

// ids names the cluster workloads that run, for log lines ("C1+C2").
func (s clusterSizes) ids() string {
	var ids []string
	if s.c2 {
		ids = append(ids, e2eClusterID)
	}
	if s.c1 {
		ids = append(ids, clusterID)
	}
	return strings.Join(ids, "+")
}

// quickKafkaClusterProps are added to the Kafka cluster brokers' properties in the quick
// smoke run: its failover waits 6 s for the killed broker's ZooKeeper session (the least
// ZooKeeper's tickTime of 2 s allows with some margin) instead of Kafka's 18 s.
const quickKafkaClusterProps = "zookeeper.session.timeout.ms=6000\n"

// clusterTopicPartitions is the partition count of every cluster topic.
const clusterTopicPartitions = 6

// zkJars are the jars of Debian's zookeeper package a standalone server needs.
var zkJars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-handler.jar", "netty-common.jar",
	"netty-transport.jar", "netty-buffer.jar", "netty-codec.jar", "netty-resolver.jar", "netty-transport-native-epoll.jar",
	"netty-transport-native-unix-common.jar", "metrics-core.jar", "snappy-java.jar"}

// cluster is one system's three brokers and their ZooKeeper, started for one repetition.
type cluster struct {
	sys     system
	zk      *broker
	brokers map[int32]*broker
	adm     *kadm.Client
	admCl   *kgo.Client
}

// startZooKeeper starts a standalone ZooKeeper with its defaults (tickTime 2000, so sessions
// of 4 to 40 s) on a free loopback port, and waits until it serves.
func (h *harness) startZooKeeper(ctx context.Context, dir string) (*broker, error) {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return nil, errors.New("ZooKeeper not found in /usr/share/java: install Debian's zookeeper package (make deps)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	var cp []string
	for _, j := range zkJars {
		cp = append(cp, "/usr/share/java/"+j)
	}
	z := &broker{sys: system{Name: "zookeeper"}, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), logPath: filepath.Join(dir, "stdout.log"), exited: make(chan struct{})}
	z.cmd = exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", strings.Join(cp, ":"),
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	if err := z.launch(ctx, func() bool { return strings.Contains(fourLetter(z.addr, "srvr"), "Mode:") }); err != nil {
		return nil, err
	}
	return z, nil
}

// fourLetter sends a ZooKeeper four-letter command and returns the answer ("" on error).
func fourLetter(addr, cmd string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return ""
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// startCluster starts ZooKeeper and three brokers of sys under dir, each at its defaults
// (plus group.initial.rebalance.delay.ms=0, as the single-node runs), and waits until the
// metadata of every broker lists all three.
func (h *harness) startCluster(ctx context.Context, sys system, dir string) (_ *cluster, err error) {
	zk, err := h.startZooKeeper(ctx, filepath.Join(dir, "zookeeper"))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	c := &cluster{sys: sys, zk: zk, brokers: map[int32]*broker{}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for id := int32(1); id <= clusterBrokers; id++ {
		bdir := filepath.Join(dir, fmt.Sprintf("broker-%d", id))
		err := h.startClusterBroker(ctx, c, id, bdir)
		for try := 1; err != nil && try < 3 && portTaken(bdir); try++ {
			// Another process took the free port before the JVM bound it (other work runs
			// on this machine): try another.
			logf("  %s broker %d: its port was taken before it bound it; again on another", sys.Name, id)
			removeAll(bdir)
			err = h.startClusterBroker(ctx, c, id, bdir)
		}
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", id, err)
		}
	}
	if c.admCl, err = kgo.NewClient(kgo.SeedBrokers(c.addrs()...)); err != nil {
		return nil, err
	}
	c.adm = kadm.NewClient(c.admCl)
	err = waitUntil(ctx, 90*time.Second, "every broker registered", func() (bool, string) {
		for _, b := range c.brokers {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
			if err != nil {
				return false, err.Error()
			}
			md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err != nil || len(md.Brokers) < clusterBrokers {
				return false, fmt.Sprintf("%s lists %d brokers (%v)", b.addr, len(md.Brokers), err)
			}
		}
		return true, ""
	})
	return c, err
}

// portTaken reports whether the broker under dir failed to start because its port was in use.
func portTaken(dir string) bool {
	for _, f := range []string{"stdout.log", "broker.log"} {
		if fileContains(filepath.Join(dir, f), "Address already in use") {
			return true
		}
	}
	return false
}

func (h *harness) startClusterBroker(ctx context.Context, c *cluster, id int32, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	b := &broker{sys: c.sys, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), logPath: filepath.Join(dir, "broker.log"), exited: make(chan struct{})}
	var ready func() bool
	switch c.sys.Kind {
	case "kafka":
		props := fmt.Sprintf(`# generated by bench-compare: ZooKeeper mode, Kafka defaults otherwise
broker.id=%d
listeners=PLAINTEXT://%s
advertised.listeners=PLAINTEXT://%s
log.dirs=%s
zookeeper.connect=%s/kafka
group.initial.rebalance.delay.ms=0
`, id, b.addr, b.addr, filepath.Join(dir, "data"), c.zk.addr)
		if h.quick {
			props += quickKafkaClusterProps
		}
		propsPath := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
			return err
		}
		log4j := fmt.Sprintf("log4j.rootLogger=INFO, f\nlog4j.appender.f=org.apache.log4j.FileAppender\nlog4j.appender.f.File=%s\nlog4j.appender.f.layout=org.apache.log4j.PatternLayout\nlog4j.appender.f.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n", b.logPath)
		log4jPath := filepath.Join(dir, "log4j.properties")
		if err := os.WriteFile(log4jPath, []byte(log4j), 0o644); err != nil {
			return err
		}
		args := h.brokerJVM()
		args = append(args, "-Dlog4j.configuration=file:"+log4jPath, "-cp", h.classpath, "kafka.Kafka", propsPath)
		b.cmd = exec.Command("java", args...)
		ready = func() bool { return fileContains(b.logPath, "started (kafka.server.KafkaServer)") }
	case "spool":
		b.cmd = exec.Command(h.spoold, "--node-id", fmt.Sprint(id), "--listen", b.addr, "--data-dir", filepath.Join(dir, "data"),
			"--zookeeper", c.zk.addr+"/spool", "--fsync", c.sys.Fsync, "--log-level", "warn", "--set", "group.initial.rebalance.delay.ms=0")
		ready = func() bool { return reachable(b.addr) }
	default:
		return fmt.Errorf("unknown broker kind %q", c.sys.Kind)
	}
	if err := b.launch(ctx, ready); err != nil {
		return err
	}
	c.brokers[id] = b
	return nil
}

func (c *cluster) addrs() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(c.brokers)) {
		out = append(out, c.brokers[id].addr)
	}
	return out
}

// bootstrap is the brokers' addresses, comma-separated, for the load generators.
func (c *cluster) bootstrap() string { return strings.Join(c.addrs(), ",") }

// cpuSeconds is utime+stime of the cluster's live brokers.
func (c *cluster) cpuSeconds() float64 {
	var sum float64
	for _, b := range c.brokers {
		if b.Alive() == nil {
			if s, err := b.CPUSeconds(); err == nil {
				sum += s
			}
		}
	}
	return sum
}

// alive is an error naming the first broker that exited when it should not have.
func (c *cluster) alive(except int32) error {
	for id, b := range c.brokers {
		if id != except {
			if err := b.Alive(); err != nil {
				return fmt.Errorf("broker %d: %w", id, err)
			}
		}
	}
	return nil
}

func (c *cluster) logTail() string {
	var s strings.Builder
	for _, id := range slices.Sorted(maps.Keys(c.brokers)) {
		s.WriteString(tail(c.brokers[id].logTail(), 1500))
	}
	return s.String()
}

// Stop stops the brokers together (SIGTERM: Kafka's controlled shutdown), then ZooKeeper.
func (c *cluster) Stop() {
	if c.admCl != nil {
		c.admCl.Close()
	}
	var wg sync.WaitGroup
	for id, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Stop(); err != nil {
				logf("  stopping %s broker %d: %v", c.sys.Name, id, err)
			}
		}()
	}
	wg.Wait()
	c.zk.Stop()
}

// waitUntil polls cond every 50 ms until it holds, ctx ends or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (last: %s)", what, timeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createTopic creates topic with clusterTopicPartitions partitions, replication factor 3 and
// min.insync.replicas=2 through franz-go's admin client (the same for both systems) and waits
// until every partition has a leader and all three replicas in its ISR.
func (c *cluster) createTopic(ctx context.Context, topic string) error {
	return c.createTopicN(ctx, topic, clusterTopicPartitions)
}

// createTopicN is createTopic with partitions partitions.
func (c *cluster) createTopicN(ctx context.Context, topic string, partitions int) error {
	minISR := "2"
	res, err := c.adm.CreateTopic(ctx, int32(partitions), clusterBrokers, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	_, err = c.waitPartitionsN(ctx, topic, partitions, "every partition led with an ISR of 3", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && len(p.ISR) == clusterBrokers
	})
	return err
}

func (c *cluster) waitPartitions(ctx context.Context, topic, what string, cond func(kadm.PartitionDetail) bool) (kadm.TopicDetail, error) {
	return c.waitPartitionsN(ctx, topic, clusterTopicPartitions, what, cond)
}

func (c *cluster) waitPartitionsN(ctx context.Context, topic string, partitions int, what string, cond func(kadm.PartitionDetail) bool) (kadm.TopicDetail, error) {
	var td kadm.TopicDetail
	err := waitUntil(ctx, 60*time.Second, topic+": "+what, func() (bool, string) {
		md, err := c.adm.Metadata(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td = md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != partitions {
			return false, fmt.Sprintf("%d partitions (%v)", len(td.Partitions), td.Err)
		}
		for _, p := range td.Partitions {
			if !cond(p) {
				return false, fmt.Sprintf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return true, ""
	})
	return td, err
}

// killResult is one kill -9 of a partition leader: per partition, the time from the kill to
// the first acknowledgement of a record sent after it.
type killResult struct {
	Victim int32
	// Controller: the victim was also the cluster's controller, whose loss the survivors
	// must detect before they can elect new leaders.
	Controller bool
	Led        []int32 // partitions the victim led at the kill
	Followed   []int32 // partitions it followed
	Down       map[int32]time.Duration
}

// worst is the longest unavailability over parts.
func (k killResult) worst(parts []int32) time.Duration {
	var w time.Duration
	for _, p := range parts {
		w = max(w, k.Down[p])
	}
	return w
}

// failover writes rate records/s of 100 B, spread evenly over the partitions of a new topic,
// with one franz-go producer (acks=all, idempotent: its defaults) until every partition has
// acknowledged writes, kills -9 the leader of partition 0, and waits until every partition
// has acknowledged a record sent after the kill.
func (c *cluster) failover(ctx context.Context, rate int, killController bool) (killResult, error) {
	const topic = "cfail"
	if err := c.createTopic(ctx, topic); err != nil {
		return killResult{}, err
	}
	// Metadata may be refreshed every 100 ms and a failed write retried after 100 ms, as the
	// Java client's retry.backoff.ms: with franz-go's defaults (metadata at most every 5 s)
	// the client, not the cluster, would set a floor of about 5 s under every failover.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		// A broker that has not yet heard of the new topic answers UNKNOWN_TOPIC_OR_PARTITION;
		// the Java client retries that until its delivery timeout, franz-go only 4 times.
		kgo.UnknownTopicRetries(-1))
	if err != nil {
		return killResult{}, err
	}
	defer cl.Close()
	var mu sync.Mutex
	var killAt time.Time
	acked := map[int32]bool{}           // partitions with any acknowledgement
	firstAfter := map[int32]time.Time{} // first acknowledgement of a record sent after the kill
	var produceErr error
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		value := make([]byte, 100)
		for i := 0; ; i++ {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			afterKill := !killAt.IsZero()
			mu.Unlock()
			r := &kgo.Record{Partition: int32(i % clusterTopicPartitions), Value: value}
			cl.Produce(pctx, r, func(r *kgo.Record, err error) {
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if produceErr == nil && pctx.Err() == nil {
						produceErr = fmt.Errorf("partition %d: %w", r.Partition, err)
					}
					return
				}
				acked[r.Partition] = true
				if _, ok := firstAfter[r.Partition]; afterKill && !ok {
					firstAfter[r.Partition] = now
				}
			})
		}
	}()
	defer func() { stop(); <-done }()
	state := func(m map[int32]bool, n int) func() (bool, string) {
		return func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			if produceErr != nil {
				return true, ""
			}
			return len(m) == n, fmt.Sprintf("%d of %d partitions", len(m), n)
		}
	}
	if err := waitUntil(ctx, 60*time.Second, "acknowledged writes on every partition before the kill", state(acked, clusterTopicPartitions)); err != nil {
		return killResult{}, err
	}
	md, err := c.waitPartitions(ctx, topic, "ISR of 3 under load", func(p kadm.PartitionDetail) bool { return len(p.ISR) == clusterBrokers })
	if err != nil {
		return killResult{}, err
	}
	bm, err := c.adm.BrokerMetadata(ctx)
	if err != nil {
		return killResult{}, fmt.Errorf("metadata: %w", err)
	}
	// The victim leads a partition; it is the controller when killController is set and
	// the controller leads one, else a broker that is not the controller.
	k := killResult{Victim: -1, Down: map[int32]time.Duration{}}
	for _, p := range md.Partitions.Sorted() {
		if (p.Leader == bm.Controller) == killController {
			k.Victim = p.Leader
			break
		}
	}
	if k.Victim < 0 {
		k.Victim = md.Partitions.Sorted()[0].Leader
	}
	k.Controller = bm.Controller == k.Victim
	for _, p := range md.Partitions.Sorted() {
		if p.Leader == k.Victim {
			k.Led = append(k.Led, p.Partition)
		} else if slices.Contains(p.Replicas, k.Victim) {
			k.Followed = append(k.Followed, p.Partition)
		}
	}
	victim, ok := c.brokers[k.Victim]
	if !ok {
		return k, fmt.Errorf("the leader %d to kill is not one of the cluster's brokers", k.Victim)
	}
	mu.Lock()
	killAt = time.Now()
	mu.Unlock()
	if err := victim.cmd.Process.Kill(); err != nil {
		return k, fmt.Errorf("kill -9 broker %d: %w", k.Victim, err)
	}
	<-victim.exited
	after := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if produceErr != nil {
			return true, ""
		}
		return len(firstAfter) == clusterTopicPartitions, fmt.Sprintf("%d of %d partitions written since the kill", len(firstAfter), clusterTopicPartitions)
	}
	if err := waitUntil(ctx, 3*time.Minute, fmt.Sprintf("acknowledged writes on every partition after kill -9 of broker %d", k.Victim), after); err != nil {
		return k, err
	}
	mu.Lock()
	defer mu.Unlock()
	if produceErr != nil {
		return k, fmt.Errorf("franz-go producer: %w", produceErr)
	}
	for p, at := range firstAfter {
		k.Down[p] = at.Sub(killAt)
	}
	return k, c.alive(k.Victim)
}

// clusterResults are the cluster workload's runs.
type clusterResults struct {
	sizes clusterSizes
	tput  map[string]map[string]map[int][]result // load generator -> system -> record size -> runs
	kills map[string][]killResult                // system -> kills
	e2e   map[string]map[string][]result         // C2: load generator -> system -> runs
}

// clusterRecordSizes are the value sizes of the throughput phases.
var clusterRecordSizes = []int{100, 1024}

func newClusterResults(sz clusterSizes) *clusterResults {
	return &clusterResults{sizes: sz, tput: map[string]map[string]map[int][]result{}, kills: map[string][]killResult{}, e2e: map[string]map[string][]result{}}
}

// runCluster runs the cluster workload r.reps times against every system, interleaved: per
// repetition and system a fresh ZooKeeper and three brokers, a produce phase per load
// generator and record size, then one kill -9 of a leader. Failed phases go into r.failures;
// it returns an error only when ctx ends.
func (h *harness) runCluster(ctx context.Context, r *report, sz clusterSizes) error {
	if r.cluster == nil {
		r.cluster = newClusterResults(sz)
	}
	cr := r.cluster
	for rep := 1; rep <= r.reps; rep++ {
		order := slices.Clone(r.systems)
		if rep%2 == 0 {
			slices.Reverse(order)
		}
		for _, sys := range order {
			dir := filepath.Join(h.workDir, fmt.Sprintf("%s-%s-r%d", clusterID, sys.Name, rep))
			failed := len(r.failures)
			fail := func(phase string, err error) {
				id := clusterID
				if !sz.c1 || phase == "cluster start" && sz.c2 {
					id = sz.ids()
				}
				r.failures = append(r.failures, h.recordClusterFailure(dir, id, phase, sys, rep, err))
			}
			began := time.Now()
			c, err := h.startCluster(ctx, sys, dir)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				fail("cluster start", err)
				continue
			}
			logf("  %-4s %-14s rep %d: cluster of %d up in %.1fs", sz.ids(), sys.Name, rep, clusterBrokers, time.Since(began).Seconds())
			for _, lg := range r.lgs {
				if !sz.c2 {
					break
				}
				if !lg.Can(needE2E) {
					continue
				}
				res, err := h.clusterEndToEnd(ctx, c, lg, sz)
				if ctx.Err() != nil {
					c.Stop()
					return ctx.Err()
				}
				if err != nil {
					r.failures = append(r.failures, h.recordClusterFailure(dir, e2eClusterID, "e2e "+lg.Short(), sys, rep, err))
					continue
				}
				if cr.e2e[lg.Name()] == nil {
					cr.e2e[lg.Name()] = map[string][]result{}
				}
				cr.e2e[lg.Name()][sys.Name] = append(cr.e2e[lg.Name()][sys.Name], res)
				logf("  %-4s %-14s %-2s rep %d: %10.0f rec/s  p50 %6.1f p99 %6.1f p99.9 %6.1f ms  CPU %5.1f s (3 brokers)  client CPU %5.1f s",
					e2eClusterID, sys.Name, lg.Short(), rep, res.RecPerSec, res.P50, res.P99, res.P999, res.CPU, res.ClientCPU)
			}
			for _, lg := range r.lgs {
				if !sz.c1 {
					break
				}
				for _, size := range clusterRecordSizes {
					res, err := h.clusterProduce(ctx, c, lg, size, sz)
					if ctx.Err() != nil {
						c.Stop()
						return ctx.Err()
					}
					if err != nil {
						fail(fmt.Sprintf("produce %d B", size), err)
						continue
					}
					if cr.tput[lg.Name()] == nil {
						cr.tput[lg.Name()] = map[string]map[int][]result{}
					}
					if cr.tput[lg.Name()][sys.Name] == nil {
						cr.tput[lg.Name()][sys.Name] = map[int][]result{}
					}
					cr.tput[lg.Name()][sys.Name][size] = append(cr.tput[lg.Name()][sys.Name][size], res)
					logf("  %-4s %-14s %-2s rep %d: %4d B %10.0f rec/s %8.1f MB/s  p50 %6.1f p99 %6.1f ms  CPU %5.1f s (3 brokers)",
						clusterID, sys.Name, lg.Short(), rep, size, res.RecPerSec, res.MBPerSec, res.P50, res.P99, res.CPU)
				}
			}
			if sz.c1 {
				// Odd repetitions kill a leader that is not the controller, even ones the
				// controller (when it leads a partition): the report keeps them apart.
				k, err := c.failover(ctx, sz.probeRate, rep%2 == 0)
				if ctx.Err() != nil {
					c.Stop()
					return ctx.Err()
				}
				if err != nil {
					fail("failover", fmt.Errorf("%w\n%s\n%s", err, brokerOutputHeader, c.logTail()))
				} else {
					cr.kills[sys.Name] = append(cr.kills[sys.Name], k)
					logf("  %-4s %-14s rep %d: kill -9 of broker %d (controller: %v): its %d led partitions writable again after %s, the %d it followed after %s",
						clusterID, sys.Name, rep, k.Victim, k.Controller, len(k.Led), k.worst(k.Led).Round(time.Millisecond), len(k.Followed), k.worst(k.Followed).Round(time.Millisecond))
				}
			}
			c.Stop()
			switch {
			case h.keep:
			case failed < len(r.failures):
				// Keep the logs that explain the failure; drop the data.
				for id := range c.brokers {
					removeAll(filepath.Join(dir, fmt.Sprintf("broker-%d", id), "data"))
				}
			default:
				removeAll(dir)
			}
		}
	}
	return nil
}

// runConcurrentCluster runs the cluster workload into r while single (the single-node
// workloads) runs, then writes the report. The cluster side collects into a report of its
// own, merged into r when both are done, so the two never share state; a load generator's
// client CPU (children's rusage) then counts what ran beside it, as nothing else in the quick
// smoke run's numbers means anything either.
func (h *harness) runConcurrentCluster(ctx context.Context, r *report, csz clusterSizes, single func() error) error {
	began := time.Now()
	cr := &report{h: h, systems: r.systems, lgs: r.lgs, reps: r.reps, mode: r.mode, cluster: newClusterResults(csz)}
	done := make(chan error, 1)
	go func() {
		err := h.runCluster(ctx, cr, csz)
		logf("%s took %s, beside the single-node workloads", csz.ids(), time.Since(began).Round(time.Second))
		done <- err
	}()
	err := single()
	cerr := <-done
	r.cluster = cr.cluster
	r.failures = append(r.failures, cr.failures...)
	r.elapsed = time.Since(began)
	if err != nil {
		return err
	}
	if cerr != nil {
		r.partial = fmt.Sprintf("the run stopped during %s: %s", csz.ids(), firstLine(cerr.Error()))
		if werr := r.write(); werr != nil {
			logf("writing the partial report: %v", werr)
		}
		return fmt.Errorf("interrupted by a signal during %s: %w", csz.ids(), cerr)
	}
	r.partial = ""
	return r.write()
}

// clusterProduce creates a topic for the phase and produces to it with lg, acks=all, as fast
// as lg goes; CPU is the three brokers'.
func (h *harness) clusterProduce(ctx context.Context, c *cluster, lg loadgen, size int, sz clusterSizes) (result, error) {
	topic := fmt.Sprintf("c%d-%s", size, strings.ToLower(lg.Short()))
	if err := c.createTopic(ctx, topic); err != nil {
		return result{}, err
	}
	n := sz.records100
	if size >= 1000 {
		n = sz.records1k
	}
	c0, l0 := c.cpuSeconds(), childrenCPUSeconds()
	res, err := lg.Produce(ctx, c.bootstrap(), produceSpec{Topic: topic, Records: n, Size: size, Acks: "all", Throughput: -1})
	if err != nil {
		return result{}, fmt.Errorf("%w\n%s\n%s", err, brokerOutputHeader, c.logTail())
	}
	if err := c.alive(-1); err != nil {
		return result{}, err
	}
	res.CPU, res.ClientCPU = c.cpuSeconds()-c0, childrenCPUSeconds()-l0
	return res, nil
}

// clusterEndToEnd is C2 with lg on c: a fresh topic of one partition (replication factor 3,
// min.insync.replicas=2, a full ISR), then lg's end-to-end latency mode with acks=all and
// 100 B records, bootstrapping from all three brokers; CPU is the three brokers'.
func (h *harness) clusterEndToEnd(ctx context.Context, c *cluster, lg loadgen, sz clusterSizes) (result, error) {
	topic := "c2-" + strings.ToLower(lg.Short())
	if err := c.createTopicN(ctx, topic, 1); err != nil {
		return result{}, err
	}
	c0, l0 := c.cpuSeconds(), childrenCPUSeconds()
	res, err := lg.EndToEnd(ctx, c.bootstrap(), topic, sz.e2eRecords, 100, "all", sz.e2eRate)
	if err != nil {
		return result{}, fmt.Errorf("%w\n%s\n%s", err, brokerOutputHeader, c.logTail())
	}
	if err := c.alive(-1); err != nil {
		return result{}, err
	}
	res.CPU, res.ClientCPU = c.cpuSeconds()-c0, childrenCPUSeconds()-l0
	return res, nil
}

// recordClusterFailure writes err to dir/<phase>.failure.log beside the brokers' logs; id
// names the workload (C1, C2, or C2+C1 for the cluster start both share).
func (h *harness) recordClusterFailure(dir, id, phase string, sys system, rep int, err error) failure {
	f := failure{Workload: id + " " + phase, Loadgen: "–", System: sys.Name, Rep: rep, Reason: shortReason(err),
		Log: filepath.Join(dir, strings.ReplaceAll(phase, " ", "-")+".failure.log")}
	werr := os.MkdirAll(dir, 0o755)
	if werr == nil {
		werr = os.WriteFile(f.Log, []byte(err.Error()+"\n"), 0o644)
	}
	if werr != nil {
		logf("  writing %s: %v; the failure was:\n%s", f.Log, werr, err)
		f.Log = ""
	}
	logf("  %-4s %-14s rep %d: %s FAILED: %s (log: %s)", id, sys.Name, rep, phase, f.Reason, f.Log)
	return f
}

// clusterMarkdown is the report's cluster section, or "" when the workload did not run.
func (r *report) clusterMarkdown() string {
	cr := r.cluster
	if cr == nil || !cr.sizes.c1 {
		return ""
	}
	var b strings.Builder
	b.WriteString(clusterHeading + ": 3 brokers, replication factor 3, min.insync.replicas=2, acks=all\n\n")
	fmt.Fprintf(&b, "Run %s UTC, %s mode, %d repetition(s) per system, interleaved, medians; load average (1, 5, 15 min) %s at the start of the whole run, %s when this section was written (2 cores: above 2, other work competed). `cd bench && GOWORK=off go run . %s`\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.mode, r.reps, r.loadStart, loadAverage(), strings.Join(r.args, " "))
	fmt.Fprintf(&b, "Per repetition and system: a fresh ZooKeeper (Debian's, its defaults) and three brokers on loopback at their defaults (Kafka %s in ZooKeeper mode, the JVM flags above; spoold --zookeeper with node ids 1..3), group.initial.rebalance.delay.ms=0 on both. "+
		"Every topic has %d partitions, replication factor 3 and min.insync.replicas=2, created with franz-go's admin client and used once its every partition has a full ISR. "+
		"Throughput: each load generator produces %d records of 100 B and %d of 1 KiB, acks=all, unthrottled, bootstrapping from all three brokers (CPU is the three brokers' together). "+
		"Failover: one franz-go producer (acks=all, idempotent, metadata refreshed at most every 100 ms and failed writes retried after 100 ms as the Java client's retry.backoff.ms, where franz-go's default of 5 s between metadata refreshes would floor every failover at about 5 s; its defaults otherwise) writes %d records/s of 100 B spread evenly over the partitions of a fresh topic; once every partition has acknowledged writes and a full ISR, a partition leader gets kill -9: in odd repetitions one that is not the controller, in even ones the controller (the broker that elects leaders), when it leads a partition. "+
		"A partition's unavailability is the time from the kill to the first acknowledgement of a record sent after it; per kill the table takes the worst partition the killed broker led, and the worst it followed, then the median and maximum over the kills.\n\n",
		kafkaVersion, clusterTopicPartitions, cr.sizes.records100, cr.sizes.records1k, cr.sizes.probeRate)
	b.WriteString("| workload | load generator | broker | records/s | MB/s | p50 ms | p99 ms | CPU s (3 brokers) | client CPU s |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, lg := range r.lgs {
		for _, size := range clusterRecordSizes {
			for _, s := range r.systems {
				rs := cr.tput[lg.Name()][s.Name][size]
				fs := r.clusterFails(s, fmt.Sprintf("produce %d B", size))
				broker := s.Name
				if len(fs) > 0 {
					broker += fmt.Sprintf(" (%d of %d runs failed)", len(fs), len(fs)+len(rs))
				}
				if len(rs) == 0 {
					fmt.Fprintf(&b, "| %s produce %d B | %s | %s | failed | – | – | – | – | – |\n", clusterID, size, lg.Name(), broker)
					continue
				}
				m := medianResult(rs)
				fmt.Fprintf(&b, "| %s produce %d B | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", clusterID, size, lg.Name(), broker, fmtRate(m.RecPerSec), m.MBPerSec, m.P50, m.P99, m.CPU, m.ClientCPU)
			}
		}
	}
	b.WriteString("\n| failover: kill -9 of | broker | kills | led partitions p50 s | led max s | followed partitions p50 s | followed max s |\n|---|---|---:|---:|---:|---:|---:|\n")
	p50 := map[string]map[bool]float64{}
	for _, ctrl := range []bool{false, true} {
		for _, s := range r.systems {
			var ks []killResult
			for _, k := range cr.kills[s.Name] {
				if k.Controller == ctrl {
					ks = append(ks, k)
				}
			}
			if len(ks) == 0 {
				continue
			}
			var led, followed []float64
			for _, k := range ks {
				led = append(led, k.worst(k.Led).Seconds())
				followed = append(followed, k.worst(k.Followed).Seconds())
			}
			if p50[s.Name] == nil {
				p50[s.Name] = map[bool]float64{}
			}
			p50[s.Name][ctrl] = median(led)
			fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %.2f | %.2f |\n", victimKind(ctrl), s.Name, len(ks), median(led), slices.Max(led), median(followed), slices.Max(followed))
		}
	}
	for _, s := range r.systems {
		if fs := r.clusterFails(s, "failover"); len(fs) > 0 {
			fmt.Fprintf(&b, "| (failed) | %s | %d failed | – | – | – | – |\n", s.Name, len(fs))
		}
	}
	if !r.hasKafka() {
		return b.String() + "\n"
	}
	b.WriteString("\nRatios, Spool / Kafka (medians; throughput > 1 is better, failover < 1 is better):\n\n| workload | load generator | Spool | ratio |\n|---|---|---|---:|\n")
	for _, s := range r.systems {
		if s.Name == "kafka" {
			continue
		}
		for _, lg := range r.lgs {
			for _, size := range clusterRecordSizes {
				ks, ss := cr.tput[lg.Name()]["kafka"][size], cr.tput[lg.Name()][s.Name][size]
				if len(ks) == 0 || len(ss) == 0 {
					fmt.Fprintf(&b, "| %s produce %d B records/s | %s | %s | – |\n", clusterID, size, lg.Name(), s.Name)
					continue
				}
				fmt.Fprintf(&b, "| %s produce %d B records/s | %s | %s | %s |\n", clusterID, size, lg.Name(), s.Name, ratio(medianResult(ss).RecPerSec, medianResult(ks).RecPerSec))
			}
		}
		for _, ctrl := range []bool{false, true} {
			if _, ok := p50[s.Name][ctrl]; ok {
				fmt.Fprintf(&b, "| %s failover p50 of the led partitions, kill -9 of %s | franz-go | %s | %s |\n", clusterID, victimKind(ctrl), s.Name, fineRatio(p50[s.Name][ctrl], p50["kafka"][ctrl]))
			}
		}
	}
	return b.String() + "\n"
}

// e2eClusterMarkdown is the report's C2 section, or "" when C2 did not run.
func (r *report) e2eClusterMarkdown() string {
	cr := r.cluster
	if cr == nil || !cr.sizes.c2 {
		return ""
	}
	var b strings.Builder
	b.WriteString(e2eClusterHeading + ": 3 brokers, one partition, replication factor 3, min.insync.replicas=2, acks=all\n\n")
	fmt.Fprintf(&b, "Run %s UTC, %s mode, %d repetition(s) per system, interleaved, medians; load average (1, 5, 15 min) %s at the start of the whole run, %s when this section was written. `cd bench && GOWORK=off go run . %s`\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.mode, r.reps, r.loadStart, loadAverage(), strings.Join(r.args, " "))
	fmt.Fprintf(&b, "Per repetition and system, clusters started as for %s (a fresh ZooKeeper and three brokers at their defaults; in a run with %s, the same clusters, before its produce phases and kill), each load generator gets a fresh topic of one partition with replication factor 3 and min.insync.replicas=2 (franz-go's admin client, used once its ISR is full) and measures the time from send until its consumer has the record, 100 B values, acks=all, bootstrapping from all three brokers. "+
		"`spool bench e2e --records %d --rate %d --acks all --size 100`: open loop at %d records/s (%.0f s), its consumer assigned the partition and long-polling with the Go SDK's default fetch.max.wait.ms=500 and fetch.min.bytes=1, so every record's delivery waits on the broker waking the parked fetch when the high watermark passes it. "+
		"Kafka's EndToEndLatency with %d records: closed loop, one record at a time (send, wait for the acknowledgement, poll until the consumer has it), its consumer with fetch.max.wait.ms=0 (fixed by the tool: it polls again at once instead of long-polling), so it measures replication and high-watermark propagation but not the wake of a parked fetch; it reports whole milliseconds, truncated. "+
		"Issue 27's target: Spool's p99 at most %.1f× Kafka's under the same load generator.\n\n",
		clusterID, clusterID, cr.sizes.e2eRecords, cr.sizes.e2eRate, cr.sizes.e2eRate, float64(cr.sizes.e2eRecords)/float64(max(1, cr.sizes.e2eRate)), cr.sizes.e2eRecords, e2eClusterTarget)
	b.WriteString("| workload | load generator | broker | records/s | p50 ms | p99 ms | p99.9 ms | CPU s (3 brokers) | client CPU s |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, lg := range r.lgs {
		for _, s := range r.systems {
			rs := cr.e2e[lg.Name()][s.Name]
			fs := r.e2eClusterFails(s, lg)
			broker := s.Name
			if len(fs) > 0 {
				broker += fmt.Sprintf(" (%d of %d runs failed)", len(fs), len(fs)+len(rs))
			}
			if len(rs) == 0 {
				if len(fs) > 0 || lg.Can(needE2E) {
					fmt.Fprintf(&b, "| %s e2e 100 B | %s | %s | failed | – | – | – | – | – |\n", e2eClusterID, lg.Name(), broker)
				}
				continue
			}
			m := medianResult(rs)
			fmt.Fprintf(&b, "| %s e2e 100 B | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", e2eClusterID, lg.Name(), broker, fmtRate(m.RecPerSec), m.P50, m.P99, m.P999, m.CPU, m.ClientCPU)
		}
	}
	if !r.hasKafka() {
		return b.String() + "\n"
	}
	b.WriteString("\nRatios, Spool / Kafka (medians; latency < 1 is better):\n\n| workload | load generator | Spool | p50 ratio | p99 ratio | p99 target met |\n|---|---|---|---:|---:|---|\n")
	for _, s := range r.systems {
		if s.Name == "kafka" {
			continue
		}
		for _, lg := range r.lgs {
			ks, ss := cr.e2e[lg.Name()]["kafka"], cr.e2e[lg.Name()][s.Name]
			if len(ks) == 0 || len(ss) == 0 {
				continue
			}
			km, sm := medianResult(ks), medianResult(ss)
			met := "–"
			if km.P99 > 0 {
				met = "no"
				if sm.P99 <= e2eClusterTarget*km.P99 {
					met = "yes"
				}
			}
			fmt.Fprintf(&b, "| %s e2e 100 B | %s | %s | %s | %s | %s (≤ %.1f×) |\n", e2eClusterID, lg.Name(), s.Name, fineRatio(sm.P50, km.P50), fineRatio(sm.P99, km.P99), met, e2eClusterTarget)
		}
	}
	return b.String() + "\n"
}

// e2eClusterFails are the failed C2 runs of system s with lg, and its failed cluster starts.
func (r *report) e2eClusterFails(s system, lg loadgen) []failure {
	var fs []failure
	for _, f := range r.failures {
		if f.System == s.Name && (f.Workload == e2eClusterID+" e2e "+lg.Short() || strings.HasSuffix(f.Workload, " cluster start") && strings.Contains(f.Workload, e2eClusterID)) {
			fs = append(fs, f)
		}
	}
	return fs
}

// fineRatio is a/b with three decimals: failover ratios are far below 0.01.
func fineRatio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f×", a/b)
}

// victimKind names the broker a kill hit in the report.
func victimKind(controller bool) string {
	if controller {
		return "a leader that is also the controller"
	}
	return "a leader (not the controller)"
}

// clusterFails are the failed cluster phases of system s.
func (r *report) clusterFails(s system, phase string) []failure {
	var fs []failure
	for _, f := range r.failures {
		if f.System == s.Name && (f.Workload == clusterID+" "+phase || strings.HasSuffix(f.Workload, " cluster start") && strings.Contains(f.Workload, clusterID)) {
			fs = append(fs, f)
		}
	}
	return fs
}
