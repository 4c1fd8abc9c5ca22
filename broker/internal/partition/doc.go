// Package partition is the broker's partition manager: it owns the local partitions (each a
// storage log and the replication replica that leads or follows it) and offers the request
// handlers the three things they need, so that they never touch storage themselves:
//
//   - Append as leader (Partition.AppendAsLeader), then Commit: one wait, written once here,
//     for "durable by the flush policy, then (acks=-1) replicated to the ISR", shared by
//     produce and the coordinators' internal topics. Commit blocks; Committed runs it on its
//     own goroutine and calls back (a completion).
//   - Read (Partition.Read): from an offset, up to max bytes, for a consumer (up to the high
//     watermark, or with read_committed the last stable offset: the high watermark or, if
//     lower, the first offset of the oldest open transaction) or a follower (up to the log end), with the
//     partition's offsets (high watermark, last stable offset, log start, log end).
//   - One per-partition signal, "what a reader may see changed" (Partition.Changed): a
//     consumer's channel closes when the high watermark, the last stable offset or the log
//     start moves, or the partition's role or epoch changes; a follower's when the log end
//     moves (an append) or the role or epoch changes. An append below the high watermark
//     wakes no consumer. Delay parks a fetch on these signals across all its partitions
//     (Kafka's delayed fetch: fetch.min.bytes and fetch.max.wait.ms over the whole request).
//
// # Ownership and concurrency
//
// Manager.mu guards only the map of partitions (get, put, drop); it is never held across I/O.
// A Partition's log and replica are shared: the log has its own locks (see package storage),
// the replica its mu (see package replication). A Partition's two signals are guarded each by
// its own leaf mutex, taken for a channel swap only, so they may be raised from anywhere,
// including from the replica's change hook, which runs with the replica's mu held.
//
// Transactions: the log tracks open transactions and aborted ones (storage/txn.go);
// AppendMarker appends the commit or abort markers the transaction coordinator decides, and
// AbortedTransactions lists the aborted ones a read_committed read spans. A marker raises the
// consumer signal as any append does once the high watermark covers it, which is when the last
// stable offset can move past the transaction.
//
// Who raises what:
//
//   - AppendAsLeader (the produce path, on the connection's reader goroutine, or a
//     coordinator) raises the follower signal, and the consumer signal if the append moved
//     the high watermark (a sole replica without per-write durability).
//   - Commit, once the append is durable, recomputes the high watermark (Replica.Advance) and
//     raises the consumer signal if it moved: with fsync before ack, a sole replica's high
//     watermark is its durable end.
//   - The replica's change hook raises the consumer signal on every high watermark advance
//     (a follower's fetch proved the data replicated, on that fetch's goroutine; an ISR
//     change) and both signals on a role, epoch or ISR change.
//   - Drop (the partition leaves this broker) raises both, so parked fetches find it gone and
//     answer at once.
//
// A log start move made by storage on its own (retention deleting whole old segments, never
// the active one) raises nothing: a parked fetch waits at the log end, which retention never
// reaches; DeleteRecords, when it comes, goes through the manager and raises the consumer
// signal.
//
// What may block: Commit and Delay block their caller (run them on a goroutine of their own,
// never on a connection's reader goroutine); AppendAsLeader does one write(2) and no fsync;
// Read does preads of batch headers only (the data stays in the page cache for sendfile); the
// signals never block.
//
// # Hot path
//
// No per-record work and no per-record allocation: appends and reads handle whole batches
// (storage validates and indexes them); a read allocates one result per partition, an append
// none here. Waiting costs one channel per parked partition.
package partition
