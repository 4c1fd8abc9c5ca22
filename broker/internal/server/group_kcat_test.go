package server_test

import (
	"github.com/spoolmq/spool/broker/brokertest"

	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A mixed group: kcat (librdkafka, -G balanced consumer) and franz-go with the range balancer.
// Each owns half the partitions; every record is consumed once; after kcat is killed with
// kill -9 its partitions move to the franz-go member when its session times out.
func TestGroupKcatAndFranzGoMixed(t *testing.T) {
	heavy(t)
	kcat := brokertest.NeedTool(t, "/usr/bin/kcat", "kcat")
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group = "mixed", "mixgrp"
	createTopicKadm(t, ctx, b.Addr, topic, 6)
	l := newLedger()
	l.startMember(t, ctx, b.Addr, group, "fz", topic, kgo.Balancers(kgo.RangeBalancer()))
	l.waitFor(t, ctx, "franz-go owning everything", func() bool { return l.exclusiveOwners([]string{"fz"}, 6) })

	cmd := exec.Command(kcat, "-b", b.Addr, "-G", group, "-u", "-q", "-f", "%s\n",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=300", "-X", "auto.commit.interval.ms=100",
		"-X", "partition.assignment.strategy=range,roundrobin", "-o", "beginning", topic)
	startProcessMember(t, cmd, func(line string) { l.record(group, "kcat", line) })
	adm := kadm.NewClient(mustClient(t, b.Addr))
	waitDescribed(t, ctx, adm, group, "a stable group of two", func(d kadm.DescribedGroup) bool {
		return d.State == "Stable" && len(d.Members) == 2 && d.Protocol == "range"
	})
	l.waitFor(t, ctx, "franz-go owning half", func() bool { return len(l.owned["fz"]) == 3 })

	vals := produceValues(t, ctx, b.Addr, topic, "m", 600)
	l.waitFor(t, ctx, "all consumed", func() bool { return l.consumedOnce(t, group, vals) })
	who := l.countBy(group, vals)
	if who["kcat"] != 300 || who["fz"] != 300 {
		t.Fatalf("consumed by %v, want 300 each", who)
	}
	// Wait for kcat's auto-commit to cover what it consumed, then kill it.
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		var total int64
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		}
		if total == 600 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("committed %d of 600", total)
		}
		time.Sleep(50 * time.Millisecond) // polling the broker's view; no event to wait on
	}
	killed := time.Now()
	cmd.Process.Kill()
	l.waitFor(t, ctx, "franz-go taking over after the session timeout", func() bool { return l.exclusiveOwners([]string{"fz"}, 6) })
	if d := time.Since(killed); d < 5*time.Second {
		t.Fatalf("partitions moved after %v, before the 6 s session timeout", d)
	}
	vals2 := produceValues(t, ctx, b.Addr, topic, "n", 300)
	l.waitFor(t, ctx, "rest consumed", func() bool { return l.consumedOnce(t, group, vals2) })
}
