package server

import (
	"context"
	"errors"
	"testing"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestLeaderPartErrors: a partition that exists in the metadata but is not led here answers
// NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata and finds the leader); only a
// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION. The existence check reads the
// metadata image.
func TestLeaderPartErrors(t *testing.T) {
	md, err := cluster.OpenEmbedded(t.TempDir(), cluster.Broker{NodeID: 1, Host: "127.0.0.1", Port: 9092})
	if err != nil {
		t.Fatal(err)
	}
	defer md.Close()
	s := &Server{md: md, images: cluster.NewImages(md), parts: partition.NewManager()}
	s.images.Current() // an image from before the topic exists: the creation must reach it
	if _, err := md.CreateTopic(context.Background(), "t", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule  string
		topic string
		index int32
		want  *wire.Error
	}{
		{"an existing partition with no local replica leading it", "t", 1, wire.ErrNotLeaderOrFollower},
		{"a partition index past the topic's partitions", "t", 2, wire.ErrUnknownTopicOrPartition},
		{"a negative partition index", "t", -1, wire.ErrUnknownTopicOrPartition},
		{"a topic that does not exist", "nope", 0, wire.ErrUnknownTopicOrPartition},
	} {
		if _, err := s.leaderPart(c.topic, c.index); !errors.Is(err, c.want) {
			t.Errorf("%s: %s-%d: %v, want %v", c.rule, c.topic, c.index, err, c.want)
		}
	}
}
