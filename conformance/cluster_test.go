package conformance_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/conformance/drivers"
)

// TestSuiteCluster runs the cluster cases (and the produce and fetch areas, which must hold
// on any broker of a cluster too) against a 3-broker Spool cluster and a 3-broker Apache
// Kafka 3.9 cluster in ZooKeeper mode, each on its own ZooKeeper (Debian's zookeeper package).
func TestSuiteCluster(t *testing.T) {
	t.Parallel()
	d, err := drivers.Builtin("go")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.Select("cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range []target{
		{"spool-cluster", func(t *testing.T) string {
			zk := brokertest.StartZooKeeper(t)
			c := brokertest.StartCluster(t, 3, zk.Connect(""), map[string]string{"group.initial.rebalance.delay.ms": "0"})
			return c.Addrs()[0]
		}},
		{"kafka-cluster", func(t *testing.T) string {
			zk := brokertest.StartZooKeeper(t)
			return startKafkaZK(t, 3, zk.Connect("/kafka"))
		}},
	} {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t)
			results := conformance.Run(context.Background(), conformance.Config{Bootstrap: addr, Driver: d, Parallel: 4}, cases)
			for _, r := range results {
				if r.Outcome != conformance.Pass {
					t.Errorf("%s: %s: %s", r.Case.ID, r.Outcome, r.Message)
				}
			}
			recordRun(tg.name, "go", results)
			t.Logf("%s: %d cluster cases run", tg.name, len(results))
		})
	}
}

// startKafkaZK starts n Apache Kafka brokers (ids 1..n) in ZooKeeper mode on zkConnect, on
// loopback, waits until each lists all n brokers, and kills them at cleanup (their data is
// the test's temporary directory: nothing to shut down cleanly). It returns broker 1's address.
func startKafkaZK(t *testing.T, n int, zkConnect string) string {
	classpath := brokertest.KafkaJars(t)
	var addrs []string
	for id := 1; id <= n; id++ {
		dir := t.TempDir()
		addr := freeAddr(t)
		props := map[string]string{
			"broker.id":                                fmt.Sprint(id),
			"zookeeper.connect":                        zkConnect,
			"listeners":                                "PLAINTEXT://" + addr,
			"log.dirs":                                 filepath.Join(dir, "data"),
			"offsets.topic.replication.factor":         fmt.Sprint(n),
			"offsets.topic.num.partitions":             "1",
			"transaction.state.log.replication.factor": fmt.Sprint(n),
			"group.initial.rebalance.delay.ms":         "0",
		}
		var sb strings.Builder
		for k, v := range props {
			fmt.Fprintf(&sb, "%s=%s\n", k, v)
		}
		logPath := filepath.Join(dir, "server.log")
		log4j := fmt.Sprintf("log4j.rootLogger=INFO, f\nlog4j.appender.f=org.apache.log4j.FileAppender\nlog4j.appender.f.File=%s\nlog4j.appender.f.layout=org.apache.log4j.PatternLayout\nlog4j.appender.f.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n", logPath)
		for path, data := range map[string]string{filepath.Join(dir, "server.properties"): sb.String(), filepath.Join(dir, "log4j.properties"): log4j} {
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := os.Create(filepath.Join(dir, "stdout.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("java", "-Xmx384M", "-Xms128M", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
			"-Dlog4j.configuration=file:"+filepath.Join(dir, "log4j.properties"), "-cp", classpath, "kafka.Kafka", filepath.Join(dir, "server.properties"))
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting Kafka broker %d: %v", id, err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); out.Close(); close(done) }()
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		})
		addrs = append(addrs, addr)
		t.Cleanup(func() {
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				t.Logf("Kafka broker %d log tail:\n%s", id, tail(string(b), 3000))
			}
		})
	}
	for _, addr := range addrs {
		brokertest.WaitForState(t, 3*time.Minute, "Kafka broker "+addr+" lists every broker", func() (bool, string) {
			got, err := conformance.BrokerCount(addr)
			return err == nil && got == n, fmt.Sprintf("%d brokers, %v", got, err)
		})
	}
	return addrs[0]
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
