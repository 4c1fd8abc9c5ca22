package server_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// BenchmarkBrokerProduceACLs is the cost of authorization on the produce path: the same
// produce benchmark (100 B, plaintext) without an authorizer and with one holding 1,000 ACLs,
// the bench topic among the resources they name:
//
//	go test ./broker/internal/server -run '^$' -bench 'BrokerProduceACLs' -benchtime 500000x
func BenchmarkBrokerProduceACLs(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			props := map[string]string{}
			if n > 0 {
				props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
				props["allow.everyone.if.no.acl.found"] = "true" // the cluster resource has no ACL: ACLs can be created
			}
			br := brokertest.StartProcess(b, brokertest.Options{Props: props})
			opts := []kgo.Opt{kgo.SeedBrokers(br.Addr)}
			createTopicWith(b, context.Background(), opts, "bench", 6)
			if n > 0 {
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					b.Fatal(err)
				}
				adm := kadm.NewClient(cl)
				var others []string
				for i := range (n - 2) / 2 {
					others = append(others, fmt.Sprintf("other-%d", i))
				}
				for _, acl := range []*kadm.ACLBuilder{
					kadm.NewACLs().Allow("User:ANONYMOUS").Topics("bench").Operations(kadm.OpWrite, kadm.OpDescribe),
					kadm.NewACLs().Allow("User:someone").Topics(others...).Operations(kadm.OpWrite),
					kadm.NewACLs().Allow("User:someone").Topics(others...).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
				} {
					if _, err := adm.CreateACLs(context.Background(), acl); err != nil {
						b.Fatal(err)
					}
				}
				acls, err := describeACLs(adm)
				if err != nil || len(acls) != n {
					b.Fatalf("%d ACLs, want %d: %v", len(acls), n, err)
				}
				cl.Close()
			}
			cl := benchProducer(b, opts)
			defer cl.Close()
			produceN(b, cl, 10000, 100) // warm up
			b.SetBytes(100)
			b.ResetTimer()
			start := time.Now()
			lat := produceN(b, cl, b.N, 100)
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		})
	}
}
