package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// topicOverrides are the configs DescribeConfigs reports as the topic's own (DYNAMIC_TOPIC_CONFIG).
func topicOverrides(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rc.On(topic, nil)
	if err != nil || r.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, r.Err)
	}
	out := map[string]string{}
	for _, c := range r.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[c.Key] = c.MaybeValue()
		}
	}
	return out
}

// alterConfigs sends one raw AlterConfigs request and returns each resource's error by name.
func alterConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, validateOnly bool, resources ...kmsg.AlterConfigsRequestResource) map[string]error {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	req.Resources = resources
	// Straight to the seed broker: kgo would route a broker resource to the broker it names.
	kr, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kr.(*kmsg.AlterConfigsResponse)
	out := map[string]error{}
	for _, r := range resp.Resources {
		out[r.ResourceName] = kerr.ErrorForCode(r.ErrorCode)
	}
	return out
}

func alterResource(typ kmsg.ConfigResourceType, name string, kv ...*string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = *kv[i], kv[i+1]
		r.Configs = append(r.Configs, c)
	}
	return r
}

// AlterConfigs replaces a topic's whole set of overrides (franz-go's AlterTopicConfigsState),
// the change is visible in what the broker does, and bad requests get Kafka's error codes.
func TestAlterConfigsReplacesTopicConfigs(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordRetries(0), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr("1000"), "cleanup.policy": ptr("compact")}, "replaced"); err != nil {
		t.Fatal(err)
	}
	big := &kgo.Record{Topic: "replaced", Key: []byte("k"), Value: []byte(strings.Repeat("incompressible? no, but uncompressed", 120))}

	// The new set is exactly what is given: the earlier overrides go back to their defaults.
	ar, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptr("1000")}, {Name: "segment.ms", Value: ptr("60000")}}, "replaced")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter: %v %v", err, ar)
	}
	if got, want := topicOverrides(t, ctx, adm, "replaced"), map[string]string{"max.message.bytes": "1000", "segment.ms": "60000"}; !mapsEqual(got, want) {
		t.Errorf("overrides after AlterConfigs: %v, want %v", got, want)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("4320-byte record with max.message.bytes=1000: %v, want MESSAGE_TOO_LARGE", err)
	}

	// ValidateOnly changes nothing; an empty set removes every override.
	if errs := alterConfigs(t, ctx, cl, true, alterResource(kmsg.ConfigResourceTypeTopic, "replaced", ptr("retention.ms"), ptr("5"))); errs["replaced"] != nil {
		t.Errorf("validate only: %v", errs["replaced"])
	}
	if got := topicOverrides(t, ctx, adm, "replaced"); got["retention.ms"] != "" {
		t.Errorf("validate only changed retention.ms to %q", got["retention.ms"])
	}
	if errs := alterConfigs(t, ctx, cl, false, alterResource(kmsg.ConfigResourceTypeTopic, "replaced")); errs["replaced"] != nil {
		t.Fatalf("empty set: %v", errs["replaced"])
	}
	if got := topicOverrides(t, ctx, adm, "replaced"); len(got) != 0 {
		t.Errorf("overrides after an empty AlterConfigs: %v, want none", got)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Errorf("4320-byte record once max.message.bytes is back to its default: %v", err)
	}

	// Kafka's error codes, each resource on its own.
	topic := kmsg.ConfigResourceTypeTopic
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) != 1 {
		t.Fatalf("list brokers: %v %v", brokers, err)
	}
	self := strconv.Itoa(int(brokers[0].NodeID))
	for _, tc := range []struct {
		res  kmsg.AlterConfigsRequestResource
		want error
	}{
		{alterResource(topic, "replaced", ptr("compression.type"), ptr("brotli")), kerr.InvalidConfig},
		{alterResource(topic, "replaced", ptr("retention.mss"), ptr("1")), kerr.InvalidConfig},
		{alterResource(topic, "replaced", ptr("retention.ms"), nil), kerr.InvalidRequest},
		{alterResource(topic, "replaced", ptr("retention.ms"), ptr("1"), ptr("retention.ms"), ptr("2")), kerr.InvalidRequest},
		{alterResource(topic, "nosuch"), kerr.UnknownTopicOrPartition},
		{alterResource(kmsg.ConfigResourceTypeBroker, "", ptr("log.retention.ms"), ptr("1")), kerr.InvalidRequest},
		{alterResource(kmsg.ConfigResourceTypeBroker, "abc"), kerr.InvalidRequest},
		{alterResource(kmsg.ConfigResourceTypeBrokerLogger, "1"), kerr.InvalidRequest},
		{alterResource(kmsg.ConfigResourceTypeBroker, self), nil}, // no dynamic broker configs: already so
	} {
		errs := alterConfigs(t, ctx, cl, false, tc.res)
		if got := errs[tc.res.ResourceName]; !errors.Is(got, tc.want) && !(got == nil && tc.want == nil) {
			t.Errorf("%v %q %d configs: %v, want %v", tc.res.ResourceType, tc.res.ResourceName, len(tc.res.Configs), got, tc.want)
		}
	}
	if got := topicOverrides(t, ctx, adm, "replaced"); len(got) != 0 {
		t.Errorf("refused requests changed the overrides: %v", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// shortJVM is java's command line for the tests' short-lived Java programs (small admin
// clients): args after the flags that start a JVM faster (the client compiler only, the JDK's
// class-data archive). Kafka's tools, whose class path is all jars, start with
// brokertest.FastJVM, which adds an archive of their own classes.
func shortJVM(args ...string) []string {
	return append([]string{"-Xshare:auto", "-XX:TieredStopAtLevel=1"}, args...)
}

// runKafkaTool runs one of Apache Kafka's command-line tools (the class behind a kafka-*.sh
// script) from the jars brokertest fetches, and returns its output.
func runKafkaTool(t *testing.T, ctx context.Context, class string, args ...string) (string, error) {
	t.Helper()
	cp := brokertest.KafkaJars(t)
	jvm := append(brokertest.FastJVM(t, cp, class), "-Dlog4j.configuration=file:/dev/null", "-cp", cp, class)
	cmd := exec.CommandContext(ctx, "/usr/bin/java", append(jvm, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Kafka's own kafka-configs.sh alters and describes a topic's configs on Spool.
func TestKafkaConfigsTool(t *testing.T) {
	heavy(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := admin(t, []string{b.Addr})
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tool-configs"); err != nil {
		t.Fatal(err)
	}
	configs := func(args ...string) string {
		t.Helper()
		out, err := runKafkaTool(t, ctx, "kafka.admin.ConfigCommand", append([]string{"--bootstrap-server", b.Addr, "--entity-type", "topics", "--entity-name", "tool-configs"}, args...)...)
		if err != nil {
			t.Fatalf("kafka-configs %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := configs("--alter", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]"); !strings.Contains(out, "Completed updating config for topic tool-configs") {
		t.Errorf("kafka-configs --alter said:\n%s", out)
	}
	if got, want := topicOverrides(t, ctx, adm, "tool-configs"), map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact,delete"}; !mapsEqual(got, want) {
		t.Errorf("overrides after kafka-configs --alter: %v, want %v", got, want)
	}
	out := configs("--describe")
	lines := strings.Split(out, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "retention.ms=3600000 ") }) ||
		!strings.Contains(out, "Dynamic configs for topic tool-configs are:") {
		t.Errorf("kafka-configs --describe:\n%s", out)
	}
	configs("--alter", "--delete-config", "retention.ms")
	if got, want := topicOverrides(t, ctx, adm, "tool-configs"), map[string]string{"cleanup.policy": "compact,delete"}; !mapsEqual(got, want) {
		t.Errorf("overrides after kafka-configs --delete-config: %v, want %v", got, want)
	}
	// A bad value is refused with Kafka's message shape, naming the config.
	bad, err := runKafkaTool(t, ctx, "kafka.admin.ConfigCommand", "--bootstrap-server", b.Addr, "--entity-type", "topics", "--entity-name", "tool-configs", "--alter", "--add-config", "compression.type=brotli")
	if err == nil || !strings.Contains(bad, "InvalidConfigurationException") || !strings.Contains(bad, "compression.type") {
		t.Errorf("kafka-configs with a bad value: %v\n%s", err, bad)
	}
}

// kafka-python's alter_configs sends AlterConfigs (v1): the topic's overrides become the given set.
func TestKafkaPythonAlterConfigs(t *testing.T) {
	heavy(t)
	python := brokertest.NeedPython(t, "kafka", "python3-kafka")
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := admin(t, []string{b.Addr})
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr("1000")}, "python-alter"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, "testdata/alter_configs.py", b.Addr, "python-alter", "segment.ms=60000", "max.message.bytes=5000")
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
		t.Fatalf("kafka-python alter_configs: %v\n%s", err, out)
	}
	if got, want := topicOverrides(t, ctx, adm, "python-alter"), map[string]string{"segment.ms": "60000", "max.message.bytes": "5000"}; !mapsEqual(got, want) {
		t.Errorf("overrides after kafka-python's alter_configs: %v, want %v", got, want)
	}
}

// In cluster mode AlterConfigs, sent to any broker, goes through ZooKeeper
// (/config/topics/<name>): every broker reports the new set, and the leader enforces it even
// when another broker took the request.
func TestAlterConfigsCluster(t *testing.T) {
	heavy(t)
	c, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := admin(t, c.Addrs())
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"retention.ms": ptr("1000")}, "clustered-configs"); err != nil {
		t.Fatal(err)
	}
	td := waitMetadata(t, adm, "clustered-configs", "a leader", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader > 0 })
	leader := td.Partitions[0].Leader
	other := c.Proxies[leader%3+1].Addr // a broker that does not lead the partition
	want := map[string]string{"segment.ms": "60000", "max.message.bytes": "1000"}
	ar, err := admin(t, []string{other}).AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: ptr("60000")}, {Name: "max.message.bytes", Value: ptr("1000")}}, "clustered-configs")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter through %s: %v %v", other, err, ar)
	}
	for _, addr := range c.Addrs() {
		view := admin(t, []string{addr})
		brokertest.WaitForState(t, 30*time.Second, "every broker's view of the configs", func() (bool, string) {
			got := topicOverrides(t, ctx, view, "clustered-configs")
			return mapsEqual(got, want), addr + " reports " + strings.Join(mapKeys(got), ",")
		})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordRetries(0), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec := &kgo.Record{Topic: "clustered-configs", Value: []byte(strings.Repeat("x", 1500))}
	brokertest.WaitForState(t, 30*time.Second, "the leader enforcing max.message.bytes=1000", func() (bool, string) {
		err := cl.ProduceSync(ctx, rec).FirstErr()
		return errors.Is(err, kerr.MessageTooLarge), fmt.Sprintf("a 1500-byte record: %v", err)
	})
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// The Java AdminClient's alterConfigs (AlterConfigs v2, flexible) replaces a topic's overrides,
// validates only when asked, and gets InvalidConfigurationException for a bad value.
func TestJavaAdminAlterConfigs(t *testing.T) {
	heavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startBroker(t, nil)
	runJavaProgram(t, ctx, "testdata/alter_configs_AlterConfigs.java", "AlterConfigs", b.Addr, "java-alter")
}

// storedBrokerConfigs reads a single broker's dynamic configs from its metadata file
// (spool-metadata.json, README "Data directory").
func storedBrokerConfigs(t *testing.T, dataDir, broker string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "spool-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		BrokerConfigs map[string]map[string]string `json:"broker_configs"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.BrokerConfigs[broker] == nil {
		return map[string]string{}
	}
	return st.BrokerConfigs[broker]
}

// AlterConfigs on a broker resource replaces its dynamic configs (the replication throttles),
// as in Kafka; static configs and bad values are refused and change nothing.
func TestAlterConfigsBrokerDynamicConfigs(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil || len(brokers) != 1 {
		t.Fatalf("list brokers: %v %v", brokers, err)
	}
	self := strconv.Itoa(int(brokers[0].NodeID))
	broker := kmsg.ConfigResourceTypeBroker
	follower, leader := ptr("follower.replication.throttled.rate"), ptr("leader.replication.throttled.rate")
	steps := []struct {
		res          kmsg.AlterConfigsRequestResource
		validateOnly bool
		wantErr      error
		want         map[string]string
	}{
		{alterResource(broker, self, follower, ptr("1000"), leader, ptr("2000")), false, nil,
			map[string]string{"follower.replication.throttled.rate": "1000", "leader.replication.throttled.rate": "2000"}},
		{alterResource(broker, self, leader, ptr("3000")), false, nil, map[string]string{"leader.replication.throttled.rate": "3000"}},
		{alterResource(broker, self, follower, ptr("1")), true, nil, map[string]string{"leader.replication.throttled.rate": "3000"}},
		{alterResource(broker, self, follower, ptr("-5")), false, kerr.InvalidConfig, map[string]string{"leader.replication.throttled.rate": "3000"}},
		{alterResource(broker, self, ptr("log.retention.ms"), ptr("1")), false, kerr.InvalidRequest, map[string]string{"leader.replication.throttled.rate": "3000"}},
		{alterResource(broker, self), false, nil, map[string]string{}},
	}
	for i, st := range steps {
		err := alterConfigs(t, ctx, cl, st.validateOnly, st.res)[self]
		if !errors.Is(err, st.wantErr) && !(err == nil && st.wantErr == nil) {
			t.Errorf("step %d: %v, want %v", i, err, st.wantErr)
		}
		if got := storedBrokerConfigs(t, b.DataDir, self); !mapsEqual(got, st.want) {
			t.Errorf("step %d: broker %s's dynamic configs %v, want %v", i, self, got, st.want)
		}
	}
}
