package server_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

// kafkaTopicConfigs is a value for each of Kafka 3.9's topic configs, none of them the default.
var kafkaTopicConfigs = map[string]string{
	"cleanup.policy": "compact,delete", "compression.gzip.level": "5", "compression.lz4.level": "10", "compression.type": "zstd",
	"compression.zstd.level": "7", "delete.retention.ms": "3600000", "file.delete.delay.ms": "1000", "flush.messages": "100",
	"flush.ms": "2000", "follower.replication.throttled.replicas": "0:0", "index.interval.bytes": "8192",
	"leader.replication.throttled.replicas": "*", "local.retention.bytes": "-1", "local.retention.ms": "-1",
	"max.compaction.lag.ms": "86400000", "max.message.bytes": "2000000", "message.downconversion.enable": "false",
	"message.format.version": "2.8-IV1", "message.timestamp.after.max.ms": "7200000", "message.timestamp.before.max.ms": "7200000",
	"message.timestamp.difference.max.ms": "86400000", "message.timestamp.type": "LogAppendTime", "min.cleanable.dirty.ratio": "0.25",
	"min.compaction.lag.ms": "1000", "min.insync.replicas": "1", "preallocate": "true", "remote.log.copy.disable": "true",
	"remote.log.delete.on.disable": "true", "remote.storage.enable": "false", "retention.bytes": "1000000000", "retention.ms": "86400000",
	"segment.bytes": "104857600", "segment.index.bytes": "1048576", "segment.jitter.ms": "1000", "segment.ms": "3600000",
	"unclean.leader.election.enable": "true",
}

// Every Kafka 3.9 topic config is accepted by CreateTopics, IncrementalAlterConfigs and
// AlterConfigs from franz-go's admin client and reported back by DescribeConfigs as a topic
// override.
func TestKafkaTopicConfigsThroughKadm(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	configs := map[string]*string{}
	for k, v := range kafkaTopicConfigs {
		configs[k] = ptr(v)
	}
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, "all-configs")
	if err != nil || resp.Err != nil {
		t.Fatalf("create with every topic config: %v %v", err, resp.Err)
	}
	described := func(topic string) map[string]kadm.Config {
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rc.On(topic, nil)
		if err != nil || r.Err != nil {
			t.Fatalf("describe %s: %v %v", topic, err, r.Err)
		}
		out := map[string]kadm.Config{}
		for _, c := range r.Configs {
			out[c.Key] = c
		}
		return out
	}
	got := described("all-configs")
	for k, v := range kafkaTopicConfigs {
		c, ok := got[k]
		if !ok || c.MaybeValue() != v || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("%s: described %q from %v, want %q from the topic", k, c.MaybeValue(), c.Source, v)
		}
	}

	// On a topic with no overrides, each is described with its default, and alterable.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "altered"); err != nil {
		t.Fatal(err)
	}
	defaults := described("altered")
	for k, want := range map[string]string{"compression.type": "producer", "min.cleanable.dirty.ratio": "0.5",
		"segment.jitter.ms": "0", "remote.storage.enable": "false", "leader.replication.throttled.replicas": "",
		"message.timestamp.before.max.ms": "9223372036854775807", "unclean.leader.election.enable": "false",
		"message.format.version": "3.0-IV1", "local.retention.ms": "-2"} {
		if c := defaults[k]; c.MaybeValue() != want || c.Source.String() != "DEFAULT_CONFIG" {
			t.Errorf("default %s = %q from %v, want %q from the defaults", k, c.MaybeValue(), c.Source, want)
		}
	}
	var alters []kadm.AlterConfig
	for k, v := range kafkaTopicConfigs {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: ptr(v)})
	}
	ar, err := adm.AlterTopicConfigs(ctx, alters, "altered")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter every config: %v %v", err, ar)
	}
	after := described("altered")
	for k, v := range kafkaTopicConfigs {
		if c := after[k]; c.MaybeValue() != v || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("after incremental alter: %s = %q from %v, want %q from the topic", k, c.MaybeValue(), c.Source, v)
		}
	}

	// AlterConfigs (key 33, the whole set at once) takes every one of them too.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "replaced-all"); err != nil {
		t.Fatal(err)
	}
	var set []kadm.AlterConfig
	for k, v := range kafkaTopicConfigs {
		set = append(set, kadm.AlterConfig{Name: k, Value: ptr(v)})
	}
	if ar, err := adm.AlterTopicConfigsState(ctx, set, "replaced-all"); err != nil || ar[0].Err != nil {
		t.Fatalf("AlterConfigs with every config: %v %v", err, ar)
	}
	replaced := described("replaced-all")
	for k, v := range kafkaTopicConfigs {
		if c := replaced[k]; c.MaybeValue() != v || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
			t.Errorf("after AlterConfigs: %s = %q from %v, want %q from the topic", k, c.MaybeValue(), c.Source, v)
		}
	}

	// Bad values are refused with INVALID_CONFIG, naming the config.
	for k, v := range map[string]string{"compression.type": "brotli", "remote.storage.enable": "true", "min.cleanable.dirty.ratio": "2",
		"compression.gzip.level": "0", "compression.lz4.level": "18", "compression.zstd.level": "23"} {
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{k: ptr(v)}, "refused")
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s=%s: err %v, want INVALID_CONFIG", k, v, err)
		}
	}
}

// message.timestamp.before.max.ms and after.max.ms refuse CreateTime records too far from the
// broker's clock with INVALID_TIMESTAMP; difference.max.ms bounds both where they are unset.
func TestTimestampBounds(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	day := 24 * time.Hour
	for topic, configs := range map[string]map[string]*string{
		"bounded": {"message.timestamp.before.max.ms": ptr("3600000"), "message.timestamp.after.max.ms": ptr("3600000")},
		"diff":    {"message.timestamp.difference.max.ms": ptr("3600000")},
	} {
		if _, err := adm.CreateTopic(ctx, 1, 1, configs, topic); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			at   time.Time
			want error
		}{
			{time.Now(), nil},
			{time.Now().Add(-day), kerr.InvalidTimestamp},
			{time.Now().Add(day), kerr.InvalidTimestamp},
		} {
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v"), Timestamp: tc.at}).FirstErr()
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Errorf("%s: record at now%+v: err %v, want %v", topic, time.Until(tc.at).Round(time.Hour), err, tc.want)
			}
		}
	}
	// The default bounds nothing.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "unbounded"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "unbounded", Value: []byte("v"), Timestamp: time.Unix(1, 0)}).FirstErr(); err != nil {
		t.Errorf("an old timestamp on a default topic: %v", err)
	}
}

// configArgs are kafkaTopicConfigs as NAME=VALUE arguments.
func configArgs() []string {
	var out []string
	for k, v := range kafkaTopicConfigs {
		out = append(out, k+"="+v)
	}
	return out
}

// Every Kafka 3.9 topic config goes through the Java AdminClient: createTopics with all of them,
// incrementalAlterConfigs with all of them, and describeConfigs reporting each back.
func TestJavaAdminTopicConfigs(t *testing.T) {
	heavy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startBroker(t, nil)
	runJavaProgram(t, ctx, "testdata/topic_configs_TopicConfigs.java", "TopicConfigs", append([]string{b.Addr, "java-configs"}, configArgs()...)...)
}

// Every Kafka 3.9 topic config goes through kafka-python's CreateTopics and DescribeConfigs.
func TestKafkaPythonTopicConfigs(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	brokertest.NeedPython(t, "kafka", "python3-kafka")
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{"testdata/topic_configs.py", b.Addr, "python-configs"}, configArgs()...)...)
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	if err != nil || !slices.Contains(strings.Split(string(out), "\n"), "OK") {
		t.Fatalf("kafka-python topic configs: %v\n%s", err, out)
	}
}
