package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestManagerLifecycle(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.HadCleanShutdown() {
		t.Fatal("a new data dir reports a clean shutdown")
	}
	if _, err := OpenManager(dir, nil); err == nil {
		t.Fatal("a second manager locked the same directory")
	}
	cfg := smallConfig()
	a, err := m.Open("orders", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Open("my-topic-x", 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Open("orders", 0, cfg); again != a {
		t.Fatal("Open of an open log returned another Log")
	}
	if m.Get("orders", 0) != a || m.Get("orders", 1) != nil {
		t.Fatal("Get")
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := m.Open(bad, 0, cfg); err == nil {
			t.Fatalf("opened topic %q", bad)
		}
	}
	wantA := appendMany(t, a, 80, 3, 1)
	wantB := appendMany(t, b, 5, 3, 1)
	if err := a.DeleteRecordsBefore(10); err != nil {
		t.Fatal(err)
	}
	if got := m.Partitions(); !slices.Equal(got, []TopicPartition{{"my-topic-x", 3}, {"orders", 0}}) {
		t.Fatalf("Partitions %v", got)
	}
	if got, _ := m.OnDisk(); !slices.Equal(got, []TopicPartition{{"my-topic-x", 3}, {"orders", 0}}) {
		t.Fatalf("OnDisk %v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Kafka's text format, with log end offsets as recovery points.
	rp, err := os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if string(rp) != "0\n2\nmy-topic-x 3 15\norders 0 240\n" {
		t.Fatalf("recovery-point-offset-checkpoint:\n%s", rp)
	}
	ls, _ := os.ReadFile(filepath.Join(dir, "log-start-offset-checkpoint"))
	if string(ls) != "0\n2\nmy-topic-x 3 0\norders 0 10\n" {
		t.Fatalf("log-start-offset-checkpoint:\n%s", ls)
	}
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal("no clean shutdown marker")
	}
	if _, err := a.Append(simpleBatch(t, 1, 1, "x"), AppendOptions{AssignOffsets: true}); err == nil {
		t.Fatal("append to a log of a closed manager")
	}

	m2, err := OpenManager(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if !m2.HadCleanShutdown() {
		t.Fatal("clean shutdown not seen")
	}
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); !os.IsNotExist(err) {
		t.Fatal("the marker survived the open")
	}
	a2, err := m2.Open("orders", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a2.LogStartOffset() != 10 {
		t.Fatalf("log start %d after reopen", a2.LogStartOffset())
	}
	if got := readAll(t, a2); !slices.Equal(got, wantA[10:]) {
		t.Fatalf("orders-0: %d records", len(got))
	}
	b2, _ := m2.Open("my-topic-x", 3, cfg)
	if got := readAll(t, b2); !slices.Equal(got, wantB) {
		t.Fatalf("my-topic-x-3: %d records", len(got))
	}
	// Remove deletes the directory and the checkpoint entries.
	if err := m2.Remove("my-topic-x", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "my-topic-x-3")); !os.IsNotExist(err) {
		t.Fatal("directory still there")
	}
	if err := m2.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	rp, _ = os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint"))
	if strings.Contains(string(rp), "my-topic-x") {
		t.Fatalf("removed partition still checkpointed:\n%s", rp)
	}
}

// TestManagerUncleanRestart: without Close, the next start has no marker and recovers each log
// from its checkpointed recovery point; everything made durable is there.
func TestManagerUncleanRestart(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	l, err := m.Open("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := appendMany(t, l, 50, 3, 1)
	if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	more := appendMany(t, l, 10, 3, 1)
	if err := l.WaitDurable(t.Context(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	l.crash()
	m.lock.Close() // the process died

	var logged syncLog
	m2, err := OpenManager(dir, slog.New(slog.NewJSONHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.HadCleanShutdown() {
		t.Fatal("an unclean stop looked clean")
	}
	l2, err := m2.Open("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l2); !slices.Equal(got, want) {
		t.Fatalf("recovered %d records, want %d", len(got), len(want))
	}
	// The log says which log it recovered, from where, and how long it took.
	var rec struct {
		Msg     string `json:"msg"`
		Dir     string `json:"dir"`
		Checked int    `json:"segments_checked"`
		Took    int64  `json:"took"`
	}
	found := false
	for _, line := range strings.Split(logged.String(), "\n") {
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "recovered a log after an unclean shutdown" {
			found = true
			if rec.Dir != l2.Dir() || rec.Checked < 1 {
				t.Errorf("recovery line names %q with %d segments checked, want %q and at least 1", rec.Dir, rec.Checked, l2.Dir())
			}
		}
	}
	if !found {
		t.Errorf("no recovery line in:\n%s", logged.String())
	}
}

func TestManagerRunBackground(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := smallConfig()
	cfg.RetentionBytes = 4096
	l, err := m.Open("bg", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	appendMany(t, l, 100, 3, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		m.RunBackground(ctx, time.Millisecond)
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for {
		ch := l.Changed()
		if l.LogStartOffset() > 0 && l.segmentCount() <= 3 {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("retention never ran: start %d, %d segments", l.LogStartOffset(), l.segmentCount())
		}
	}
	cancel()
	<-done
}

func TestOffsetCheckpointParsing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cp")
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 1\n", "0\n1\na b c\n", "0\nx\n", "0\n1\na 0 1 2\n"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := readOffsetCheckpoint(p); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	m := map[TopicPartition]int64{{"b", 1}: 5, {"a", 10}: 7, {"a", 2}: 0}
	if err := writeOffsetCheckpoint(p, m); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if string(data) != "0\n3\na 2 0\na 10 7\nb 1 5\n" {
		t.Fatalf("wrote %q", data)
	}
	got, err := readOffsetCheckpoint(p)
	if err != nil || len(got) != 3 || got[TopicPartition{"a", 10}] != 7 {
		t.Fatalf("read %v %v", got, err)
	}
	// The epoch cache's format.
	c := &epochCache{path: filepath.Join(dir, "leader-epoch-checkpoint")}
	c.assign(0, 0)
	c.assign(2, 100)
	c.assign(1, 200) // older epoch: ignored
	data, _ = os.ReadFile(c.path)
	if string(data) != "0\n2\n0 0\n2 100\n" {
		t.Fatalf("epoch checkpoint %q", data)
	}
	c.truncateFromStart(50)
	c2, err := loadEpochCache(dir)
	if err != nil || !slices.Equal(c2.entries, []EpochEntry{{0, 50}, {2, 100}}) {
		t.Fatalf("loaded %v %v", c2.entries, err)
	}
	if e, end := c2.endOffsetFor(1, 500); e != 0 || end != 100 {
		t.Fatalf("endOffsetFor(1) = %d %d", e, end)
	}
	c2.truncateFromEnd(100)
	if !slices.Equal(c2.entries, []EpochEntry{{0, 50}}) {
		t.Fatalf("after truncateFromEnd %v", c2.entries)
	}
}

// TestManagerFreshDirectoryIsNotUnclean: a new, empty data directory has had no shutdown to be
// unclean, so it warns of none; a directory with data and no clean-shutdown marker does.
func TestManagerFreshDirectoryIsNotUnclean(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	dir := t.TempDir()
	m, err := OpenManager(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "no clean shutdown marker") {
		t.Fatalf("a fresh data directory logged an unclean shutdown:\n%s", buf.String())
	}
	l, err := m.Open("fresh", 0, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := l.Append(simpleBatch(t, 1, 1, "x"), AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	// A crash: the lock goes, the marker is never written.
	if err := m.lock.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if !strings.Contains(buf.String(), "level=WARN msg=\"no clean shutdown marker") {
		t.Fatalf("a data directory with logs and no marker did not warn:\n%s", buf.String())
	}
}

// syncLog is a log destination safe for the goroutines that may write to it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
