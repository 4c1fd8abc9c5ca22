package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Kafka's checkpoint files are text: a version line ("0"), a count line, then one entry per
// line with space-separated fields. They are replaced crash-safely (writeFileAtomic).

const checkpointVersion = 0

// readCheckpoint parses a checkpoint file into its entry lines' fields, checking that each
// has nfields fields. A missing file reads as no entries.
func readCheckpoint(path string, nfields int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := next()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("checkpoint %s: unsupported version line %q", path, v)
	}
	c, ok := next()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("checkpoint %s: bad count line %q", path, c)
	}
	out := make([][]string, 0, min(n, 1<<16))
	for range n {
		s, ok := next()
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: %d entries expected, found %d", path, n, len(out))
		}
		f := strings.Fields(s)
		if len(f) != nfields {
			return nil, fmt.Errorf("checkpoint %s line %d: %q has %d fields, want %d", path, line, s, len(f), nfields)
		}
		out = append(out, f)
	}
	if s, ok := next(); ok && s != "" {
		return nil, fmt.Errorf("checkpoint %s: unexpected line %d %q", path, line, s)
	}
	return out, nil
}

// writeCheckpoint writes entry lines (already formatted) crash-safely.
func writeCheckpoint(path string, lines []string) error {
	return writeFileAtomic(path, checkpointBytes(lines))
}

func checkpointBytes(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, s := range lines {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// readOffsetCheckpoint reads a "topic partition offset" checkpoint (recovery points, log start
// offsets, cleaner offsets).
func readOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	rows, err := readCheckpoint(path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(rows))
	for _, f := range rows {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint %s: bad entry %q", path, strings.Join(f, " "))
		}
		out[TopicPartition{f[0], int32(p)}] = o
	}
	return out, nil
}

func writeOffsetCheckpoint(path string, m map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, m[tp])
	}
	return writeCheckpoint(path, lines)
}

// --- leader epoch cache ---

const epochCheckpointFile = "leader-epoch-checkpoint"

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the partition's leader epoch history (Kafka's LeaderEpochFileCache), persisted
// to leader-epoch-checkpoint on every change. Guarded by the Log's appendMu.
//
// Each change replaces the file whole (temporary file fsynced, then renamed), so a crash
// leaves the old history or the new one. With dirDirty set (a Log's), the directory's fsync
// that makes the rename durable is left to the log's next flush (dirsync.go): an epoch only
// needs to be durable before records written in it are, and those become durable only
// through that flush.
type epochCache struct {
	path     string
	entries  []EpochEntry
	dirDirty *atomic.Bool // nil: fsync the directory at each write
}

func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, epochCheckpointFile)}
	rows, err := readCheckpoint(c.path, 2)
	if err != nil {
		return nil, err
	}
	for _, f := range rows {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint %s: bad entry %q", c.path, strings.Join(f, " "))
		}
		c.entries = append(c.entries, EpochEntry{int32(e), o})
	}
	return c, nil
}

func (c *epochCache) write() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	if c.dirDirty == nil {
		return writeCheckpoint(c.path, lines)
	}
	if err := replaceFile(c.path, checkpointBytes(lines)); err != nil {
		return err
	}
	c.dirDirty.Store(true) // after the rename: a flush that clears the mark after this covers it
	return nil
}

func (c *epochCache) latestEpoch() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// assign records that epoch starts at offset, if it is newer than the latest epoch.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if epoch < 0 || epoch <= c.latestEpoch() {
		return nil
	}
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	// A new slice: when the checkpoint cannot be written the history stays as it was, so that
	// the epoch is not taken as assigned and the caller's retry writes it.
	prev := c.entries
	c.entries = append(slices.Clip(c.entries[:n]), EpochEntry{epoch, offset})
	if err := c.write(); err != nil {
		c.entries = prev
		return err
	}
	return nil
}

// truncateFromEnd drops epochs starting at or after end (a log truncation).
func (c *epochCache) truncateFromEnd(end int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.write()
}

// truncateFromStart drops epochs wholly before start; the one spanning start now starts there.
func (c *epochCache) truncateFromStart(start int64) error {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	if len(c.entries) == 0 || (i == 0 && c.entries[0].StartOffset >= start) {
		return nil
	}
	c.entries = c.entries[i:]
	c.entries[0].StartOffset = max(c.entries[0].StartOffset, start)
	return c.write()
}

func (c *epochCache) clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.write()
}

// endOffsetFor answers OffsetForLeaderEpoch: the largest epoch at most epoch, and the offset
// where the next epoch starts (logEnd when it is the latest). -1, -1 when epoch precedes all.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].Epoch <= epoch {
			if i == len(c.entries)-1 {
				return c.entries[i].Epoch, logEnd
			}
			return c.entries[i].Epoch, c.entries[i+1].StartOffset
		}
	}
	return -1, -1
}
