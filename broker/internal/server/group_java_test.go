package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// buildJavaMember returns the java command and the class path of every Java program of
// testdata (testdata/*.java and the driver of testdata/java), compiled against the
// kafka-clients class path of testdata/java/pom.xml: built once per content and cached across
// tests, test binaries and runs (brokertest.JavaClasspath).
func buildJavaMember(t *testing.T) (java, cp string) {
	t.Helper()
	java = brokertest.NeedTool(t, "/usr/bin/java", "openjdk-17-jre-headless")
	return java, brokertest.JavaClasspath(t, "testdata/java/pom.xml", javaSources(t)...)
}

// javaSources are the Java programs of testdata.
func javaSources(t *testing.T) []string {
	t.Helper()
	var all []string
	for _, pattern := range []string{"testdata/*.java", "testdata/java/src/main/java/*.java"} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("no Java sources %s: %v", pattern, err)
		}
		all = append(all, m...)
	}
	return all
}

// startJavaMember runs one Java member, feeding its output into the ledger under name.
func (l *groupLedger) startJavaMember(t *testing.T, java, cp, addr, topic, group, name, assignors string) io.WriteCloser {
	t.Helper()
	cmd := exec.Command(java, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "GroupMember", addr, topic, group, assignors)
	l.mu.Lock()
	l.owned[name] = map[int32]bool{}
	l.mu.Unlock()
	return startProcessMember(t, cmd, func(line string) {
		switch {
		case strings.HasPrefix(line, "ASSIGNED ") || strings.HasPrefix(line, "REVOKED "):
			f := strings.Fields(line)
			l.mu.Lock()
			if len(f) == 2 {
				for _, s := range strings.Split(f[1], ",") {
					p, _ := strconv.Atoi(s)
					if f[0] == "ASSIGNED" {
						l.owned[name][int32(p)] = true
					} else {
						delete(l.owned[name], int32(p))
						l.revokes[name]++
					}
				}
			}
			l.notifyLocked()
			l.mu.Unlock()
		default:
			l.record(group, name, line)
		}
	})
}

// Java members: in a range group with franz-go each record is consumed once and a leaving
// member's partitions move; with cooperative-sticky, partitions that do not move are never
// revoked when a member joins or leaves.
func TestGroupJavaClient(t *testing.T) {
	heavy(t)
	java, cp := buildJavaMember(t)
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	adm := kadm.NewClient(mustClient(t, b.Addr))

	t.Run("range-with-franz-go", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const topic, group = "jrange", "jrange-group"
		createTopicKadm(t, ctx, b.Addr, topic, 6)
		l := newLedger()
		l.startMember(t, ctx, b.Addr, group, "fz", topic, kgo.Balancers(kgo.RangeBalancer()))
		j := l.startJavaMember(t, java, cp, b.Addr, topic, group, "java", "range,cooperative-sticky")
		waitDescribed(t, ctx, adm, group, "two members on range", func(d kadm.DescribedGroup) bool {
			return d.State == "Stable" && len(d.Members) == 2 && d.Protocol == "range"
		})
		l.waitFor(t, ctx, "half each", func() bool { return l.exclusiveOwners([]string{"fz", "java"}, 6) && len(l.owned["fz"]) == 3 })
		vals := produceValues(t, ctx, b.Addr, topic, "j", 600)
		l.waitFor(t, ctx, "all consumed", func() bool { return l.consumedOnce(t, group, vals) })
		l.mu.Lock()
		who := map[string]int{}
		for _, v := range vals {
			who[l.by[group+"/"+v]]++
		}
		l.mu.Unlock()
		if who["fz"] != 300 || who["java"] != 300 {
			t.Fatalf("consumed by %v", who)
		}
		j.Close()
		l.waitFor(t, ctx, "franz-go taking over", func() bool { return len(l.owned["fz"]) == 6 })
		vals2 := produceValues(t, ctx, b.Addr, topic, "k", 300)
		l.waitFor(t, ctx, "rest consumed", func() bool { return l.consumedOnce(t, group, vals2) })
	})

	t.Run("cooperative-sticky", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const topic, group = "jcoop", "jcoop-group"
		createTopicKadm(t, ctx, b.Addr, topic, 6)
		l := newLedger()
		l.startJavaMember(t, java, cp, b.Addr, topic, group, "j1", "cooperative-sticky")
		l.waitFor(t, ctx, "j1 owning all", func() bool { return len(l.owned["j1"]) == 6 })
		j2 := l.startJavaMember(t, java, cp, b.Addr, topic, group, "j2", "cooperative-sticky")
		l.waitFor(t, ctx, "three each", func() bool {
			return l.exclusiveOwners([]string{"j1", "j2"}, 6) && len(l.owned["j2"]) == 3
		})
		l.mu.Lock()
		if l.revokes["j1"] != 3 {
			t.Errorf("j1 revoked %d partitions for j2's three", l.revokes["j1"])
		}
		l.mu.Unlock()
		vals := produceValues(t, ctx, b.Addr, topic, "c", 300)
		l.waitFor(t, ctx, "all consumed", func() bool { return l.consumedOnce(t, group, vals) })
		j2.Close()
		l.waitFor(t, ctx, "j1 owning all again", func() bool { return len(l.owned["j1"]) == 6 })
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.revokes["j1"] != 3 {
			t.Errorf("j1 revoked %d partitions in all, want only the 3 that moved", l.revokes["j1"])
		}
	})
}
