package storage

import (
	"fmt"
	"syscall"
)

// Size is the bytes of whole batches in the log's segments: what Kafka's Log.size reports
// (DescribeLogDirs' PartitionSize), without indexes. Safe for concurrent use; a snapshot that
// an append or a retention pass may change at once.
func (l *Log) Size() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size.Load()
	}
	return n
}

// SegmentCount is the number of segments of the log (Kafka's Log NumLogSegments gauge).
func (l *Log) SegmentCount() int {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return len(l.segs)
}

// VolumeSpace is the total and usable bytes of the file system holding the data directory
// (DescribeLogDirs v4's TotalBytes and UsableBytes; usable is what an unprivileged writer gets).
func (m *Manager) VolumeSpace() (total, usable int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(m.dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", m.dir, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}
