package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spoolmq/spool/broker/brokertest"
)

const stockDir = "../../internal/config/testdata"

// Kafka 3.9's stock server.properties start a broker that clients use. The test overrides only
// what must differ on a test machine: the port and data directory (flags), the advertised
// address (the KRaft file's localhost:9092), and the ZooKeeper file's zookeeper.connect, as
// there is no ZooKeeper at localhost:2181 here.
func TestStockServerPropertiesStartABroker(t *testing.T) {
	for file, props := range map[string]map[string]string{
		"kafka-3.9-kraft-server.properties":     {"advertised.listeners": ""},
		"kafka-3.9-zookeeper-server.properties": {"zookeeper.connect": ""},
	} {
		t.Run(file, func(t *testing.T) {
			b := brokertest.StartProcess(t, brokertest.Options{Props: props, Args: []string{"--config", filepath.Join(stockDir, file)}})
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("stock"), kgo.AllowAutoTopicCreation())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, kgo.StringRecord("hello")).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			adm := kadm.NewClient(cl)
			cfgs, err := adm.DescribeBrokerConfigs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, rc := range cfgs {
				if rc.Err != nil {
					t.Fatal(rc.Err)
				}
				for _, c := range rc.Configs {
					got[c.Key] = c.MaybeValue()
				}
			}
			for k, want := range map[string]string{"log.retention.ms": "604800000", "log.retention.hours": "168",
				"num.io.threads": "8", "socket.send.buffer.bytes": "102400", "transaction.state.log.min.isr": "1"} {
				if got[k] != want {
					t.Errorf("DescribeConfigs %s = %q, want %q", k, got[k], want)
				}
			}
		})
	}
}

// Properties with no effect are logged at startup, grouped by reason, before anything else can
// fail.
func TestNoEffectPropertiesLogged(t *testing.T) {
	var out, errs strings.Builder
	code := run([]string{"--config", filepath.Join(stockDir, "kafka-3.9-zookeeper-server.properties"),
		"--set", "zookeeper.connect=", "--data-dir", "/proc/spool-cannot-exist", "--listen", "127.0.0.1:0"}, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the data directory cannot be created)\n%s", code, errs.String())
	}
	log := errs.String()
	for _, want := range []string{
		`msg="properties with no effect in Spool"`,
		"num.io.threads,num.network.threads,num.recovery.threads.per.data.dir",
		`why="Spool sizes its goroutines itself"`,
		"socket.receive.buffer.bytes,socket.send.buffer.bytes",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("startup log does not say %q:\n%s", want, log)
		}
	}
	for _, used := range []string{"log.retention.hours", "zookeeper.connection.timeout.ms", "offsets.topic.replication.factor",
		"transaction.state.log.min.isr", "transaction.state.log.replication.factor"} {
		if strings.Contains(log, used) {
			t.Errorf("%s is used, but is logged as having no effect:\n%s", used, log)
		}
	}
}
