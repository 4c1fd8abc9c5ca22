package server

// ListOffsets (key 2), versions 1-6; flexible from 6.
//
// Per partition: timestamp -2 gives the log start offset, -1 the high watermark (the end a
// consumer can read; with no transactions it is also the last stable offset), any other
// timestamp the first offset whose batch's max timestamp is at or after it, found through the
// time index, or offset -1 when no such record exists. Leader epoch (v4+) is this partition's
// epoch. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

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
	for _, rt := range r.Topics {
		tr := wire.ListOffsetsResponseTopicResponse{Name: rt.Name}
		for _, rp := range rt.Partitions {
			var pr wire.ListOffsetsResponsePartitionResponse
			pr.Default()
			pr.PartitionIndex = rp.PartitionIndex
			part, err := s.leaderPart(rt.Name, rp.PartitionIndex)
			if err != nil {
				pr.ErrorCode = errCode(err)
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			_, pr.LeaderEpoch = part.replica.Leader()
			switch rp.Timestamp {
			case latestTimestamp:
				pr.Offset = s.highWatermark(part)
			case earliestTimestamp:
				pr.Offset = part.log.LogStartOffset()
			default:
				off, ts, ok, err := part.log.OffsetForTimestamp(rp.Timestamp)
				switch {
				case err != nil:
					pr.ErrorCode = errCode(storageError(err))
				case ok && off < s.highWatermark(part):
					pr.Offset, pr.Timestamp = off, ts
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return ready(reply{msg: resp})
}
