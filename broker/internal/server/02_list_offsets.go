package server

// ListOffsets (key 2), versions 1-6; flexible from 6.
//
// Per partition: timestamp -2 gives the log start offset, -1 the end a consumer can read: the
// high watermark, or with IsolationLevel 1 (read_committed, v2+) the last stable offset; any other
// timestamp the first offset whose batch's max timestamp is at or after it, found through the
// time index, or offset -1 when no such record exists. Leader epoch (v4+) is this partition's
// epoch. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION; other negative timestamps (-3 max
// timestamp and beyond) need versions above the window, UNSUPPORTED_VERSION; a partition
// listed twice gets INVALID_REQUEST (SPEC.md §8.3).
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
			switch rp.Timestamp {
			case latestTimestamp:
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
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return ready(reply{msg: resp})
}
