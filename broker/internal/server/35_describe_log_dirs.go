package server

// DescribeLogDirs (key 35), versions 0-4; flexible from 2.
//
// One result for the broker's data directory (log.dirs: Spool has one), holding every
// partition this broker has a replica of (a null topic list) or the partitions asked for; a
// topic or partition not held here is left out, as in Kafka, never an error. Per partition:
// PartitionSize is the bytes of its segment files (indexes excluded, Kafka's Log.size);
// OffsetLag is Kafka's max(high watermark - log end offset, 0), 0 for every healthy replica;
// IsFutureKey is always false (no AlterReplicaLogDirs). v3+ carries a top-level ErrorCode:
// CLUSTER_AUTHORIZATION_FAILED (and no results, in every version) without Describe on the
// cluster when authorizer.class.name is set, else NONE; v4 adds the
// volume's total and usable bytes (statfs), -1 when they cannot be read. Runs on the
// connection's reader goroutine; every value is an atomic snapshot, so no lock is held across
// the reply.

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleDescribeLogDirs(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.DescribeLogDirsRequest)
	resp := &wire.DescribeLogDirsResponse{}
	resp.Default()
	if !s.allowedCluster(req, security.OpDescribe) {
		// Kafka: no results, and from v3 the top-level error.
		resp.ErrorCode = wire.ErrClusterAuthorizationFailed.Code
		resp.Results = []wire.DescribeLogDirsResponseResult{}
		return ready(reply{msg: resp})
	}
	dir := s.logs.Dir()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	var res wire.DescribeLogDirsResponseResult
	res.Default()
	res.LogDir = dir
	if total, usable, err := s.logs.VolumeSpace(); err == nil {
		res.TotalBytes, res.UsableBytes = total, usable
	} else {
		s.log.Debug("reading the data directory's volume space", "err", err)
	}
	res.Topics = s.logDirTopics(logDirFilter(r))
	resp.Results = []wire.DescribeLogDirsResponseResult{res}
	return ready(reply{msg: resp})
}

// logDirFilter says whether a partition was asked for.
func logDirFilter(r *wire.DescribeLogDirsRequest) func(topic string, index int32) bool {
	if r.Topics == nil {
		return func(string, int32) bool { return true }
	}
	want := map[topicPartition]bool{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			want[topicPartition{t.Topic, p}] = true
		}
	}
	return func(topic string, index int32) bool { return want[topicPartition{topic, index}] }
}

// logDirTopics describes the local replicas wanted, by topic then partition.
func (s *Server) logDirTopics(wanted func(topic string, index int32) bool) []wire.DescribeLogDirsResponseTopic {
	parts := s.parts.All()
	slices.SortFunc(parts, func(a, b *partition.Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
	})
	var out []wire.DescribeLogDirsResponseTopic
	for _, p := range parts {
		if !wanted(p.Topic, p.Index) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != p.Topic {
			out = append(out, wire.DescribeLogDirsResponseTopic{Name: p.Topic})
		}
		t := &out[len(out)-1]
		t.Partitions = append(t.Partitions, wire.DescribeLogDirsResponsePartition{
			PartitionIndex: p.Index,
			PartitionSize:  p.Size(),
			OffsetLag:      max(s.highWatermark(p)-p.Offsets().LogEnd, 0),
		})
	}
	return out
}
