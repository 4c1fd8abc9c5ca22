package server

// Fetch (key 1), versions 4-12; flexible from 12.
//
// Sessionless (KIP-227 sessions are declined with session id 0, so clients send full fetches;
// an incremental fetch naming a session gets FETCH_SESSION_ID_NOT_FOUND). For each partition
// the log returns whole batches from the one holding FetchOffset, never past the high
// watermark; an offset below the log start or past the log end gets OFFSET_OUT_OF_RANGE.
// Sizes as Kafka applies them: PartitionMaxBytes per partition and MaxBytes (v3+) overall,
// except that the first batch of the first partition with data is returned even when larger,
// so a consumer always makes progress. Long poll: with fewer than MinBytes ready the reply
// waits up to MaxWaitMs, woken by appends to the partitions asked for; an idle wait costs no
// CPU. There are no transactions, so the last stable offset is the high watermark and there
// are no aborted transactions. Records go from segment files to the socket with sendfile
// (spool.fetch.sendfile) or a pooled read+write, never through the heap as a whole.

import (
	"context"
	"reflect"
	"time"

	"github.com/spoolmq/spool/broker/internal/storage"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// splicedFetch is a fetch response whose records stay in segment files until written.
type splicedFetch struct {
	resp  *wire.FetchResponse
	parts []fetchedPartition // one per response partition, in encoding order
}

// fetchedPartition is the records of one response partition: file ranges, not bytes.
type fetchedPartition struct {
	read storage.ReadResult // zero when the partition has no records
	size int64
}

func (f *splicedFetch) release() {
	for i := range f.parts {
		if f.parts[i].size > 0 {
			f.parts[i].read.Release()
		}
	}
	f.parts = nil
}

func handleFetch(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.FetchRequest)
	if req.version >= 7 && r.SessionId != 0 && r.SessionEpoch > 0 {
		resp := &wire.FetchResponse{}
		resp.Default()
		resp.ErrorCode = wire.ErrFetchSessionIdNotFound.Code
		return ready(reply{msg: resp})
	}
	f, size, failed := s.readFetch(r, req.version)
	if size >= int64(r.MinBytes) || r.MaxWaitMs <= 0 || failed {
		return ready(reply{fetch: f})
	}
	// Long poll: wait for any of the partitions to change, or the deadline.
	waitOn := s.fetchWatches(r)
	f.release()
	p := later()
	go func() {
		deadline := time.NewTimer(time.Duration(r.MaxWaitMs) * time.Millisecond)
		defer deadline.Stop()
		for {
			if !waitAny(ctx, deadline.C, waitOn) {
				break
			}
			f, size, failed = s.readFetch(r, req.version)
			if size >= int64(r.MinBytes) || failed {
				p.complete(reply{fetch: f})
				return
			}
			f.release()
			waitOn = s.fetchWatches(r)
		}
		f, _, _ = s.readFetch(r, req.version)
		p.complete(reply{fetch: f})
	}()
	return p
}

// fetchWatches returns the change channels of the partitions a fetch asks for.
func (s *Server) fetchWatches(r *wire.FetchRequest) []<-chan struct{} {
	var out []<-chan struct{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if part := s.parts.get(t.Topic, p.Partition); part != nil {
				out = append(out, part.log.Changed())
			}
		}
	}
	return out
}

// waitAny blocks until one of chans is closed (true), or the deadline passes or ctx ends (false).
func waitAny(ctx context.Context, deadline <-chan time.Time, chans []<-chan struct{}) bool {
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 2
}

// readFetch reads what is available now. size is the record bytes found; failed reports a
// partition error, which answers at once.
func (s *Server) readFetch(r *wire.FetchRequest, version int16) (f *splicedFetch, size int64, failed bool) {
	resp := &wire.FetchResponse{}
	resp.Default()
	f = &splicedFetch{resp: resp}
	remaining := int64(r.MaxBytes)
	if version < 3 || remaining <= 0 {
		remaining = 1<<31 - 1
	}
	for _, rt := range r.Topics {
		tr := wire.FetchResponseFetchableTopicResponse{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			var pd wire.FetchResponsePartitionData
			pd.Default()
			pd.PartitionIndex = rp.Partition
			if r.IsolationLevel == 1 {
				pd.AbortedTransactions = []wire.FetchResponseAbortedTransaction{}
			}
			part := s.parts.get(rt.Topic, rp.Partition)
			if part == nil {
				pd.ErrorCode = wire.ErrUnknownTopicOrPartition.Code
				pd.HighWatermark, pd.LastStableOffset, pd.LogStartOffset = -1, -1, -1
				failed = true
				tr.Partitions = append(tr.Partitions, pd)
				f.parts = append(f.parts, fetchedPartition{})
				continue
			}
			hw := s.highWatermark(part)
			pd.HighWatermark, pd.LastStableOffset, pd.LogStartOffset = hw, hw, part.log.LogStartOffset()
			fp := fetchedPartition{}
			maxBytes := min(int64(rp.PartitionMaxBytes), remaining)
			if rp.FetchOffset < hw && (maxBytes > 0 || size == 0) {
				res, err := part.log.Read(rp.FetchOffset, int32(min(max(maxBytes, 0), 1<<31-1)), hw)
				switch {
				case err != nil:
					pd.ErrorCode = errCode(storageError(err))
					failed = true
				case res.Size > maxBytes && size > 0:
					// Only the first partition with data may exceed the limits.
					res.Release()
				case res.Size > 0:
					fp = fetchedPartition{read: res, size: res.Size}
					size += res.Size
					remaining -= res.Size
				default:
					res.Release()
				}
			} else if rp.FetchOffset > part.log.LogEndOffset() || rp.FetchOffset < part.log.LogStartOffset() {
				pd.ErrorCode = wire.ErrOffsetOutOfRange.Code
				failed = true
			}
			tr.Partitions = append(tr.Partitions, pd)
			f.parts = append(f.parts, fp)
		}
		resp.Responses = append(resp.Responses, tr)
	}
	return f, size, failed
}
