package main

// --json output: one JSON document per command, on one line, with the field names below. They
// are part of the CLI's interface (README, "JSON output"): fields are added, never renamed or
// removed. Unknown numbers (a lag that cannot be read) are null.

import (
	"encoding/json"
	"fmt"
	"io"

	spool "github.com/spoolmq/spool/sdk-go"
)

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// topicJSON is one topic of topic list (without partitions' details) and topic describe.
type topicJSON struct {
	Name              string            `json:"name"`
	PartitionCount    int               `json:"partition_count"`
	ReplicationFactor int               `json:"replication_factor"`
	Partitions        []partitionJSON   `json:"partitions,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
}

type partitionJSON struct {
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	LogStartOffset int64   `json:"log_start_offset"`
	HighWatermark  int64   `json:"high_watermark"`
	Size           int64   `json:"size"` // bytes of the leader's log segments (DescribeLogDirs); -1 unknown
}

// groupJSON is one group of group list.
type groupJSON struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
	Members      *int   `json:"members"`
	Lag          *int64 `json:"lag"`
}

type groupMemberJSON struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"`
}

type groupOffsetJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed *int64 `json:"committed"`
	End       *int64 `json:"end"`
	Lag       *int64 `json:"lag"`
	MemberID  string `json:"member_id,omitempty"`
}

type groupDescribeJSON struct {
	Group        string            `json:"group"`
	State        string            `json:"state"`
	ProtocolType string            `json:"protocol_type"`
	Protocol     string            `json:"protocol"`
	Members      []groupMemberJSON `json:"members"`
	Offsets      []groupOffsetJSON `json:"offsets"`
}

// known is n, or nil when it is negative (unknown).
func known(n int64) *int64 {
	if n < 0 {
		return nil
	}
	return &n
}

func groupDescriptionJSON(d spool.GroupDescription, lag []spool.PartitionLag) groupDescribeJSON {
	out := groupDescribeJSON{Group: d.GroupID, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Members: []groupMemberJSON{}, Offsets: []groupOffsetJSON{}}
	for _, m := range d.Members {
		a := m.Assignment
		if a == nil {
			a = map[string][]int32{}
		}
		out.Members = append(out.Members, groupMemberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: a})
	}
	for _, l := range lag {
		out.Offsets = append(out.Offsets, groupOffsetJSON{Topic: l.Topic, Partition: l.Partition, Committed: known(l.Committed),
			End: known(l.End), Lag: known(l.Lag), MemberID: l.MemberID})
	}
	return out
}

type brokerJSON struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack"`
}

type clusterJSON struct {
	ClusterID  string       `json:"cluster_id"`
	Controller int32        `json:"controller"`
	Brokers    []brokerJSON `json:"brokers"`
}

type configJSON struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive"`
}

type brokerConfigsJSON struct {
	Broker  int64        `json:"broker"`
	Configs []configJSON `json:"configs"`
}

// recordJSON is one record of consume --json: key and value as strings (null when null).
type recordJSON struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []headerJSON `json:"headers"`
}

type headerJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func nullableString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func recordToJSON(r *spool.Record) recordJSON {
	out := recordJSON{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: nullableString(r.Key), Value: nullableString(r.Value), Headers: []headerJSON{}}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, headerJSON{Key: string(h.Key), Value: string(h.Value)})
	}
	return out
}
