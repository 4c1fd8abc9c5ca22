// Package storage is the broker's durable log: one Log per partition, in Kafka's on-disk layout,
// and a Manager for all the logs of a data directory.
//
// # On-disk format
//
// A data directory holds one directory per partition, "<topic>-<partition>", and these files
// (Kafka's names and text formats, so a Kafka operator finds their way):
//
//	.lock                              flock(2)ed while a Manager has the directory open
//	recovery-point-offset-checkpoint   "0\n<n>\n" then "<topic> <partition> <offset>" lines:
//	                                   offsets below are fsynced, data and indexes
//	log-start-offset-checkpoint        same format: each log's start offset
//	cleaner-offset-checkpoint          same format: where each log's next compaction starts
//	.kafka_cleanshutdown               present only between a clean Close and the next open
//
// A partition directory holds segments. A segment is named by its base offset, the first
// offset it may hold, as 20 zero-padded digits:
//
//	00000000000000000000.log        record batches (v2, see package batch) back to back, in
//	                                increasing offset order, exactly as produced except for
//	                                the base offset and partition leader epoch the leader
//	                                stamps (and the LogAppendTime timestamp and CRC)
//	00000000000000000000.index      sparse offset index: 8-byte entries, uint32 offset minus
//	                                base offset, uint32 file position, big-endian. An entry
//	                                is added for a batch when more than index.interval.bytes
//	                                were appended since the previous entry; its offset is
//	                                the batch's last offset and its position the batch's
//	                                start (as Kafka does). Offsets increase strictly.
//	00000000000000000000.timeindex  time index: 12-byte entries, int64 timestamp, uint32
//	                                relative offset: at each offset index entry (and when the
//	                                segment is sealed), the largest batch maxTimestamp so far
//	                                if it grew, and the last offset of the batch that first
//	                                reached it. Timestamps increase strictly.
//	00000000000000000123.snapshot   idempotent producer state as of offset 123 (own format,
//	                                CRC-32C protected; see producer.go), written at each
//	                                roll and at Close; the two newest are kept
//	leader-epoch-checkpoint         "0\n<n>\n" then "<epoch> <start offset>" lines
//
// The active (last) segment's index files are preallocated to segment.index.bytes and
// memory-mapped read-write; the entries are written into the mapping. Sealing a segment (when
// it rolls) trims its index files to their entries; a sealed segment's indexes are mapped
// read-only on first use. Index files are never trusted blindly: on open a sealed segment's
// indexes get Kafka's sanity check, and a missing or inconsistent index is rebuilt from the
// log file.
//
// Segments roll when the next append would pass segment.bytes, when segment.ms passed since
// the segment's first append, when an index lacks room, or when offsets would not fit 32 bits
// relative to the base. File positions are 32-bit, so segments stay below 2 GiB.
//
// Files in transit: "*.tmp" (a metadata file being replaced), "*.cleaned" (compaction output
// not yet committed: deleted on open), "*.log.swap" (committed compaction output: completed on
// open, its indexes rebuilt), "*.deleted", and "<topic>-<partition>.<hex>-delete" directories
// (deleted partitions): all removed on open. Every metadata file (checkpoints, snapshots, the
// epoch cache) is replaced by writing a temporary file, fsyncing it, renaming it into place
// and fsyncing the directory; for the epoch cache, and for the files of a new log and its
// entry in the data directory, that directory fsync is the log's next flush's, which runs it
// before the durable offset moves (dirsync.go): nothing acknowledged depends on them before.
//
// # Durability and recovery
//
// Append writes the batches to the active segment with one write(2) and updates the indexes;
// durability is separate. WaitDurable and WaitAllDurable enforce the policy: with FsyncAlways
// they wait for a sync round, which fdatasyncs the unflushed segments of every log queued for
// it (in parallel) and covers everything appended before it started. The logs of a Manager
// share one round at a time, so concurrent waiters, across partitions and connections, share
// fsyncs (group commit). The durable end offset (DurableEndOffset) is the recovery point. With FsyncInterval a timer and a
// record count trigger background flushes; with FsyncNever only a roll (the sealed segment),
// Flush and Close do. Indexes are made durable when a segment is sealed and flushed, and when
// the recovery point is checkpointed.
//
// Opening a log after an unclean stop (no clean-shutdown marker, or no checkpoint at all, as
// with Open) reads every batch of every segment from the one holding the recovery point: each
// must pass batch validation (framing, CRC-32C, counts) and follow its predecessor's offsets.
// The log is truncated at the first batch that does not (a torn write, garbage, a flipped
// bit), later segments are deleted, and the checked segments' indexes are rebuilt. Data below
// the recovery point was fsynced and is not re-read at open; instead, the first Read that
// serves bytes this process neither wrote nor checked validates their batches (the read warms
// the page cache for the sendfile that follows), so that bit rot in an old segment is
// reported (logged, ErrCorruptMessage) and never served. Verify scrubs a whole log. The
// producer state is restored from the newest snapshot at or below the log end plus the batches
// after it; the leader epoch cache is cut at the log end.
//
// # Ownership and concurrency
//
// Every exported method of Log and Manager is safe for concurrent use. Appends are serialized;
// their validation (CRC, record parsing, decompression) runs before the lock, in the caller's
// goroutine. Reads, WaitDurable, OffsetForTimestamp and the accessors run concurrently with
// appends; retention, compaction, truncation and Close are serialized with each other.
//
// Append borrows its records slice for the call: it rewrites base offsets, leader epochs and,
// under LogAppendTime, timestamps and CRCs in place, and keeps no reference afterwards.
//
// Read returns file ranges, not bytes (for sendfile). The segments they point into stay open,
// by reference count, until ReadResult.Release, even if retention deletes or compaction
// replaces them in the meantime. The *os.File of a Chunk is shared: use positioned I/O only.
// Bytes below a segment's published size never change, except through Truncate (a follower
// diverging from its leader), which is the only operation that can shorten a range a reader
// holds.
//
// Changed returns a channel closed on the next append, durability advance, truncation, start
// offset change or Close, so that long polls wait without spinning.
//
// Memory stays bounded: reads hold no data, the indexes are mapped files the kernel pages,
// compaction's key map holds at most CompactionMaxKeys keys, producer state is bounded by
// expiration, and append and recovery buffers are pooled or sized by one batch.
package storage
