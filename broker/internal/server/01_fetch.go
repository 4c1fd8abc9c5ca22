package server

// Fetch (key 1), versions 4-12; flexible from 12.
//
// Fetch sessions (KIP-227, v7+) as Kafka keeps them: see fetch_session.go. For each partition
// the log returns whole batches from the one holding FetchOffset, never past the high
// watermark; an offset below the log start or past the log end gets OFFSET_OUT_OF_RANGE.
// Sizes as Kafka applies them: PartitionMaxBytes per partition and MaxBytes (v3+) overall,
// except that the first batch of the first partition with data is returned even when larger,
// so a consumer always makes progress. Long poll (Kafka's delayed fetch, partition.Delay):
// with fewer than MinBytes ready, summed over the request's partitions, the reply waits up to
// MaxWaitMs, woken by what the reader may see: a consumer's by high watermark moves of the
// partitions asked for (on a replicated topic, when the followers have the data, not at the
// append), a follower's by appends; an idle wait costs no CPU, and a fetch with no partitions
// answers at once. The partition manager sets the read limit (partition.Partition.Read).
// Isolation (v4+): read_uncommitted reads up to the high watermark; read_committed up to the
// last stable offset (the first offset of the oldest open transaction, if below the high
// watermark), and the reply lists the aborted transactions (producer id, first offset) whose
// records overlap what it returns, so that the consumer drops them (Kafka's
// collectAbortedTransactions); control batches go to the client as stored. Records go from
// segment files to the socket with sendfile (spool.fetch.sendfile) or a pooled read+write,
// never through the heap as a whole.
//
// Only a partition's leader serves it: elsewhere NOT_LEADER_OR_FOLLOWER (or
// UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist). A consumer's
// CurrentLeaderEpoch (v9+) older than the leader's is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH. A follower's fetch (ReplicaId >= 0, sessionless, from another broker)
// reads up to the log end instead of the high watermark; the leader records its position once
// per request (replication.Replica.OnFollowerFetch: it may advance the high watermark and the
// ISR), refuses a stale or future epoch the same way, and answers a follower whose log
// diverges from its own (LastFetchedEpoch, v12) with DivergingEpoch and no records, so that
// it truncates by leader epoch (KIP-320). Partitions that leader.replication.throttled.replicas
// names for this broker send followers nothing while the leader's replication budget
// (leader.replication.throttled.rate) is spent (replication/throttle.go).
//
// Authorization (with authorizer.class.name set): a consumer needs Read on each topic, a follower
// ClusterAction on the cluster; other partitions get TOPIC_AUTHORIZATION_FAILED, decided once per
// request.

import (
	"context"
	"time"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/replication"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// splicedFetch is a fetch response whose records stay in segment files until written.
// targets, partitions and parts run in parallel, in response order; assemble groups them into
// resp.Responses.
type splicedFetch struct {
	resp       *wire.FetchResponse
	targets    []fetchTarget
	partitions []wire.FetchResponsePartitionData
	parts      []fetchedPartition
}

// fetchedPartition is the records of one response partition: file ranges, not bytes.
type fetchedPartition struct {
	read partition.ReadResult // zero when the partition has no records
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

// fail replaces the response with a top-level error and no partitions.
func (f *splicedFetch) fail(code int16) {
	f.release()
	f.targets, f.partitions = nil, nil
	f.resp.ErrorCode, f.resp.SessionId = code, 0
}

// assemble builds resp.Responses, one topic entry per run of partitions of the same topic, as
// Kafka's FetchResponse does, so the order the partitions were read in is kept.
func (f *splicedFetch) assemble() {
	f.resp.Responses = nil
	for i := range f.partitions {
		n := len(f.resp.Responses)
		if n == 0 || f.resp.Responses[n-1].Topic != f.targets[i].topic {
			f.resp.Responses = append(f.resp.Responses, wire.FetchResponseFetchableTopicResponse{Topic: f.targets[i].topic})
			n++
		}
		f.resp.Responses[n-1].Partitions = append(f.resp.Responses[n-1].Partitions, f.partitions[i])
	}
}

func handleFetch(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.FetchRequest)
	plan := s.fetchSessions.plan(r, req.version)
	answer := func(f *splicedFetch) reply {
		s.fetchSessions.finish(&plan, f)
		f.assemble()
		return reply{fetch: f}
	}
	denied := s.fetchDenied(req, r, plan.targets)
	var follower map[topicPartition]followerCheck
	if r.ReplicaId >= 0 {
		follower = s.checkFollowerFetch(r)
	} else {
		follower = consumerEpochs(r)
	}
	f, size, failed := s.readFetch(r, plan.targets, follower, denied)
	if size >= int64(r.MinBytes) || r.MaxWaitMs <= 0 || failed || len(plan.targets) == 0 {
		return ready(answer(f))
	}
	// Long poll (Kafka's delayed fetch): parked on what each partition's reader may see, a
	// consumer woken by its high watermark, a follower by appends.
	f.release()
	reader := partition.Consumer
	if r.ReplicaId >= 0 {
		reader = partition.Follower
	}
	parts := make([]*partition.Partition, len(plan.targets))
	for i, t := range plan.targets {
		parts[i] = s.parts.Get(t.topic, t.partition)
	}
	p := waitingFor(&s.waitingFetch)
	go func() {
		var f *splicedFetch
		done := partition.Delay(ctx, time.Duration(r.MaxWaitMs)*time.Millisecond, parts, reader, func() bool {
			if f != nil {
				f.release()
			}
			var size int64
			var failed bool
			f, size, failed = s.readFetch(r, plan.targets, follower, denied)
			return size >= int64(r.MinBytes) || failed
		})
		if !done {
			f.release()
			f, _, _ = s.readFetch(r, plan.targets, follower, denied)
		}
		p.complete(answer(f))
	}()
	return p
}

// readFetch reads what is available now for targets, in order. size is the record bytes
// found; failed reports a partition error, which answers at once.
func (s *Server) readFetch(r *wire.FetchRequest, targets []fetchTarget, follower map[topicPartition]followerCheck, denied map[string]bool) (f *splicedFetch, size int64, failed bool) {
	resp := &wire.FetchResponse{}
	resp.Default()
	f = &splicedFetch{resp: resp, targets: targets, partitions: make([]wire.FetchResponsePartitionData, len(targets)),
		parts: make([]fetchedPartition, len(targets))}
	remaining := int64(r.MaxBytes)
	if remaining <= 0 {
		remaining = 1<<31 - 1
	}
	isFollower := r.ReplicaId >= 0
	reader := partition.Consumer
	if isFollower {
		reader = partition.Follower
	}
	var leaderWait time.Duration
	if isFollower {
		now := time.Now()
		s.leaderQuota.SetRate(s.throttleRate("leader.replication.throttled.rate"), now)
		leaderWait = s.leaderQuota.Wait(now)
	}
	for i, t := range targets {
		pd := &f.partitions[i]
		pd.Default()
		pd.PartitionIndex = t.partition
		if r.IsolationLevel == 1 {
			pd.AbortedTransactions = []wire.FetchResponseAbortedTransaction{}
		}
		part, err := s.leaderPart(t.topic, t.partition)
		if denied[t.topic] {
			err = wire.ErrTopicAuthorizationFailed
		}
		if err == nil && !isFollower {
			if fc, ok := follower[t.topicPartition]; ok {
				err = checkLeaderEpoch(part, fc.epoch)
			}
		}
		if err == nil && isFollower {
			// A follower reads up to the log end; its fetch was checked once per request.
			fc := follower[t.topicPartition]
			err = fc.err
			if err == nil && fc.diverging != nil {
				o := part.Offsets()
				pd.HighWatermark, pd.LastStableOffset, pd.LogStartOffset = o.HighWatermark, o.LastStable, o.LogStart
				pd.DivergingEpoch.Epoch, pd.DivergingEpoch.EndOffset = fc.diverging.Epoch, fc.diverging.EndOffset
				failed = true // answer at once
				continue
			}
		}
		if err != nil {
			pd.ErrorCode = errCode(err)
			pd.HighWatermark, pd.LastStableOffset, pd.LogStartOffset = -1, -1, -1
			failed = true
			continue
		}
		maxBytes := min(int64(t.maxBytes), remaining)
		throttled := isFollower && part.LeaderThrottled()
		if throttled && leaderWait > 0 {
			maxBytes = -1 // over the leader's replication budget: nothing for it this time
		} else if throttled {
			maxBytes = min(maxBytes, int64(s.leaderQuota.Limit(int32(min(maxBytes, 1<<31-1)))))
		}
		readBytes := int32(min(max(maxBytes, 0), 1<<31-1))
		if maxBytes < 0 || (maxBytes == 0 && size > 0) {
			readBytes = -1 // offsets only
		}
		res, o, err := part.Read(t.fetchOffset, readBytes, partition.Isolation(r.IsolationLevel), reader)
		pd.HighWatermark, pd.LastStableOffset, pd.LogStartOffset = o.HighWatermark, o.LastStable, o.LogStart
		switch {
		case err != nil:
			pd.ErrorCode = errCode(storageError(err))
			failed = true
		case res.Size > maxBytes && size > 0:
			// Only the first partition with data may exceed the limits.
			res.Release()
		case res.Size > 0:
			if r.IsolationLevel == 1 {
				for _, a := range part.AbortedTransactions(t.fetchOffset, o.LastStable) {
					pd.AbortedTransactions = append(pd.AbortedTransactions, wire.FetchResponseAbortedTransaction{ProducerId: a.ProducerID, FirstOffset: a.FirstOffset})
				}
			}
			f.parts[i] = fetchedPartition{read: res, size: res.Size}
			size += res.Size
			remaining -= res.Size
			if throttled {
				s.leaderQuota.Record(int(res.Size), time.Now())
			}
		default:
			res.Release()
		}
	}
	return f, size, failed
}

// followerCheck is, for a follower's fetch, the leader's verdict on one partition; for a
// consumer's, the CurrentLeaderEpoch it sent (checked on each read, as leadership may move
// during a long poll).
type followerCheck struct {
	diverging *replication.Divergence
	err       error
	epoch     int32
}

// consumerEpochs collects the CurrentLeaderEpoch of each partition a consumer's fetch names
// (partitions a fetch session adds from earlier requests are not checked again).
func consumerEpochs(r *wire.FetchRequest) map[topicPartition]followerCheck {
	var out map[topicPartition]followerCheck
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if rp.CurrentLeaderEpoch < 0 {
				continue
			}
			if out == nil {
				out = map[topicPartition]followerCheck{}
			}
			out[topicPartition{rt.Topic, rp.Partition}] = followerCheck{epoch: rp.CurrentLeaderEpoch}
		}
	}
	return out
}

// checkFollowerFetch records a follower's fetch positions (once per request, before any
// read) and finds the partitions where it diverges or must be refused.
func (s *Server) checkFollowerFetch(r *wire.FetchRequest) map[topicPartition]followerCheck {
	out := map[topicPartition]followerCheck{}
	now := time.Now()
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{rt.Topic, rp.Partition}
			part, err := s.leaderPart(rt.Topic, rp.Partition)
			if err != nil {
				out[tp] = followerCheck{err: err}
				continue
			}
			d, err := part.Replica().OnFollowerFetch(replication.FollowerFetch{ID: r.ReplicaId, CurrentEpoch: rp.CurrentLeaderEpoch,
				FetchOffset: rp.FetchOffset, LastFetchedEpoch: rp.LastFetchedEpoch}, now)
			out[tp] = followerCheck{diverging: d, err: err}
		}
	}
	return out
}

// fetchDenied is the topics of targets the request may not read (nil without an authorizer):
// a consumer needs Read on each topic, a follower ClusterAction on the cluster, as in Kafka.
func (s *Server) fetchDenied(req *request, r *wire.FetchRequest, targets []fetchTarget) map[string]bool {
	if s.authz == nil {
		return nil
	}
	var denied map[string]bool
	cluster := r.ReplicaId < 0 || s.allowedCluster(req, security.OpClusterAction)
	for _, t := range targets {
		if _, seen := denied[t.topic]; seen {
			continue
		}
		ok := cluster && (r.ReplicaId >= 0 || s.allowed(req, security.OpRead, security.ResourceTopic, t.topic))
		if !ok {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[t.topic] = true
		}
	}
	return denied
}
