// Package targets starts the brokers spool-conformance runs against by name (--target):
// spool (bin/spoold, one node), spool-cluster (three spoold on a ZooKeeper), kafka (Apache
// Kafka 3.9 as one KRaft node) and kafka-cluster (three Kafka brokers in ZooKeeper mode), all
// on loopback ports chosen at start, with their data in one directory. ZooKeeper is Debian's
// zookeeper package; Kafka runs from the jars make bench-compare fetches from Maven Central
// (bench/.cache/kafka-<version>/libs).
//
// The test harness has its own starters (broker/brokertest, conformance/cluster_test.go), tied
// to testing.TB and its cleanup; these are for a command: a started target either stops with
// Stop, or is left running for later commands (make reference-kafka) and found again through
// the state file of its directory.
package targets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/protocol-spec/loopport"
)

// KafkaVersion is the Apache Kafka release the kafka targets run (bench/pom.xml's).
const KafkaVersion = "3.9.2"

// Names are the targets, in the order a matrix shows them.
var Names = []string{"spool", "spool-cluster", "kafka", "kafka-cluster"}

// Options say where the programs are.
type Options struct {
	Dir       string // data, logs and the state file; created if missing
	Spoold    string // the spoold binary, for the spool targets
	KafkaLibs string // Kafka's jar directory, for the kafka targets
	Java      string // the java launcher (default: java on PATH)
	// Detach starts the processes in their own session, to outlive this one.
	Detach bool
	Log    io.Writer // progress lines; nil for none
}

// Target is a started broker or cluster.
type Target struct {
	Name      string           `json:"name"`
	Bootstrap string           `json:"bootstrap"` // the address to give spool-conformance --bootstrap
	Brokers   map[int32]string `json:"brokers"`   // every broker by node id
	ZooKeeper string           `json:"zookeeper,omitempty"`
	Pids      []int            `json:"pids"` // the processes, ZooKeeper last
	Dir       string           `json:"dir"`
}

// Start starts the target name under o.Dir/name (emptied first) and waits until every broker
// lists all the brokers of the target.
func Start(ctx context.Context, name string, o Options) (*Target, error) {
	dir := filepath.Join(o.Dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if o.Java == "" {
		o.Java = "java"
	}
	t := &Target{Name: name, Brokers: map[int32]string{}, Dir: dir}
	var err error
	switch name {
	case "spool":
		err = t.startSpool(o, 1, "")
	case "spool-cluster":
		if err = t.startZooKeeper(o); err == nil {
			err = t.startSpool(o, 3, t.ZooKeeper+"/spool")
		}
	case "kafka":
		err = t.startKafkaKRaft(o)
	case "kafka-cluster":
		if err = t.startZooKeeper(o); err == nil {
			err = t.startKafkaZK(o, 3, t.ZooKeeper+"/kafka")
		}
	default:
		return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(Names, ", "))
	}
	if err == nil {
		err = t.waitBrokers(ctx)
	}
	if err != nil {
		t.Stop()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	t.Bootstrap = t.Brokers[1]
	return t, nil
}

// Props common to every broker: no initial rebalance delay (Kafka's 3 s slows each group
// case), retention and the cleaner checked every half second (the retention and compaction
// cases are skipped on a target that cleans up less than every 10 s).
var commonProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"log.retention.check.interval.ms":  "500",
	"log.cleaner.backoff.ms":           "500",
	"replica.lag.time.max.ms":          "10000",
}

func (t *Target) startSpool(o Options, n int, zk string) error {
	if o.Spoold == "" {
		return errors.New("no spoold binary (make build puts it in bin/spoold)")
	}
	for id := int32(1); id <= int32(n); id++ {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		dir := filepath.Join(t.Dir, fmt.Sprintf("spool-%d", id))
		args := []string{"--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--node-id", fmt.Sprint(id)}
		if zk != "" {
			args = append(args, "--zookeeper", zk, "--set", "offsets.topic.replication.factor=3", "--set", "offsets.topic.num.partitions=1")
		}
		for k, v := range commonProps {
			args = append(args, "--set", k+"="+v)
		}
		if err := t.launch(o, dir, o.Spoold, args...); err != nil {
			return err
		}
		t.Brokers[id] = addr
	}
	return nil
}

func (t *Target) startZooKeeper(o Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(t.Dir, "zookeeper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := brokertest.ZooKeeperConfig(filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return err
	}
	args, err := brokertest.ZooKeeperArgs("org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		return err
	}
	if err := t.launch(o, dir, o.Java, args...); err != nil {
		return err
	}
	t.ZooKeeper = fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(fourLetter(t.ZooKeeper, "srvr"), "Mode:") {
		if time.Now().After(deadline) {
			return fmt.Errorf("ZooKeeper did not serve on %s within 60 s (%s)", t.ZooKeeper, filepath.Join(dir, "stdout.log"))
		}
		time.Sleep(100 * time.Millisecond) // a command's poll, not a test's wait
	}
	return nil
}

func (t *Target) kafkaJVM(o Options, dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(o.KafkaLibs, "kafka_2.13-"+KafkaVersion+".jar")); err != nil {
		return nil, fmt.Errorf("Apache Kafka %s's jars are not in %s (make reference-kafka fetches them)", KafkaVersion, o.KafkaLibs)
	}
	log4j := filepath.Join(dir, "log4j.properties")
	conf := fmt.Sprintf("log4j.rootLogger=INFO, f\nlog4j.appender.f=org.apache.log4j.FileAppender\nlog4j.appender.f.File=%s\nlog4j.appender.f.layout=org.apache.log4j.PatternLayout\nlog4j.appender.f.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n",
		filepath.Join(dir, "server.log"))
	if err := os.WriteFile(log4j, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return []string{"-Xmx384M", "-Xms128M", "-XX:+UseSerialGC", "-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + log4j,
		"-cp", filepath.Join(o.KafkaLibs, "*")}, nil
}

func writeProps(path string, props ...map[string]string) error {
	var sb strings.Builder
	for _, m := range props {
		for k, v := range m {
			fmt.Fprintf(&sb, "%s=%s\n", k, v)
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func (t *Target) startKafkaKRaft(o Options) error {
	dir := filepath.Join(t.Dir, "kafka-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	caddr, err := freeAddr()
	if err != nil {
		return err
	}
	props := filepath.Join(dir, "server.properties")
	if err := writeProps(props, commonProps, map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  "1",
		"controller.quorum.voters":                 "1@" + caddr,
		"listeners":                                "PLAINTEXT://" + addr + ",CONTROLLER://" + caddr,
		"advertised.listeners":                     "PLAINTEXT://" + addr,
		"controller.listener.names":                "CONTROLLER",
		"inter.broker.listener.name":               "PLAINTEXT",
		"listener.security.protocol.map":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                 filepath.Join(dir, "data"),
		"offsets.topic.replication.factor":         "1",
		"offsets.topic.num.partitions":             "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"log.initial.task.delay.ms":                "0",
	}); err != nil {
		return err
	}
	jvm, err := t.kafkaJVM(o, dir)
	if err != nil {
		return err
	}
	format := exec.Command(o.Java, append(jvm, "kafka.tools.StorageTool", "format", "-t", kraftClusterID(), "-c", props)...)
	if out, err := format.CombinedOutput(); err != nil {
		return fmt.Errorf("formatting Kafka's storage: %v\n%s", err, out)
	}
	if err := t.launch(o, dir, o.Java, append(jvm, "kafka.Kafka", props)...); err != nil {
		return err
	}
	t.Brokers[1] = addr
	return nil
}

func (t *Target) startKafkaZK(o Options, n int, zk string) error {
	for id := int32(1); id <= int32(n); id++ {
		dir := filepath.Join(t.Dir, fmt.Sprintf("kafka-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		props := filepath.Join(dir, "server.properties")
		if err := writeProps(props, commonProps, map[string]string{
			"broker.id":                                fmt.Sprint(id),
			"zookeeper.connect":                        zk,
			"zookeeper.session.timeout.ms":             "6000",
			"listeners":                                "PLAINTEXT://" + addr,
			"log.dirs":                                 filepath.Join(dir, "data"),
			"offsets.topic.replication.factor":         fmt.Sprint(n),
			"offsets.topic.num.partitions":             "1",
			"transaction.state.log.replication.factor": fmt.Sprint(n),
		}); err != nil {
			return err
		}
		jvm, err := t.kafkaJVM(o, dir)
		if err != nil {
			return err
		}
		if err := t.launch(o, dir, o.Java, append(jvm, "kafka.Kafka", props)...); err != nil {
			return err
		}
		t.Brokers[id] = addr
	}
	return nil
}

// launch starts one process with its output in dir/stdout.log.
func (t *Target) launch(o Options, dir, prog string, args ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !o.Detach, Setsid: o.Detach}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", prog, err)
	}
	// ZooKeeper goes last in Pids, so that Stop ends the brokers before it.
	if strings.HasSuffix(dir, "zookeeper") {
		t.Pids = append(t.Pids, cmd.Process.Pid)
	} else {
		t.Pids = append([]int{cmd.Process.Pid}, t.Pids...)
	}
	if !o.Detach {
		go cmd.Wait() // reap it; Stop watches the pid
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "%s: started %s (pid %d, log %s)\n", t.Name, filepath.Base(prog), cmd.Process.Pid, filepath.Join(dir, "stdout.log"))
	}
	return nil
}

// waitBrokers waits until every broker answers Metadata listing them all, or a process died.
func (t *Target) waitBrokers(ctx context.Context) error {
	deadline := time.Now().Add(3 * time.Minute)
	for id, addr := range t.Brokers {
		for {
			got, err := conformance.BrokerCount(addr)
			if err == nil && got == len(t.Brokers) {
				break
			}
			for _, pid := range t.Pids {
				if !alive(pid) {
					return fmt.Errorf("process %d exited during start (logs under %s)", pid, t.Dir)
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("broker %d on %s lists %d of %d brokers after 3 minutes (%v; logs under %s)", id, addr, got, len(t.Brokers), err, t.Dir)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// Stop ends the target's processes (SIGTERM, then SIGKILL after 30 s), brokers first.
func (t *Target) Stop() error {
	var errs []error
	for _, pid := range t.Pids {
		if !alive(pid) {
			continue
		}
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(30 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond) // a command's poll for a process to end
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			errs = append(errs, fmt.Errorf("%s: process %d did not stop within 30 s of SIGTERM; killed", t.Name, pid))
		}
	}
	return errors.Join(errs...)
}

// Alive reports whether every process of the target runs.
func (t *Target) Alive() bool {
	for _, pid := range t.Pids {
		if !alive(pid) {
			return false
		}
	}
	return len(t.Pids) > 0
}

// alive: the process exists and is not a zombie (a detached child of an earlier command is
// reaped by init; one of ours by the goroutine in launch).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// StateFile is where SaveState writes the targets left running in dir.
func StateFile(dir string) string { return filepath.Join(dir, "targets.json") }

// SaveState records running targets in dir's state file.
func SaveState(dir string, ts []*Target) error {
	b, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(StateFile(dir), append(b, '\n'), 0o644)
}

// LoadState reads the targets recorded in dir's state file (none when there is no file).
func LoadState(dir string) ([]*Target, error) {
	b, err := os.ReadFile(StateFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ts []*Target
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("%s: %w", StateFile(dir), err)
	}
	return ts, nil
}

// freePort and freeAddr are loopback ports for brokers that bind them later (loopport says
// why not :0).
func freePort() (int, error) { return loopport.Pick() }

func freeAddr() (string, error) { return loopport.Addr() }

func fourLetter(addr, cmd string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write([]byte(cmd))
	b, _ := io.ReadAll(c)
	return string(b)
}

// kraftClusterID: 16 random bytes, URL-safe base64 without padding, not starting with "-".
func kraftClusterID() string {
	var b [16]byte
	for {
		rand.Read(b[:])
		if s := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(s, "-") {
			return s
		}
	}
}
