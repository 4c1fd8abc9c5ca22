package storage

import (
	"fmt"
	"io"
	"os"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// Chunk is a byte range of a segment file holding whole batches, ready for sendfile.
//
// File is shared by every reader of the segment: use only positioned I/O on it (ReadAt,
// sendfile(2) with an explicit offset as SendTo does). Never Seek, Read or io.Copy from it, and
// never pass it to (*net.TCPConn).ReadFrom, which sends from the shared file position. Do not
// close it. A concurrent Truncate (replication) may shorten the file under a chunk; sends then
// come up short, which the caller must treat as an error for the connection.
type Chunk struct {
	File     *os.File
	Pos, Len int64
}

// ReadResult holds the chunks of a read. The segments stay open until Release, even when
// retention or compaction removes them meanwhile. The zero value is an empty result.
type ReadResult struct {
	Chunks []Chunk
	// Size is the total length of the chunks.
	Size int64

	release func()
}

// Release lets the segment files go; the chunks are invalid afterwards. Call it once per
// result (it is a no-op on the zero value and on a result already released through the same
// variable).
func (r *ReadResult) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// Read returns the batches from the one containing offset onwards: at least that whole batch
// (even beyond maxBytes), then more whole batches while the total stays within maxBytes,
// possibly from several segments, never a batch reaching limit (the high watermark; it is
// capped at the log end). An offset below the log start or above the log end fails with
// ErrOffsetOutOfRange; an offset at or past limit gives an empty result. The caller must
// Release the result.
//
// Read reads batch headers (through the sparse index and a forward scan, one pread per 16 KiB)
// but never the data, which stays in the page cache for sendfile.
func (l *Log) Read(offset int64, maxBytes int32, limit int64) (ReadResult, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var res ReadResult
	if l.closed.Load() {
		return res, fmt.Errorf("log %s: %w", l.dir, ErrClosed)
	}
	start, leo := l.logStart.Load(), l.leo.Load()
	if offset < start || offset > leo {
		return res, fmt.Errorf("%w: offset %d is outside [%d, %d] of %s", ErrOffsetOutOfRange, offset, start, leo, l.dir)
	}
	limit = min(limit, leo)
	if offset >= limit {
		return res, nil
	}
	var segs []*segment
	releaseAll := func() {
		for _, s := range segs {
			s.release()
		}
	}
	remaining := int64(maxBytes)
	for i := l.floorSegment(offset); i < len(l.segs); i++ {
		s := l.segs[i]
		size := s.size.Load()
		r := newHeaderReader(s.file, size)
		pos, h, err := s.findBatch(&r, offset, 0)
		if err == io.EOF {
			r.close()
			continue // offset falls in a gap (compaction): the next segment has what follows
		}
		if err != nil {
			r.close()
			releaseAll()
			return ReadResult{}, fmt.Errorf("%w: reading %s at offset %d: %w", ErrCorruptMessage, s, offset, err)
		}
		if h.LastOffset() >= limit {
			r.close()
			break
		}
		first := int64(h.TotalSize())
		if len(res.Chunks) > 0 && first > remaining {
			r.close()
			break
		}
		end, err := s.lastBoundary(&r, pos+first, pos+max(remaining, first), limit)
		r.close()
		if err != nil {
			releaseAll()
			return ReadResult{}, fmt.Errorf("%w: reading %s: %w", ErrCorruptMessage, s, err)
		}
		if err := s.verify(pos, end); err != nil {
			if !s.corruptReported.Swap(true) {
				l.logger.Error("corrupt data in a segment: refusing to serve it", "segment", s.String(), "err", err)
			}
			releaseAll()
			return ReadResult{}, err
		}
		s.acquire()
		segs = append(segs, s)
		res.Chunks = append(res.Chunks, Chunk{File: s.file, Pos: pos, Len: end - pos})
		res.Size += end - pos
		remaining -= end - pos
		if end < size || remaining <= 0 {
			break
		}
	}
	if len(segs) > 0 {
		res.release = releaseAll
	}
	return res, nil
}

// ReadBytes is Read copied into memory: for tests, replication and small reads.
func (l *Log) ReadBytes(offset int64, maxBytes int32, limit int64) ([]byte, error) {
	r, err := l.Read(offset, maxBytes, limit)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	out := make([]byte, r.Size)
	p := out
	for _, c := range r.Chunks {
		if _, err := c.File.ReadAt(p[:c.Len], c.Pos); err != nil {
			return nil, fmt.Errorf("reading %s: %w", c.File.Name(), err)
		}
		p = p[c.Len:]
	}
	return out, nil
}

// OffsetForTimestamp finds the first record whose timestamp is at least ts, at or after the log
// start: its offset and timestamp (ListOffsets by time). ok is false when no record qualifies.
// It searches segments by their newest timestamp, then the time index, the offset index and a
// scan of batch headers; only the one batch that holds the answer is read and decompressed.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	cfg := l.config()
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.closed.Load() {
		return -1, -1, false, fmt.Errorf("log %s: %w", l.dir, ErrClosed)
	}
	start := l.logStart.Load()
	var it batch.Iterator
	var buf []byte
	for i := l.floorSegment(start); i < len(l.segs); i++ {
		s := l.segs[i]
		if s.maxTs.Load() < ts {
			continue
		}
		pos := int64(0)
		if rel, found := lookupTime(s.tidx.view(), ts); found {
			pos = int64(lookupOffset(s.oidx.view(), rel))
		}
		r := newHeaderReader(s.file, s.size.Load())
		for {
			h, herr := r.header(pos)
			if herr == io.EOF {
				break
			}
			if herr != nil {
				r.close()
				return -1, -1, false, fmt.Errorf("%w: searching %s by timestamp: %w", ErrCorruptMessage, s, herr)
			}
			size := int64(h.TotalSize())
			if h.MaxTimestamp >= ts && h.LastOffset() >= start {
				if int64(cap(buf)) < size {
					buf = make([]byte, size)
				}
				b := buf[:size]
				if _, err := s.file.ReadAt(b, pos); err != nil {
					r.close()
					return -1, -1, false, fmt.Errorf("reading %s: %w", s, err)
				}
				if err := it.Reset(b, int(cfg.MaxUncompressedBatchBytes)); err != nil {
					r.close()
					return -1, -1, false, batchError(fmt.Sprintf("batch at %d of %s", pos, s), err)
				}
				for it.Next() {
					rec := it.Record()
					if rec.Timestamp >= ts && rec.Offset >= start {
						r.close()
						return rec.Offset, rec.Timestamp, true, nil
					}
				}
				if err := it.Err(); err != nil {
					r.close()
					return -1, -1, false, batchError(fmt.Sprintf("batch at %d of %s", pos, s), err)
				}
			}
			pos += size
		}
		r.close()
	}
	return -1, -1, false, nil
}

// LeaderEpochs returns a copy of the leader epoch history.
func (l *Log) LeaderEpochs() []EpochEntry {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.epochs == nil {
		return nil
	}
	return append([]EpochEntry(nil), l.epochs.entries...)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest known epoch at most epoch and the
// end offset of that epoch (the log end for the latest); -1, -1 when epoch precedes them all.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// AssignLeaderEpoch records that epoch starts at the log end, as a new leader does before its
// first append, so that EndOffsetForEpoch answers its followers exactly even before it writes.
// An epoch not newer than the latest is ignored.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.epochs.assign(epoch, l.leo.Load())
}

// LatestEpoch is the newest leader epoch in the log's history, or -1.
func (l *Log) LatestEpoch() int32 {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.epochs.latestEpoch()
}

// EachRecord calls fn with every record of the log from its start to its end as they are
// now: the coordinators' replay of their internal topics. A record's slices are valid only
// during the call. A batch that does not decode ends the replay with an error.
func (l *Log) EachRecord(fn func(batch.Record)) error {
	return l.EachBatchRecord(func(_ batch.Header, r batch.Record) { fn(r) })
}

// EachBatchRecord is EachRecord with each record's batch header (producer, transactional and
// control flags): a coordinator replaying transactional records and markers.
func (l *Log) EachBatchRecord(fn func(batch.Header, batch.Record)) error {
	var it batch.Iterator
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		data, err := l.ReadBytes(off, 1<<20, end)
		if err != nil {
			return fmt.Errorf("reading at offset %d: %w", off, err)
		}
		if len(data) == 0 {
			break
		}
		sc := batch.NewScanner(data)
		for sc.Next() {
			if err := it.Reset(sc.Batch(), 64<<20); err != nil {
				return fmt.Errorf("decoding the batch at offset %d: %w", off, err)
			}
			for it.Next() {
				fn(it.Header(), it.Record())
			}
			if err := it.Err(); err != nil {
				return fmt.Errorf("decoding the batch at offset %d: %w", off, err)
			}
			off = it.Header().NextOffset()
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("scanning at offset %d: %w", off, err)
		}
	}
	return nil
}
