package brokertest

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/loopport"
)

// KafkaVersion is the Apache Kafka release StartKafka runs: the one bench/pom.xml fetches for
// make bench-compare.
const KafkaVersion = "3.9.2"

// Kafka is a running Apache Kafka broker: a single KRaft node (broker and controller in one
// JVM) on loopback.
type Kafka struct {
	Addr string // HOST:PORT clients connect to
	Dir  string // its configuration, logs and data
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// KafkaJars returns the class path of Apache Kafka's jars, fetching them from Maven Central
// with bench/pom.xml into bench/.cache/kafka-<version>/libs on first use: the same place and
// the same marker file as make bench-compare, so the two share one download. Java and Maven
// are Debian packages make test installs; missing, they fail the test under CI=true and skip
// it elsewhere (NeedTool).
func KafkaJars(t testing.TB) string {
	t.Helper()
	NeedTool(t, "/usr/bin/java", "openjdk-17-jdk-headless")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	libs := filepath.Join(root, "bench", ".cache", "kafka-"+KafkaVersion, "libs")
	if err := os.MkdirAll(filepath.Dir(libs), 0o755); err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	// One fetch at a time across test binaries.
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(libs), ".fetch.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("brokertest: locking the Kafka jar cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err != nil {
		mvn := NeedTool(t, "/usr/bin/mvn", "maven")
		os.RemoveAll(libs)
		cmd := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(root, "bench", "pom.xml"),
			"dependency:copy-dependencies", "-DincludeScope=runtime", "-Dkafka.version="+KafkaVersion, "-DoutputDirectory="+libs)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("brokertest: fetching Apache Kafka %s with Maven: %v\n%s", KafkaVersion, err, tailOf(string(out), 3000))
		}
		if err := os.WriteFile(filepath.Join(libs, ".complete"), nil, 0o644); err != nil {
			t.Fatalf("brokertest: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(libs, "kafka_2.13-"+KafkaVersion+".jar")); err != nil {
		t.Fatalf("brokertest: the Kafka jar is missing from %s (delete the directory to fetch again)", libs)
	}
	return filepath.Join(libs, "*")
}

// StartKafka starts Apache Kafka as a single KRaft node with Kafka's defaults except for
// props (Kafka names), and stops it with t.Cleanup. It takes a JVM start to format the
// storage and one to run the broker (seconds each): start it once per test binary.
func StartKafka(t testing.TB, props map[string]string) *Kafka {
	t.Helper()
	classpath := KafkaJars(t)
	dir := t.TempDir()
	port, cport := freePort(t), freePort(t)
	k := &Kafka{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, done: make(chan struct{})}
	conf := map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  "1",
		"controller.quorum.voters":                 fmt.Sprintf("1@127.0.0.1:%d", cport),
		"listeners":                                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport),
		"advertised.listeners":                     "PLAINTEXT://" + k.Addr,
		"controller.listener.names":                "CONTROLLER",
		"inter.broker.listener.name":               "PLAINTEXT",
		"listener.security.protocol.map":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                 filepath.Join(dir, "data"),
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
	}
	for key, v := range props {
		conf[key] = v
	}
	var sb strings.Builder
	for key, v := range conf {
		fmt.Fprintf(&sb, "%s=%s\n", key, v)
	}
	propsPath := filepath.Join(dir, "server.properties")
	logPath := filepath.Join(dir, "server.log")
	log4j := fmt.Sprintf("log4j.rootLogger=INFO, f\nlog4j.appender.f=org.apache.log4j.FileAppender\nlog4j.appender.f.File=%s\nlog4j.appender.f.layout=org.apache.log4j.PatternLayout\nlog4j.appender.f.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n", logPath)
	log4jPath := filepath.Join(dir, "log4j.properties")
	for path, data := range map[string]string{propsPath: sb.String(), log4jPath: log4j} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatalf("brokertest: %v", err)
		}
	}
	jvm := []string{"-Xmx512M", "-Xms256M", "-XX:+UseG1GC", "-Djava.awt.headless=true", "-Dlog4j.configuration=file:" + log4jPath, "-cp", classpath}
	format := exec.Command("java", append(jvm, "kafka.tools.StorageTool", "format", "-t", clusterID(), "-c", propsPath)...)
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("brokertest: formatting Kafka's storage: %v\n%s", err, tailOf(string(out), 3000))
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	k.cmd = exec.Command("java", append(jvm, "kafka.Kafka", propsPath)...)
	k.cmd.Stdout, k.cmd.Stderr = out, out
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("brokertest: starting Kafka: %v", err)
	}
	go func() { k.err = k.cmd.Wait(); out.Close(); close(k.done) }()
	t.Cleanup(func() { k.stop(t) })
	deadline := time.Now().Add(3 * time.Minute)
	for !fileHas(logPath, "Kafka Server started") {
		select {
		case <-k.done:
			t.Fatalf("brokertest: Kafka exited during startup (%v)\n%s", k.err, k.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokertest: Kafka did not start within 3 minutes\n%s", k.logTail())
		}
	}
	return k
}

func (k *Kafka) stop(t testing.TB) {
	select {
	case <-k.done:
		return
	default:
	}
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(60 * time.Second):
		syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.done
		t.Errorf("brokertest: Kafka did not stop within 60s of SIGTERM; killed")
	}
}

func (k *Kafka) logTail() string {
	var s strings.Builder
	for _, name := range []string{"stdout.log", "server.log"} {
		if data, err := os.ReadFile(filepath.Join(k.Dir, name)); err == nil {
			fmt.Fprintf(&s, "--- %s\n%s\n", name, tailOf(string(data), 3000))
		}
	}
	return s.String()
}

func freePort(t testing.TB) int {
	p, err := pickPort()
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	return p
}

// pickPort is a loopback port for a process that binds it later (loopport says why not :0).
func pickPort() (int, error) { return loopport.Pick() }

// clusterID is a random KRaft cluster id: 16 bytes, URL-safe base64 without padding, not
// starting with "-" (the storage tool would take it for a flag).
func clusterID() string {
	var b [16]byte
	for {
		rand.Read(b[:])
		if s := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(s, "-") {
			return s
		}
	}
}

func fileHas(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
