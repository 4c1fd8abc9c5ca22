package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spoolmq/spool/broker/brokertest"
)

// headless loads url in Debian's headless Chromium, lets the page's timers and requests run
// for a few seconds of virtual time, and returns the DOM it ended with (or, with screenshot
// set, writes a PNG there). Every request to a host other than 127.0.0.1 fails (the resolver
// maps them to nothing), and the page's console messages (errors, CSP violations, failed
// loads) are returned so the caller can require none.
func headless(t *testing.T, url, screenshot string) (dom string, console []string) {
	t.Helper()
	chromium := brokertest.NeedTool(t, "/usr/bin/chromium", "chromium")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=7000", "--window-size=1280,1100"}
	if screenshot != "" {
		args = append(args, "--screenshot="+screenshot)
	} else {
		args = append(args, "--dump-dom")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, append(args, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return string(out), console
}

// TestConsoleInChromium: the console, rendered by headless Chromium against a running broker,
// shows the broker's real topics, partitions, groups, members and lag on its overview, topic
// and group pages, with no console message and nothing loaded from outside loopback.
func TestConsoleInChromium(t *testing.T) {
	heavy(t)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.metrics.listener": "127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("console-orders"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": ptr("3600000")}, "console-orders"); err != nil {
		t.Fatal(err)
	}
	ends := []int64{17, 5, 0} // records per partition
	for p, n := range ends {
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(p), Value: []byte("order")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A member that stays in the group, having committed 7 of partition 0 and all of 1.
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("console-reader-app"), kgo.ConsumerGroup("console-readers"),
		kgo.ConsumeTopics("console-orders"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 22; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	var commitErr error
	cons.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"console-orders": {0: {Epoch: -1, Offset: 7}, 1: {Epoch: -1, Offset: 5}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	// A group id is any string a client sends: the page must show it as text, never as markup.
	const hostile = `<img src=x onerror="console.error('injected')">`
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "console-orders", Partition: 2, At: 0, LeaderEpoch: -1})
	if resp, err := kadm.NewClient(prod).CommitOffsets(ctx, hostile, offs); err != nil || resp.Error() != nil {
		t.Fatalf("committing for the hostile group: %v %v", err, resp.Error())
	}

	base := "http://" + b.MetricsAddr
	// The page may load nothing but its own origin.
	resp, err := http.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	// The document the page reads says the same as the broker.
	var state struct {
		Groups []struct {
			ID  string `json:"id"`
			Lag int64  `json:"lag"`
		} `json:"groups"`
	}
	resp, err = http.Get(base + "/console/api/state")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&state)
	resp.Body.Close()
	if err != nil || len(state.Groups) != 2 || state.Groups[1].ID != "console-readers" || state.Groups[1].Lag != 10 {
		t.Fatalf("api/state groups %+v (%v), want the hostile one and console-readers with lag 10", state.Groups, err)
	}

	noConsole := func(page string, msgs []string) {
		if len(msgs) > 0 {
			t.Errorf("%s: console messages:\n%s", page, strings.Join(msgs, "\n"))
		}
	}
	// The root redirects to the console.
	dom, msgs := headless(t, base+"/", "")
	noConsole("overview", msgs)
	for _, want := range []string{`data-route="overview"`, `data-topic="console-orders"`, `data-group="console-readers"`,
		`class="status ok"`, "127.0.0.1", "Cluster overview"} {
		if !strings.Contains(dom, want) {
			t.Errorf("overview lacks %q:\n%s", want, dom)
		}
	}
	if !strings.Contains(dom, `&lt;img src=x onerror="console.error('injected')"&gt;</a>`) || strings.Contains(dom, "<img") {
		t.Errorf("the hostile group id is not shown as text:\n%s", dom)
	}
	if strings.Contains(dom, `data-topic="__consumer_offsets"`) {
		t.Error("the overview lists the internal __consumer_offsets topic")
	}

	dom, msgs = headless(t, base+"/console/#/topic/console-orders", "")
	noConsole("topic page", msgs)
	rows := regexp.MustCompile(`<tr data-partition="(\d)">(.*?)</tr>`).FindAllStringSubmatch(dom, -1)
	if len(rows) != 3 {
		t.Fatalf("topic page has %d partition rows, want 3:\n%s", len(rows), dom)
	}
	cell := regexp.MustCompile(`<td[^>]*>(.*?)</td>`)
	for i, r := range rows {
		cells := cell.FindAllStringSubmatch(r[2], -1)
		// partition, leader, epoch, replicas, log start, log end, high watermark
		if len(cells) != 7 || cells[1][1] != "0" || cells[6][1] != strconv.FormatInt(ends[i], 10) || cells[5][1] != strconv.FormatInt(ends[i], 10) {
			t.Errorf("partition %s row %q, want leader 0 and end %d", r[1], r[2], ends[i])
		}
	}
	if !strings.Contains(dom, "retention.ms") || !strings.Contains(dom, "3600000") {
		t.Errorf("topic page lacks the retention.ms override:\n%s", dom)
	}

	dom, msgs = headless(t, base+"/console/#/group/console-readers", "")
	noConsole("group page", msgs)
	for _, want := range []string{"console-reader-app", "Stable", "console-orders [0, 1, 2]"} {
		if !strings.Contains(dom, want) {
			t.Errorf("group page lacks %q:\n%s", want, dom)
		}
	}
	lags := regexp.MustCompile(`<tr data-offset="console-orders-(\d)">.*?<td class="num lag">(\d+)</td>`).FindAllStringSubmatch(dom, -1)
	if len(lags) != 2 || lags[0][1] != "0" || lags[0][2] != "10" || lags[1][1] != "1" || lags[1][2] != "0" {
		t.Errorf("group page lags %v, want partition 0 lag 10, partition 1 lag 0:\n%s", lags, dom)
	}

	// The screenshot is a test artifact: $SPOOL_TEST_ARTIFACTS or the test's temporary directory.
	dir := os.Getenv("SPOOL_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "console-overview.png")
	_, msgs = headless(t, base+"/console/", shot)
	noConsole("screenshot", msgs)
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10_000 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("console screenshot: %s", shot)
}
