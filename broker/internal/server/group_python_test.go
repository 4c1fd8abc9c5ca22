package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"bufio"
	"context"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startPythonMember runs testdata/group_consume.py; closing the returned writer makes the
// member leave the group.
func (l *groupLedger) startPythonMember(t *testing.T, addr, kind, topic, group string) (io.WriteCloser, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "testdata/group_consume.py", kind, addr, topic, group)
	in := startProcessMember(t, cmd, func(line string) { l.record(group, kind, line) })
	return in, cmd
}

// startProcessMember starts cmd, a group member in another client's program, and hands each
// line it prints to onLine (on a goroutine of its own); closing the returned stdin makes the
// program leave the group (the testdata programs' convention). Its stderr goes to the test log,
// and it is killed at cleanup.
func startProcessMember(t *testing.T, cmd *exec.Cmd, onLine func(line string)) io.WriteCloser {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			onLine(sc.Text())
		}
	}()
	return in
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// waitDescribed polls DescribeGroups until cond holds.
func waitDescribed(t *testing.T, ctx context.Context, adm *kadm.Client, group, what string, cond func(kadm.DescribedGroup) bool) {
	t.Helper()
	for {
		dg, err := adm.DescribeGroups(ctx, group)
		if err == nil && cond(dg[group]) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s: %+v", what, dg[group])
		}
		select {
		case <-time.After(50 * time.Millisecond): // the broker's view has no event to wait on
		case <-ctx.Done():
		}
	}
}

// A group of kafka-python, confluent-kafka and franz-go members: the range protocol is chosen,
// each record is consumed once, and a member leaving cleanly hands its partitions over.
func TestGroupPythonClientsMixed(t *testing.T) {
	heavy(t)
	brokertest.NeedTool(t, "/usr/bin/python3", "python3")
	brokertest.NeedPython(t, "kafka", "python3-kafka")
	brokertest.NeedPython(t, "confluent_kafka", "python3-confluent-kafka")
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic, group = "pymix", "pygroup"
	createTopicKadm(t, ctx, b.Addr, topic, 6)
	adm := kadm.NewClient(mustClient(t, b.Addr))
	l := newLedger()
	l.startMember(t, ctx, b.Addr, group, "fz", topic, kgo.Balancers(kgo.RangeBalancer()))
	kp, _ := l.startPythonMember(t, b.Addr, "kafka-python", topic, group)
	l.startPythonMember(t, b.Addr, "confluent-kafka", topic, group)
	waitDescribed(t, ctx, adm, group, "three members on range", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 3 && d.Protocol == "range"
	})
	l.waitFor(t, ctx, "franz-go owning two partitions", func() bool { return len(l.owned["fz"]) == 2 })
	vals := produceValues(t, ctx, b.Addr, topic, "p", 600)
	l.waitFor(t, ctx, "all consumed", func() bool { return l.consumedOnce(t, group, vals) })
	who := l.countBy(group, vals)
	if who["fz"] != 200 || who["kafka-python"] != 200 || who["confluent-kafka"] != 200 {
		t.Fatalf("consumed by %v, want 200 each", who)
	}
	kp.Close() // kafka-python leaves
	waitDescribed(t, ctx, adm, group, "two members", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 2
	})
	l.waitFor(t, ctx, "franz-go owning three partitions", func() bool { return len(l.owned["fz"]) == 3 })
	vals2 := produceValues(t, ctx, b.Addr, topic, "q", 300)
	l.waitFor(t, ctx, "rest consumed", func() bool { return l.consumedOnce(t, group, vals2) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vals2 {
		if l.by[group+"/"+v] == "kafka-python" {
			t.Fatalf("%s consumed by the member that left", v)
		}
	}
}
