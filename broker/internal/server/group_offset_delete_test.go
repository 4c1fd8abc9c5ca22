package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// subscription is a consumer protocol subscription v0 naming topics (no user data).
func subscription(topics ...string) []byte {
	s := wire.ConsumerProtocolSubscription{Topics: topics}
	return s.AppendVersioned(nil, 0)
}

func offsetDelete(c *rawClient, g string, parts map[string][]int32) *wire.OffsetDeleteResponse {
	c.t.Helper()
	r := &wire.OffsetDeleteRequest{GroupId: g}
	for t, ps := range parts {
		rt := wire.OffsetDeleteRequestTopic{Name: t}
		for _, p := range ps {
			rt.Partitions = append(rt.Partitions, wire.OffsetDeleteRequestPartition{PartitionIndex: p})
		}
		r.Topics = append(r.Topics, rt)
	}
	resp := &wire.OffsetDeleteResponse{}
	c.roundTrip(r, resp, 0)
	return resp
}

// deleteCodes flattens an answer to "topic/partition" → code.
func deleteCodes(t *testing.T, r *wire.OffsetDeleteResponse) map[string]int16 {
	t.Helper()
	if r.ErrorCode != 0 {
		t.Fatalf("offset delete: group error %v", wire.ErrorForCode(r.ErrorCode))
	}
	out := map[string]int16{}
	for _, tp := range r.Topics {
		for _, p := range tp.Partitions {
			out[fmt.Sprintf("%s/%d", tp.Name, p.PartitionIndex)] = p.ErrorCode
		}
	}
	return out
}

// committed returns the committed offset of group g on topic/partition (-1: none). A broker
// that just started answers COORDINATOR_LOAD_IN_PROGRESS while it loads __consumer_offsets;
// the fetch is retried then, as clients do.
func committed(c *rawClient, g, topic string, partition int32) int64 {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fr := &wire.OffsetFetchResponse{}
		c.roundTrip(&wire.OffsetFetchRequest{GroupId: g, Topics: []wire.OffsetFetchRequestTopic{{Name: topic, PartitionIndexes: []int32{partition}}}}, fr, 7)
		if fr.ErrorCode == wire.ErrCoordinatorLoadInProgress.Code && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			c.t.Fatalf("offset fetch of %s %s/%d: %v %+v", g, topic, partition, wire.ErrorForCode(fr.ErrorCode), fr)
		}
		return fr.Topics[0].Partitions[0].CommittedOffset
	}
}

func TestOffsetDelete(t *testing.T) {
	parallel(t)
	b := startBroker(t, noDelay())
	c := dial(t, b.Addr)
	createTopic(t, c, "t", 3, nil)
	createTopic(t, c, "u", 1, nil)

	// Advertised at v0 only.
	av := &wire.ApiVersionsResponse{}
	c.roundTrip(&wire.ApiVersionsRequest{ClientSoftwareName: "spool-test", ClientSoftwareVersion: "1"}, av, 3)
	found := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == wire.KeyOffsetDelete {
			found = k.MinVersion == 0 && k.MaxVersion == 0
		}
	}
	if !found {
		t.Fatal("OffsetDelete v0 is not advertised")
	}

	// Group-level errors: the top-level code, no topics.
	for g, want := range map[string]*wire.Error{"": wire.ErrInvalidGroupId, "nobody": wire.ErrGroupIdNotFound} {
		r := offsetDelete(c, g, map[string][]int32{"t": {0}})
		if r.ErrorCode != want.Code || len(r.Topics) != 0 {
			t.Fatalf("group %q: %v with %d topics, want %v and none", g, wire.ErrorForCode(r.ErrorCode), len(r.Topics), want)
		}
	}

	// An Empty group (standalone commits) may drop any partition; missing partitions are
	// UNKNOWN_TOPIC_OR_PARTITION and one without a commit is simply NONE.
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"t", 0}, {"t", 1}, {"u", 0}} {
		wantCode(t, "standalone commit", commitOne(c, "solo", "", -1, tp.topic, tp.p, 10+int64(tp.p)), nil)
	}
	got := deleteCodes(t, offsetDelete(c, "solo", map[string][]int32{"t": {0, 2, 9}, "nope": {0}}))
	want := map[string]int16{"t/0": 0, "t/2": 0, "t/9": wire.ErrUnknownTopicOrPartition.Code, "nope/0": wire.ErrUnknownTopicOrPartition.Code}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v, want %v", k, wire.ErrorForCode(got[k]), wire.ErrorForCode(w))
		}
	}
	if o := committed(c, "solo", "t", 0); o != -1 {
		t.Fatalf("t/0 still committed at %d after delete", o)
	}
	if o := committed(c, "solo", "t", 1); o != 11 {
		t.Fatalf("t/1 committed at %d, want 11 (not deleted)", o)
	}

	// An active consumer group subscribed to "t": t is protected, u is not.
	jr := joinReq("active", "", "range")
	jr.Protocols[0].Metadata = subscription("t")
	j := joinNew(c, jr, 5)
	wantCode(t, "join", j.ErrorCode, nil)
	sr := &wire.SyncGroupResponse{}
	c.roundTrip(syncReq("active", j.MemberId, j.GenerationId, nil), sr, 5)
	wantCode(t, "sync", sr.ErrorCode, nil)
	wantCode(t, "member commit t", commitOne(c, "active", j.MemberId, j.GenerationId, "t", 0, 5), nil)
	wantCode(t, "member commit u", commitOne(c, "active", j.MemberId, j.GenerationId, "u", 0, 6), nil)
	got = deleteCodes(t, offsetDelete(c, "active", map[string][]int32{"t": {0}, "u": {0}}))
	if got["t/0"] != wire.ErrGroupSubscribedToTopic.Code || got["u/0"] != 0 {
		t.Fatalf("active group: %v", got)
	}
	if committed(c, "active", "t", 0) != 5 || committed(c, "active", "u", 0) != -1 {
		t.Fatal("active group: wrong offsets survived the delete")
	}

	// A subscription that does not decode: every topic counts as subscribed, as in Kafka.
	jb := joinReq("opaque", "", "range")
	j = joinNew(c, jb, 5)
	c.roundTrip(syncReq("opaque", j.MemberId, j.GenerationId, nil), sr, 5)
	wantCode(t, "opaque sync", sr.ErrorCode, nil)
	got = deleteCodes(t, offsetDelete(c, "opaque", map[string][]int32{"u": {0}}))
	if got["u/0"] != wire.ErrGroupSubscribedToTopic.Code {
		t.Fatalf("undecodable subscription: %v", got)
	}

	// An active group of another protocol type: NON_EMPTY_GROUP for the whole request.
	jc := joinReq("connect", "", "sessioned")
	jc.ProtocolType = "connect"
	j = joinNew(c, jc, 5)
	wantCode(t, "connect join", j.ErrorCode, nil)
	if r := offsetDelete(c, "connect", map[string][]int32{"u": {0}}); r.ErrorCode != wire.ErrNonEmptyGroup.Code {
		t.Fatalf("non-consumer group: %v", wire.ErrorForCode(r.ErrorCode))
	}

	// The deletions are tombstones in __consumer_offsets: a restart keeps them deleted.
	b.Stop(t)
	b2 := brokertest.Start(t, brokertest.Options{DataDir: b.DataDir, Props: noDelay()})
	c2 := dial(t, b2.Addr)
	for _, k := range []struct {
		g, topic string
		p        int32
		want     int64
	}{{"solo", "t", 0, -1}, {"solo", "t", 1, 11}, {"solo", "t", 2, -1}, {"solo", "u", 0, 10}, {"active", "t", 0, 5}, {"active", "u", 0, -1}} {
		if o := committed(c2, k.g, k.topic, k.p); o != k.want {
			t.Errorf("after restart %s %s/%d: %d, want %d", k.g, k.topic, k.p, o, k.want)
		}
	}
}
