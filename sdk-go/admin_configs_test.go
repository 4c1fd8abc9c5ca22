package spool_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// onKfake reports whether the eachTarget subtest t runs against franz-go's kfake.
func onKfake(t *testing.T) bool { return strings.HasSuffix(t.Name(), "/kfake") }

func configNamed(cfgs []spool.ConfigEntry, name string) (spool.ConfigEntry, bool) {
	i := slices.IndexFunc(cfgs, func(c spool.ConfigEntry) bool { return c.Name == name })
	if i < 0 {
		return spool.ConfigEntry{}, false
	}
	return cfgs[i], true
}

// TestBrokerConfigs describes a broker's configs by its id, as Kafka's Admin does with a
// BROKER resource: every config, or the keys named, with built-in defaults marked. Altering
// them works on Kafka (kfake keeps dynamic broker configs) and is refused by Spool, whose
// broker configs are static.
func TestBrokerConfigs(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		ctx := boundCtx(t)
		ad := newClient(t, addr).Admin()
		ci, err := ad.Cluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id := ci.Brokers[0].NodeID
		all, err := ad.DescribeConfigs(ctx, spool.BrokerResource(id))
		if err != nil {
			t.Fatal(err)
		}
		if len(all) < 3 || !slices.IsSortedFunc(all, func(a, b spool.ConfigEntry) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("broker %d configs: %+v, want several, sorted", id, all)
		}
		// Nobody set min.insync.replicas: the built-in default, 1.
		mir, ok := configNamed(all, "min.insync.replicas")
		if !ok || mir.Value == nil || *mir.Value != "1" || !mir.Default || mir.Source != spool.ConfigSourceDefault {
			t.Fatalf("min.insync.replicas: %+v (found %v), want the default 1", mir, ok)
		}
		if !onKfake(t) {
			// The harness sets num.partitions in the broker's properties.
			np, ok := configNamed(all, "num.partitions")
			if !ok || *np.Value != "3" || np.Default || np.Source != spool.ConfigSourceStaticBroker || !np.ReadOnly {
				t.Fatalf("num.partitions: %+v (found %v), want 3 from the properties, read-only", np, ok)
			}
		}
		one, err := ad.DescribeConfigs(ctx, spool.BrokerResource(id), "min.insync.replicas")
		if err != nil || len(one) != 1 || one[0].Name != "min.insync.replicas" {
			t.Fatalf("one key: %+v, %v", one, err)
		}

		// A broker that is not in the cluster fails at once instead of being retried.
		if _, err := ad.DescribeConfigs(ctx, spool.BrokerResource(id+100)); !errors.Is(err, wire.ErrBrokerNotAvailable) || context.Cause(ctx) != nil {
			t.Fatalf("unknown broker: %v", err)
		}
		if _, err := ad.DescribeConfigs(ctx, spool.ConfigResource{Type: spool.ConfigResourceBroker, Name: "one"}); err == nil || !strings.Contains(err.Error(), "want a broker id") {
			t.Fatalf("broker named one: %v", err)
		}

		two := "2"
		err = ad.AlterConfigs(ctx, spool.BrokerResource(id), map[string]*string{"min.insync.replicas": &two})
		if !onKfake(t) {
			if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), "static") {
				t.Fatalf("altering a Spool broker config: %v, want INVALID_REQUEST saying they are static", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("altering a kfake broker config: %v", err)
		}
		one, err = ad.DescribeConfigs(ctx, spool.BrokerResource(id), "min.insync.replicas")
		if err != nil || len(one) != 1 || *one[0].Value != "2" || one[0].Default || one[0].Source != spool.ConfigSourceDynamicBroker {
			t.Fatalf("after altering: %+v, %v", one, err)
		}
	})
}

// TestTopicConfigsDefaults checks the topic wrappers over the resource-typed calls: an
// override is reported as set for the topic, and deleting it brings back the default.
func TestTopicConfigsDefaults(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		ctx := boundCtx(t)
		cl := newClient(t, addr)
		ad := cl.Admin()
		topic := createTopic(t, cl, 1)
		day := "86400000"
		if err := ad.AlterTopicConfigs(ctx, topic, map[string]*string{"retention.ms": &day}); err != nil {
			t.Fatal(err)
		}
		cfgs, err := ad.DescribeConfigs(ctx, spool.TopicResource(topic), "retention.ms")
		if err != nil || len(cfgs) != 1 || *cfgs[0].Value != day || cfgs[0].Default || cfgs[0].Source != spool.ConfigSourceDynamicTopic {
			t.Fatalf("override: %+v, %v", cfgs, err)
		}
		if err := ad.AlterConfigs(ctx, spool.TopicResource(topic), map[string]*string{"retention.ms": nil}); err != nil {
			t.Fatal(err)
		}
		cfgs, err = ad.DescribeTopicConfigs(ctx, topic, "retention.ms")
		if err != nil || len(cfgs) != 1 || *cfgs[0].Value != "604800000" || !cfgs[0].Default || cfgs[0].Source != spool.ConfigSourceDefault {
			t.Fatalf("after deleting the override: %+v, %v", cfgs, err)
		}
		if _, err := ad.DescribeTopicConfigs(ctx, "no-such-topic"); !errors.Is(err, wire.ErrUnknownTopicOrPartition) {
			t.Fatalf("unknown topic: %v", err)
		}
	})
}
