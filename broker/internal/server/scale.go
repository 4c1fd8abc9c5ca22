package server

// Staying up at scale (issue 28): a replica whose log cannot be opened, or that cannot take
// its state, is offline, reported (a log line when the set grows, a gauge) and retried by every
// reconcile; running out of descriptors slows accepting (listener.go), never stops the broker.
// With thousands of partitions per broker, info logs summarize a reconcile pass; the line per
// partition is at debug.

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/spoolmq/spool/broker/internal/metrics"
)

// scaleState is the server's bookkeeping of offline replicas and accept retries.
type scaleState struct {
	offline  map[topicPartition]error // guarded by reconcileMu
	nOffline atomic.Int64

	acceptRetries atomic.Int64 // accept errors retried after a pause (EMFILE, ECONNABORTED...)
	acceptLogged  atomic.Int64 // unix nanos of the last accept-retry log line
}

// noteOffline takes the replicas that failed in a reconcile pass (nil: none), logs the change
// in one line each way, and returns the first error of a replica that was not offline before
// (nil when nothing new failed), so that callers see a new failure once.
func (s *Server) noteOffline(failed map[topicPartition]error) error {
	st := &s.scale
	var newErr error
	var newTP topicPartition
	added, recovered := 0, 0
	for tp, err := range failed {
		if _, ok := st.offline[tp]; ok {
			continue
		}
		added++
		s.log.Debug("replica offline", "topic", tp.topic, "partition", tp.partition, "err", err)
		if newErr == nil {
			newErr, newTP = err, tp
		}
	}
	for tp := range st.offline {
		if _, ok := failed[tp]; !ok {
			recovered++
			s.log.Debug("replica online", "topic", tp.topic, "partition", tp.partition)
		}
	}
	st.offline = failed
	st.nOffline.Store(int64(len(failed)))
	if added > 0 {
		s.log.Error("replicas offline: their logs cannot be opened or take their state (retried on each reconcile)",
			"offline", len(failed), "new", added, "topic", newTP.topic, "partition", newTP.partition, "err", newErr)
	}
	if recovered > 0 {
		s.log.Info("replicas back online (or no longer assigned here)", "count", recovered, "offline", len(failed))
	}
	return newErr
}

// roleChanges counts the role changes of a reconcile pass for its summary line.
type roleChanges struct {
	leading, following, stopped int
	topics                      map[string]struct{}
	last                        []slog.Attr // the change, when it is the only one
}

// add counts a change (n is one of the counters) and logs it at debug.
func (rc *roleChanges) add(l *slog.Logger, n *int, msg, topic string, partition, leader, epoch int32) {
	*n++
	if rc.topics == nil {
		rc.topics = map[string]struct{}{}
	}
	rc.topics[topic] = struct{}{}
	rc.last = []slog.Attr{slog.String("msg", msg), slog.String("topic", topic), slog.Int("partition", int(partition)),
		slog.Int("leader", int(leader)), slog.Int("leader_epoch", int(epoch))}
	l.LogAttrs(context.Background(), slog.LevelDebug, msg, rc.last[1:]...)
}

// log writes the pass's one info line (clustered brokers only: a single node leads
// everything): the change itself when there was one, else the counts.
func (rc *roleChanges) log(l *slog.Logger, clustered bool) {
	total := rc.leading + rc.following + rc.stopped
	if !clustered || total == 0 {
		return
	}
	if total == 1 {
		l.LogAttrs(context.Background(), slog.LevelInfo, rc.last[0].Value.String(), rc.last[1:]...)
		return
	}
	l.LogAttrs(context.Background(), slog.LevelInfo, "replica roles changed",
		slog.Int("leading", rc.leading), slog.Int("following", rc.following), slog.Int("stopped", rc.stopped),
		slog.Int("topics", len(rc.topics)))
}

// scaleStats feeds the scale instruments.
func (s *Server) scaleStats() metrics.ScaleStats {
	return metrics.ScaleStats{OfflineReplicas: s.scale.nOffline.Load(), AcceptRetries: s.scale.acceptRetries.Load()}
}
