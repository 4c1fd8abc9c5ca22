package spool

import (
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// decodeConsumerAssignment reads a consumer protocol Assignment (the bytes a group leader
// hands each member in SyncGroup, which DescribeGroups shows): version int16, then topics
// [name string, partitions [int32]] and user data bytes, the same layout in versions 0-3. A
// newer version is read the same way, as Kafka does, since fields are only ever appended.
// Empty bytes, which a group shows while it rebalances, are an empty assignment.
func decodeConsumerAssignment(b []byte) (map[string][]int32, error) {
	out := map[string][]int32{}
	if len(b) == 0 {
		return out, nil
	}
	r := wire.NewReader(b)
	if v := r.Int16(); v < 0 && r.Err() == nil {
		return nil, fmt.Errorf("consumer protocol assignment: negative version %d", v)
	}
	// A topic takes at least 6 bytes (empty name, empty partition array), a partition 4.
	n := r.ArrayLen(false, false, 6)
	for i := 0; i < n && r.Err() == nil; i++ {
		topic := r.String(false)
		np := r.ArrayLen(false, false, 4)
		ps := make([]int32, 0, max(np, 0))
		for j := 0; j < np && r.Err() == nil; j++ {
			ps = append(ps, r.Int32())
		}
		out[topic] = append(out[topic], ps...)
	}
	r.NullableBytes(false)
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("consumer protocol assignment: %w", err)
	}
	return out, nil
}
