package server

// Recompression on append (compression.type). Batches stay opaque on the hot path, except
// where a topic's (or the broker's default) compression.type names a codec other than the one
// the producer used: then the leader rebuilds the batch in that codec before the log assigns
// its offsets, as Kafka's LogValidator does. The rebuilt batch keeps the producer id, epoch,
// base sequence (so idempotent retries are still recognised), the transactional bit, each
// record's timestamp, key, value and headers; its offset deltas run 0..n-1. compression.type
// "producer" (the default) and a batch already in the target codec take no extra work beyond
// one atomic load and a string compare. "uncompressed" decompresses. The rebuilt batch is
// compressed at the topic's compression.<codec>.level (gzip, lz4, zstd), as in Kafka; a batch
// already in the target codec is kept whatever level the producer used.
//
// A batch that does not decode is passed on unchanged, so the log refuses it with the same
// error it gives any bad batch (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE); the
// recompressed batch is then validated and size-checked (max.message.bytes) by the log like any
// other. Runs on the connection's reader goroutine, in Produce's request order.

import (
	"fmt"
	"sync"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
)

// recompressor holds the buffers of one rebuild, pooled so that a warm broker allocates
// nothing per recompressed batch.
type recompressor struct {
	it      batch.Iterator
	b       *batch.Builder
	headers []batch.RecordHeader
}

// maxPooledRecompressor is the largest rebuilt batch whose buffers go back to the pool: a
// rare huge batch should not pin its memory for good.
const maxPooledRecompressor = 16 << 20

var recompressors = sync.Pool{New: func() any { return &recompressor{b: batch.NewBuilder()} }}

// release returns rc's buffers to the pool; nil (nothing was rebuilt) is fine. The batch that
// recompress returned is invalid afterwards.
func (rc *recompressor) release() {
	if rc == nil || rc.b.Size() > maxPooledRecompressor {
		return
	}
	rc.headers = rc.headers[:0]
	recompressors.Put(rc)
}

// recompress returns the batch to append to part: records itself, or records rebuilt in the
// topic's compression.type, valid until rc.release. records is one batch that passed
// checkProduceBatch.
func recompress(part *partition.Partition, records []byte) (out []byte, rc *recompressor, err error) {
	ct := part.CompressionType()
	if ct == "" || ct == "producer" {
		return records, nil, nil
	}
	target, err := compress.ParseCodec(ct)
	if err != nil {
		return records, nil, nil // validated when set: unreachable
	}
	attrs := batch.Raw(records).Attributes()
	if attrs.Codec() == target || attrs.Control() {
		return records, nil, nil
	}
	rc = recompressors.Get().(*recompressor)
	if err := rc.it.Reset(records, int(part.MaxUncompressedBatchBytes())); err != nil {
		rc.release()
		return records, nil, nil // the log refuses it with its error
	}
	h := rc.it.Header()
	b := rc.b
	b.Reset()
	b.SetCodecLevel(target, part.CompressionLevel())
	b.SetProducer(h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	b.SetTransactional(h.Attributes.Transactional())
	b.SetPartitionLeaderEpoch(h.PartitionLeaderEpoch)
	if h.Attributes.LogAppendTime() {
		b.SetLogAppendTime(h.MaxTimestamp)
	}
	b.Grow(len(rc.it.Region()) + 64)
	for rc.it.Next() {
		rec := rc.it.Record()
		rc.headers = rec.AppendHeaders(rc.headers[:0])
		b.Append(rec.Timestamp, rec.Key, rec.Value, rc.headers)
	}
	if rc.it.Err() != nil || b.NumRecords() == 0 {
		rc.release()
		return records, nil, nil // the log refuses it with its error
	}
	out, err = b.Finish()
	if err != nil {
		rc.release()
		return nil, nil, fmt.Errorf("%w: recompressing a batch to %s: %v", wire.ErrUnknownServerError, target, err)
	}
	return out, rc, nil
}
