package server

// ListOffsets (key 2), versions 1-6; flexible from 6.
//
// Per partition: timestamp -2 gives the log start offset, -1 the end a consumer can read: the
// high watermark, or with IsolationLevel 1 (read_committed, v2+) the last stable offset; any other
// timestamp the first offset whose batch's max timestamp is at or after it, found through the
// time index, or offset -1 when no such record exists. Leader epoch (v4+) is this partition's
// epoch. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION; other negative timestamps (-3 max
// timestamp and beyond) need versions above the window, UNSUPPORTED_VERSION; a partition
// listed twice gets INVALID_REQUEST (SPEC.md §8.3). A client's (replica id -1) latest, or
// timestamp lookup found nothing for, from a leader elected moments ago whose high watermark
// has not reached the start of its leadership gets OFFSET_NOT_AVAILABLE (v5+;
// LEADER_NOT_AVAILABLE below), retriable: that high watermark may still trail what the previous
// leader showed (KIP-207, replication.OffsetsAvailable).
//
// Authorization (with authorizer.class.name set): Describe on the topic, else
// TOPIC_AUTHORIZATION_FAILED for each of its partitions.

import (
	"context"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Special ListOffsets timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
)

func handleListOffsets(s *Server, _ context.Context, req *request) *pending {
	r := req.msg.(*wire.ListOffsetsRequest)
	resp := &wire.ListOffsetsResponse{}
	resp.Default()
	type topicPartition struct {
		topic string
		index int32
	}
	listed := map[topicPartition]int{}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			listed[topicPartition{rt.Name, rp.PartitionIndex}]++
		}
	}
	for _, rt := range r.Topics {
		tr := wire.ListOffsetsResponseTopicResponse{Name: rt.Name}
		describe := s.allowed(req, security.OpDescribe, security.ResourceTopic, rt.Name)
		for _, rp := range rt.Partitions {
			var pr wire.ListOffsetsResponsePartitionResponse
			pr.Default()
			pr.PartitionIndex = rp.PartitionIndex
			if !describe {
				pr.ErrorCode = wire.ErrTopicAuthorizationFailed.Code
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			if listed[topicPartition{rt.Name, rp.PartitionIndex}] > 1 {
				pr.ErrorCode = wire.ErrInvalidRequest.Code
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			if rp.Timestamp < earliestTimestamp {
				pr.ErrorCode = wire.ErrUnsupportedVersion.Code
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			part, err := s.leaderPart(rt.Name, rp.PartitionIndex)
			if err == nil {
				err = checkLeaderEpoch(part, rp.CurrentLeaderEpoch)
			}
			if err != nil {
				pr.ErrorCode = errCode(err)
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			pr.LeaderEpoch = part.LeaderEpoch()
			// KIP-207: a leader elected moments ago whose high watermark has not reached the
			// start of its leadership cannot say where the log ends to a client.
			lagging := r.ReplicaId < 0 && !part.OffsetsAvailable()
			switch rp.Timestamp {
			case latestTimestamp:
				if lagging {
					pr.ErrorCode = offsetNotAvailable(req.version)
					break
				}
				o := part.Offsets()
				pr.Offset = o.HighWatermark
				if r.IsolationLevel == 1 {
					pr.Offset = o.LastStable
				}
			case earliestTimestamp:
				pr.Offset = part.Offsets().LogStart
			default:
				off, ts, ok, err := part.OffsetForTimestamp(rp.Timestamp)
				switch {
				case err != nil:
					pr.ErrorCode = errCode(storageError(err))
				case ok:
					pr.Offset, pr.Timestamp = off, ts
				case lagging:
					// Not found below the high watermark, which may still rise to cover it.
					pr.ErrorCode = offsetNotAvailable(req.version)
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return ready(reply{msg: resp})
}

// offsetNotAvailable is the error for offsets a new leader cannot serve yet: OFFSET_NOT_AVAILABLE
// from version 5, LEADER_NOT_AVAILABLE before it (both retriable), as Kafka answers.
func offsetNotAvailable(version int16) int16 {
	if version >= 5 {
		return wire.ErrOffsetNotAvailable.Code
	}
	return wire.ErrLeaderNotAvailable.Code
}
