package server_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/broker/internal/security"
)

// aclBenchCase is a shape of produce requests for BenchmarkBrokerProduceACLs.
type aclBenchCase struct {
	name string
	// round is the records one configuration produces per round: short, so that the two
	// configurations see the same machine load, long enough to be many produce requests.
	round int
	// maxBuffered is the producer's kgo.MaxBufferedRecords: 1 sends one record per request
	// (each Produce waits for the last one's reply), so that the per-request check weighs the
	// most it can against the work of the request.
	maxBuffered int
}

var aclBenchCases = []aclBenchCase{
	{name: "batched", round: 50_000, maxBuffered: 1 << 20},
	{name: "record-per-request", round: 200, maxBuffered: 1},
}

// BenchmarkBrokerProduceACLs is the cost of authorization on the produce path: franz-go
// producing 100 B records (plaintext, acks=all, 6 partitions, default durability) to two
// broker processes running side by side, one without an authorizer and one whose authorizer
// holds 1,000 ACLs (the bench topic among the resources they name). The two take turns in
// rounds, the first of each pair alternating, so that a noisy machine slows both alike; b.N
// is the number of pairs of rounds:
//
//	go test ./broker/internal/server -run '^$' -bench 'BrokerProduceACLs' -benchtime 200x
//
// Two request shapes: "batched", franz-go's batches as a fast producer makes them, and
// "record-per-request", one 100 B record per produce request, the worst case for a check made
// once per request. It reports the median of the per-pair ratios of records/s (with ACLs /
// without), that median's 95% confidence interval and the ratios' 10th/90th percentiles, the
// broker CPU per record of each, and the check's
// share of the broker's CPU: Authorize's cost on the same 1,000 ACLs measured here × the
// checks the broker made (one per produce request; the requests are counted as the client
// writes them) / the broker's CPU time over the rounds. With SPOOL_BENCH_PPROF=HOST:PORT the
// broker with the ACLs serves Go's pprof profiles there.
func BenchmarkBrokerProduceACLs(b *testing.B) {
	for _, bc := range aclBenchCases {
		b.Run(bc.name, func(b *testing.B) { benchmarkProduceACLs(b, bc) })
	}
}

func benchmarkProduceACLs(b *testing.B, bc aclBenchCase) {
	plain := startACLBenchBroker(b, nil, bc)
	acl := startACLBenchBroker(b, aclBenchBindings(1000), bc)
	var ratios []float64
	var cpu [2]time.Duration
	var rate [2][]float64
	b.ResetTimer()
	for i := range b.N {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		var r [2]float64
		for _, k := range order {
			br := []*aclBenchBroker{plain, acl}[k]
			c0 := br.CPUTime(b)
			start := time.Now()
			produceN(b, br.cl, bc.round, 100)
			r[k] = float64(bc.round) / time.Since(start).Seconds()
			cpu[k] += br.CPUTime(b) - c0
			rate[k] = append(rate[k], r[k])
		}
		ratios = append(ratios, r[1]/r[0])
	}
	b.StopTimer()
	slices.Sort(ratios)
	quantile := func(xs []float64, q float64) float64 { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
	records := float64(b.N * bc.round)
	b.ReportMetric(quantile(ratios, 0.5), "acl/none-median")
	b.ReportMetric(quantile(ratios, 0.1), "acl/none-p10")
	b.ReportMetric(quantile(ratios, 0.9), "acl/none-p90")
	// The median's 95% confidence interval: the order statistics n/2 ± 0.98·√n of the pairs.
	half := int(0.98 * math.Sqrt(float64(len(ratios))))
	b.ReportMetric(ratios[max(0, len(ratios)/2-half)], "acl/none-median-ci95-lo")
	b.ReportMetric(ratios[min(len(ratios)-1, len(ratios)/2+half)], "acl/none-median-ci95-hi")
	for k, name := range []string{"none", "acl"} {
		slices.Sort(rate[k])
		b.ReportMetric(quantile(rate[k], 0.5), "records/s-"+name)
		b.ReportMetric(float64(cpu[k].Nanoseconds())/records, "cpu-ns/record-"+name)
	}
	// The check's share of the broker's CPU, from the requests the ACL broker served.
	authNs := authorizeNs(b, aclBenchBindings(1000))
	checks := acl.produceRequests.Load() - acl.warmupRequests
	b.ReportMetric(authNs, "authorize-ns")
	b.ReportMetric(records/float64(checks), "records/request")
	b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(checks), "cpu-ns/request")
	b.ReportMetric(100*authNs*float64(checks)/float64(cpu[1].Nanoseconds()), "authorize-%-of-cpu")
}

// aclBenchBroker is a process broker with a producer that counts its produce requests.
type aclBenchBroker struct {
	*brokertest.Broker
	cl              *kgo.Client
	produceRequests atomic.Int64
	warmupRequests  int64 // produce requests before the measured rounds
}

// OnBrokerWrite counts the produce requests the client sends (a kgo.HookBrokerWrite).
func (a *aclBenchBroker) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		a.produceRequests.Add(1)
	}
}

// startACLBenchBroker starts a broker with the "bench" topic, with an authorizer holding acls
// when there are some, and a warmed-up producer for it.
func startACLBenchBroker(b *testing.B, acls []security.Binding, bc aclBenchCase) *aclBenchBroker {
	props := map[string]string{}
	if len(acls) > 0 {
		if addr := os.Getenv("SPOOL_BENCH_PPROF"); addr != "" {
			props["spool.pprof.listener"] = addr // profile the broker with the ACLs
		}
		props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
		props["allow.everyone.if.no.acl.found"] = "true" // the cluster resource has no ACL: ACLs can be created
	}
	a := &aclBenchBroker{Broker: brokertest.StartProcess(b, brokertest.Options{Props: props})}
	opts := []kgo.Opt{kgo.SeedBrokers(a.Addr)}
	createTopicWith(b, context.Background(), opts, "bench", 6)
	if len(acls) > 0 {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		// One CreateAcls per principal, operation and pattern type (the ALLOW ACLs of those
		// topics): a builder makes every topic × operation of its lists.
		type group struct {
			principal string
			op        security.Operation
			typ       security.PatternType
		}
		topics := map[group][]string{}
		for _, bd := range acls {
			g := group{bd.Entry.Principal, bd.Entry.Operation, bd.Pattern.PatternType}
			topics[g] = append(topics[g], bd.Pattern.Name)
		}
		for g, names := range topics {
			acl := kadm.NewACLs().Allow(g.principal).Topics(names...).Operations(kadm.ACLOperation(g.op))
			if g.typ == security.PatternPrefixed {
				acl = acl.ResourcePatternType(kadm.ACLPatternPrefixed)
			}
			if _, err := adm.CreateACLs(context.Background(), acl); err != nil {
				b.Fatal(err)
			}
		}
		got, err := describeACLs(adm)
		if err != nil || len(got) != len(acls) {
			b.Fatalf("%d ACLs, want %d: %v", len(got), len(acls), err)
		}
		cl.Close()
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithHooks(a), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(bc.maxBuffered),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		b.Fatal(err)
	}
	a.cl = cl
	b.Cleanup(cl.Close)
	produceN(b, cl, bc.round, 100) // warm up: connections, metadata, page cache
	a.warmupRequests = a.produceRequests.Load()
	return a
}

// aclBenchBindings are n ACLs (n even, at least 2) naming topics: User:ANONYMOUS may write
// and describe "bench"; User:someone may write (n-2)/2 other topics by LITERAL name and read
// the topics of as many prefixes ("p0-", "p1-", ...) by PREFIXED name, so that "bench" shares
// the index with a thousand others and its check also looks up every prefix length up to
// its own (Authorize's slow path).
func aclBenchBindings(n int) []security.Binding {
	allow := func(typ security.PatternType, name, principal string, op security.Operation) security.Binding {
		return security.Binding{Pattern: security.Pattern{Type: security.ResourceTopic, PatternType: typ, Name: name},
			Entry: security.Entry{Principal: principal, Host: security.Wildcard, Operation: op, Permission: security.Allow}}
	}
	bs := []security.Binding{
		allow(security.PatternLiteral, "bench", "User:ANONYMOUS", security.OpWrite),
		allow(security.PatternLiteral, "bench", "User:ANONYMOUS", security.OpDescribe),
	}
	for i := range (n - 2) / 2 {
		bs = append(bs, allow(security.PatternLiteral, fmt.Sprintf("other-%d", i), "User:someone", security.OpWrite),
			allow(security.PatternPrefixed, fmt.Sprintf("p%d-", i), "User:someone", security.OpRead))
	}
	return bs
}

// authorizeNs is the median over five runs of the time of one produce request's check (Write
// on "bench" by User:ANONYMOUS from 127.0.0.1) with acls in place, in nanoseconds.
func authorizeNs(b *testing.B, acls []security.Binding) float64 {
	a := security.NewAuthorizer(nil, true)
	a.SetACLs(acls)
	const calls = 200_000
	var runs []float64
	for range 5 {
		start := time.Now()
		for range calls {
			if !a.Authorize("User:ANONYMOUS", "127.0.0.1", security.OpWrite, security.ResourceTopic, "bench") {
				b.Fatal("the bench ACLs do not allow the produce")
			}
		}
		runs = append(runs, float64(time.Since(start).Nanoseconds())/calls)
	}
	slices.Sort(runs)
	return runs[len(runs)/2]
}
