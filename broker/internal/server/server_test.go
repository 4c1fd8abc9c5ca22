package server_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

func TestApiVersionsAdvertisesTheWindow(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	for v := int16(0); v <= 4; v++ {
		req := &wire.ApiVersionsRequest{ClientSoftwareName: "spool-test", ClientSoftwareVersion: "1"}
		resp := &wire.ApiVersionsResponse{}
		c.roundTrip(req, resp, v)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		// DESIGN.md §3: Produce from 0 (librdkafka compression), FindCoordinator and
		// InitProducerId from 0 (librdkafka groups, LZ4 and idempotence).
		for key, want := range map[int16][2]int16{0: {0, 9}, 1: {4, 12}, 2: {1, 6}, 3: {0, 12}, 10: {0, 3}, 18: {0, 4}, 19: {2, 7}, 20: {1, 6}, 22: {0, 4}, 24: {0, 5}, 25: {0, 4}, 26: {0, 4}, 28: {0, 4}, 32: {1, 4}, 37: {0, 3}, 44: {0, 1}, 60: {0, 1}, 61: {0, 0}, 65: {0, 0}, 66: {0, 1}} {
			if got[key] != want {
				t.Errorf("v%d: key %d advertised %v, want %v", v, key, got[key], want)
			}
		}
		// WriteTxnMarkers (27) is served to brokers only.
		for _, hidden := range []int16{23, 27, 68, 71, 72} {
			if _, ok := got[hidden]; ok {
				t.Errorf("key %d must not be advertised", hidden)
			}
		}
	}
}

func TestApiVersionsTooNewGetsV0ErrorReply(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	// A v99 ApiVersions request (header v2, as a flexible client would send it).
	id := "future"
	h := wire.RequestHeader{RequestApiKey: 18, RequestApiVersion: 99, CorrelationId: 42, ClientId: &id}
	frame := h.AppendTo(make([]byte, 4), 2)
	frame = append(frame, 0, 0, 0) // empty body: names and tags
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	c.writeRaw(frame)
	// The reply is v0: response header v0, then the v0 body.
	resp := &wire.ApiVersionsResponse{}
	if corr := c.recv(resp, 0); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	if resp.ErrorCode != wire.ErrUnsupportedVersion.Code {
		t.Fatalf("error code %d, want 35", resp.ErrorCode)
	}
	if !slices.ContainsFunc(resp.ApiKeys, func(k wire.ApiVersionsResponseApiVersion) bool {
		return k.ApiKey == 18 && k.MinVersion == 0 && k.MaxVersion == 4
	}) {
		t.Fatalf("the error reply does not list ApiVersions 0-4: %+v", resp.ApiKeys)
	}
}

func TestBadRequestsCloseTheConnection(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"socket.request.max.bytes": "4096"})
	frame := func(key, version int16, body []byte) []byte {
		id := "x"
		h := wire.RequestHeader{RequestApiKey: key, RequestApiVersion: version, CorrelationId: 1, ClientId: &id}
		f := h.AppendTo(make([]byte, 4), 1)
		f = append(f, body...)
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
		return f
	}
	cases := map[string][]byte{
		"metadata v13 (above the window)": frame(3, 13, nil),
		"fetch v3 (below the window)":     frame(1, 3, nil),
		"unknown api key":                 frame(999, 0, nil),
		"oversized frame":                 {0, 0, 0x10, 0x01, 0, 3},
		"negative size":                   {0xff, 0xff, 0xff, 0xf0},
		"frame shorter than a header":     {0, 0, 0, 3, 0, 3, 0},
		"truncated body":                  frame(3, 1, []byte{0, 0, 0, 9}),
		"produce v2 (no record batch v2)": func() []byte {
			req := produceRequest("t", 0, 1, nil)
			return frame(0, 2, req.AppendTo(nil, 2))
		}(),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, b.Addr)
			c.writeRaw(raw)
			c.expectClosed()
		})
	}
	// The broker is still healthy after all of that.
	c := dial(t, b.Addr)
	c.roundTrip(&wire.ApiVersionsRequest{}, &wire.ApiVersionsResponse{}, 3)
}

func TestProduceFetchRoundTrip(t *testing.T) {
	parallel(t)
	// Both ways of sending records: sendfile(2), and the pooled read+write path.
	for _, sendfile := range []string{"true", "false"} {
		t.Run("sendfile="+sendfile, func(t *testing.T) { testProduceFetchRoundTrip(t, sendfile) })
	}
}

func testProduceFetchRoundTrip(t *testing.T, sendfile string) {
	b := startBroker(t, map[string]string{"spool.fetch.sendfile": sendfile})
	c := dial(t, b.Addr)
	createTopic(t, c, "events", 2, nil)
	var offsets []int64
	for i := 0; i < 5; i++ {
		pr := produce(t, c, "events", 1, buildBatch(t, 3, nil))
		if pr.ErrorCode != 0 {
			t.Fatalf("produce: %v", wire.ErrorForCode(pr.ErrorCode))
		}
		offsets = append(offsets, pr.BaseOffset)
	}
	if !slices.Equal(offsets, []int64{0, 3, 6, 9, 12}) {
		t.Fatalf("base offsets %v", offsets)
	}
	for _, v := range []int16{4, 10, 11, 12} {
		pd := fetch(t, c, v, fetchRequest("events", 1, 4, 0, 0, 1<<20))
		if pd.ErrorCode != 0 || pd.HighWatermark != 15 || (v >= 5 && pd.LogStartOffset != 0) {
			t.Fatalf("v%d: %+v", v, pd)
		}
		// Offset 4 is inside the second batch: Kafka returns whole batches from there.
		vals := recordValues(t, pd.Records)
		if len(vals) != 12 || vals[0] != "v0" {
			t.Fatalf("v%d: values %v", v, vals)
		}
	}
	// Fetching at the end returns nothing; past it is out of range.
	if pd := fetch(t, c, 12, fetchRequest("events", 1, 15, 0, 0, 1<<20)); pd.ErrorCode != 0 || len(pd.Records) != 0 {
		t.Fatalf("at end: %+v", pd)
	}
	if pd := fetch(t, c, 12, fetchRequest("events", 1, 16, 0, 0, 1<<20)); pd.ErrorCode != wire.ErrOffsetOutOfRange.Code {
		t.Fatalf("past end: error %d", pd.ErrorCode)
	}
}

func TestFetchReturnsTheFirstBatchEvenWhenLarger(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "big", 1, nil)
	produce(t, c, "big", 0, buildBatch(t, 50, nil))
	produce(t, c, "big", 0, buildBatch(t, 50, nil))
	pd := fetch(t, c, 12, fetchRequest("big", 0, 0, 0, 0, 10))
	if vals := recordValues(t, pd.Records); len(vals) != 50 {
		t.Fatalf("got %d records, want exactly the first batch of 50", len(vals))
	}
}

func TestFetchLongPollWakesOnAppend(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "poll", 1, nil)
	consumer := dial(t, b.Addr)
	// A long poll that only a new record can satisfy before its 30 s deadline.
	id := consumer.send(fetchRequest("poll", 0, 0, 30000, 1, 1<<20), 12)
	pr := produce(t, c, "poll", 0, buildBatch(t, 1, nil))
	if pr.ErrorCode != 0 {
		t.Fatal(wire.ErrorForCode(pr.ErrorCode))
	}
	resp := &wire.FetchResponse{}
	if got := consumer.recv(resp, 12); got != id {
		t.Fatalf("correlation %d", got)
	}
	if vals := recordValues(t, resp.Responses[0].Partitions[0].Records); len(vals) != 1 {
		t.Fatalf("long poll returned %v", vals)
	}
}

func TestResponsesKeepRequestOrderAndAcksZeroIsSilent(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "order", 1, nil)
	var ids []int32
	for i := 0; i < 20; i++ {
		if i%3 == 0 {
			c.send(produceRequest("order", 0, 0, buildBatch(t, 1, nil)), 9) // acks=0: no response
			continue
		}
		if i%2 == 0 {
			ids = append(ids, c.send(fetchRequest("order", 0, 0, 0, 0, 1<<20), 12))
		} else {
			ids = append(ids, c.send(&wire.MetadataRequest{}, 12))
		}
	}
	for _, want := range ids {
		b, err := c.frame()
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(b)); got != want {
			t.Fatalf("response for correlation %d arrived when %d was next", got, want)
		}
	}
}

func TestProduceErrorsArePerPartition(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"auto.create.topics.enable": "false", "message.max.bytes": "2000"})
	c := dial(t, b.Addr)
	createTopic(t, c, "p", 1, nil)
	createTopic(t, c, "small-segments", 1, map[string]string{"segment.bytes": "100"})
	good := buildBatch(t, 2, nil)
	corrupt := slices.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	oldMagic := slices.Clone(good)
	oldMagic[16] = 1
	bb := batch.NewBuilder()
	bb.Append(0, nil, bytes.Repeat([]byte("x"), 5000), nil)
	huge, err := bb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	sb := batch.NewBuilder()
	sb.Append(0, nil, bytes.Repeat([]byte("y"), 500), nil)
	overSegment, err := sb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		topic   string
		part    int32
		records []byte
		want    *wire.Error
	}{
		{"bad crc", "p", 0, corrupt, wire.ErrCorruptMessage},
		{"old magic", "p", 0, oldMagic, wire.ErrUnsupportedForMessageFormat},
		{"too large", "p", 0, huge, wire.ErrMessageTooLarge},
		{"larger than segment.bytes", "small-segments", 0, overSegment, wire.ErrRecordListTooLarge},
		{"unknown partition", "p", 7, good, wire.ErrUnknownTopicOrPartition},
		{"unknown topic", "nope", 0, good, wire.ErrUnknownTopicOrPartition},
		{"two batches", "p", 0, append(slices.Clone(good), good...), wire.ErrInvalidRecord},
		{"internal topic", "__consumer_offsets", 0, good, wire.ErrInvalidTopicException},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The failing partition travels with a good one, which must still succeed.
			req := produceRequest("p", 0, -1, good)
			req.TopicData = append(req.TopicData, wire.ProduceRequestTopicProduceData{Name: tc.topic, PartitionData: []wire.ProduceRequestPartitionProduceData{{Index: tc.part, Records: tc.records}}})
			if tc.topic == "p" {
				req.TopicData = req.TopicData[:1]
				req.TopicData[0].PartitionData = append(req.TopicData[0].PartitionData, wire.ProduceRequestPartitionProduceData{Index: tc.part, Records: tc.records})
			}
			resp := &wire.ProduceResponse{}
			c.roundTrip(req, resp, 9)
			var all []wire.ProduceResponsePartitionProduceResponse
			for _, tr := range resp.Responses {
				all = append(all, tr.PartitionResponses...)
			}
			if all[0].ErrorCode != 0 {
				t.Errorf("the good partition failed: %v", wire.ErrorForCode(all[0].ErrorCode))
			}
			if all[1].ErrorCode != tc.want.Code {
				t.Errorf("got %v, want %v", wire.ErrorForCode(all[1].ErrorCode), tc.want)
			}
			if all[1].ErrorMessage == nil || *all[1].ErrorMessage == "" {
				t.Error("no error message in v9")
			}
		})
	}
}

func TestIdempotentProducer(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "idem", 1, nil)
	initResp := &wire.InitProducerIdResponse{}
	c.roundTrip(&wire.InitProducerIdRequest{ProducerId: -1, ProducerEpoch: -1}, initResp, 4)
	if initResp.ErrorCode != 0 || initResp.ProducerId < 0 {
		t.Fatalf("InitProducerId: %+v", initResp)
	}
	pid := initResp.ProducerId
	withSeq := func(seq int32) []byte {
		return buildBatch(t, 2, func(bb *batch.Builder) { bb.SetProducer(pid, 0, seq) })
	}
	first := produce(t, c, "idem", 0, withSeq(0))
	second := produce(t, c, "idem", 0, withSeq(2))
	if first.ErrorCode != 0 || second.ErrorCode != 0 || second.BaseOffset != 2 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	// A retry of the second batch is acknowledged with its original offset, not appended.
	retry := produce(t, c, "idem", 0, withSeq(2))
	if retry.ErrorCode != 0 || retry.BaseOffset != 2 {
		t.Fatalf("retry: %+v", retry)
	}
	// A gap in the sequence is refused.
	if gap := produce(t, c, "idem", 0, withSeq(9)); gap.ErrorCode != wire.ErrOutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %v", wire.ErrorForCode(gap.ErrorCode))
	}
	pd := fetch(t, c, 12, fetchRequest("idem", 0, 0, 0, 0, 1<<20))
	if n := len(recordValues(t, pd.Records)); n != 4 || pd.HighWatermark != 4 {
		t.Fatalf("log holds %d records, hw %d; want 4 (no duplicate)", n, pd.HighWatermark)
	}
	// A second InitProducerId gives a new id.
	again := &wire.InitProducerIdResponse{}
	c.roundTrip(&wire.InitProducerIdRequest{ProducerId: -1, ProducerEpoch: -1}, again, 0)
	if again.ProducerId == pid {
		t.Fatal("producer id reused")
	}
}

func TestListOffsets(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	createTopic(t, c, "lo", 1, nil)
	for _, ts := range []int64{1000, 2000, 3000} {
		bb := batch.NewBuilder()
		bb.Append(ts, nil, []byte("x"), nil)
		rec, err := bb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		produce(t, c, "lo", 0, slices.Clone(rec))
	}
	query := func(v int16, ts int64) wire.ListOffsetsResponsePartitionResponse {
		req := &wire.ListOffsetsRequest{ReplicaId: -1, Topics: []wire.ListOffsetsRequestTopic{{Name: "lo", Partitions: []wire.ListOffsetsRequestPartition{{PartitionIndex: 0, Timestamp: ts, CurrentLeaderEpoch: -1}}}}}
		resp := &wire.ListOffsetsResponse{}
		c.roundTrip(req, resp, v)
		return resp.Topics[0].Partitions[0]
	}
	for _, v := range []int16{1, 2, 5, 6} {
		for ts, want := range map[int64]int64{-2: 0, -1: 3, 1500: 1, 3000: 2, 1: 0, 9999: -1} {
			if got := query(v, ts); got.ErrorCode != 0 || got.Offset != want {
				t.Errorf("v%d ts %d: offset %d (error %d), want %d", v, ts, got.Offset, got.ErrorCode, want)
			}
		}
	}
}

func TestTopicAdmin(t *testing.T) {
	parallel(t)
	b := startBroker(t, map[string]string{"num.partitions": "3"})
	c := dial(t, b.Addr)
	createTopic(t, c, "admin", -1, map[string]string{"retention.ms": "12345"})
	md := &wire.MetadataResponse{}
	name := "admin"
	c.roundTrip(&wire.MetadataRequest{Topics: []wire.MetadataRequestTopic{{Name: &name}}}, md, 12)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 || md.Topics[0].TopicId == (wire.UUID{}) {
		t.Fatalf("metadata: %+v", md.Topics)
	}

	// Duplicate creation and a bad config fail.
	req := &wire.CreateTopicsRequest{Topics: []wire.CreateTopicsRequestCreatableTopic{
		{Name: "admin", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "badcfg", NumPartitions: 1, ReplicationFactor: 1, Configs: []wire.CreateTopicsRequestCreatableTopicConfig{{Name: "retention.ms", Value: ptr("soon")}}},
		{Name: "rf3", NumPartitions: 1, ReplicationFactor: 3},
	}}
	resp := &wire.CreateTopicsResponse{}
	c.roundTrip(req, resp, 7)
	for i, want := range []*wire.Error{wire.ErrTopicAlreadyExists, wire.ErrInvalidConfig, wire.ErrInvalidReplicationFactor} {
		if resp.Topics[i].ErrorCode != want.Code {
			t.Errorf("topic %s: %v, want %v", resp.Topics[i].Name, wire.ErrorForCode(resp.Topics[i].ErrorCode), want)
		}
	}

	// DescribeConfigs shows the override with source TOPIC_CONFIG and defaults as DEFAULT_CONFIG.
	describe := func() map[string]wire.DescribeConfigsResponseResourceResult {
		dreq := &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 2, ResourceName: "admin"}}, IncludeSynonyms: true}
		dresp := &wire.DescribeConfigsResponse{}
		c.roundTrip(dreq, dresp, 4)
		if dresp.Results[0].ErrorCode != 0 {
			t.Fatalf("describe: %v", wire.ErrorForCode(dresp.Results[0].ErrorCode))
		}
		out := map[string]wire.DescribeConfigsResponseResourceResult{}
		for _, e := range dresp.Results[0].Configs {
			out[e.Name] = e
		}
		return out
	}
	cfg := describe()
	if e := cfg["retention.ms"]; *e.Value != "12345" || e.ConfigSource != 1 || len(e.Synonyms) != 2 {
		t.Errorf("retention.ms: %+v", e)
	}
	if e := cfg["cleanup.policy"]; *e.Value != "delete" || e.ConfigSource != 5 {
		t.Errorf("cleanup.policy: %+v", e)
	}

	// IncrementalAlterConfigs: set, append to a list, delete back to the default.
	alter := func(ops ...wire.IncrementalAlterConfigsRequestAlterableConfig) int16 {
		areq := &wire.IncrementalAlterConfigsRequest{Resources: []wire.IncrementalAlterConfigsRequestAlterConfigsResource{{ResourceType: 2, ResourceName: "admin", Configs: ops}}}
		aresp := &wire.IncrementalAlterConfigsResponse{}
		c.roundTrip(areq, aresp, 1)
		return aresp.Responses[0].ErrorCode
	}
	if code := alter(wire.IncrementalAlterConfigsRequestAlterableConfig{Name: "cleanup.policy", ConfigOperation: 2, Value: ptr("compact")},
		wire.IncrementalAlterConfigsRequestAlterableConfig{Name: "retention.ms", ConfigOperation: 1}); code != 0 {
		t.Fatalf("alter: %v", wire.ErrorForCode(code))
	}
	cfg = describe()
	if e := cfg["cleanup.policy"]; *e.Value != "delete,compact" || e.ConfigSource != 1 {
		t.Errorf("after append: %+v", e)
	}
	if e := cfg["retention.ms"]; *e.Value != "604800000" || e.ConfigSource != 5 {
		t.Errorf("after delete: %+v", e)
	}
	if code := alter(wire.IncrementalAlterConfigsRequestAlterableConfig{Name: "segment.bytes", ConfigOperation: 0, Value: ptr("1")}); code != wire.ErrInvalidConfig.Code {
		t.Errorf("bad value accepted: %d", code)
	}

	// CreatePartitions grows; shrinking fails.
	cp := &wire.CreatePartitionsResponse{}
	c.roundTrip(&wire.CreatePartitionsRequest{Topics: []wire.CreatePartitionsRequestTopic{{Name: "admin", Count: 5}, {Name: "admin2", Count: 2}}}, cp, 3)
	if cp.Results[0].ErrorCode != 0 || cp.Results[1].ErrorCode != wire.ErrUnknownTopicOrPartition.Code {
		t.Fatalf("create partitions: %+v", cp.Results)
	}
	if pr := produce(t, c, "admin", 4, buildBatch(t, 1, nil)); pr.ErrorCode != 0 {
		t.Fatalf("producing to a new partition: %v", wire.ErrorForCode(pr.ErrorCode))
	}

	// DescribeCluster names this broker.
	dc := &wire.DescribeClusterResponse{}
	c.roundTrip(&wire.DescribeClusterRequest{EndpointType: 1}, dc, 1)
	if dc.ErrorCode != 0 || len(dc.Brokers) != 1 || fmt.Sprintf("%s:%d", dc.Brokers[0].Host, dc.Brokers[0].Port) != b.Addr {
		t.Fatalf("describe cluster: %+v", dc)
	}

	// DeleteTopics removes the topic and its data.
	del := &wire.DeleteTopicsResponse{}
	c.roundTrip(&wire.DeleteTopicsRequest{TopicNames: []string{"admin", "ghost"}}, del, 5)
	if del.Responses[0].ErrorCode != 0 || del.Responses[1].ErrorCode != wire.ErrUnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", del.Responses)
	}
	md = &wire.MetadataResponse{}
	c.roundTrip(&wire.MetadataRequest{Topics: nil}, md, 12)
	for _, mt := range md.Topics {
		if *mt.Name == "admin" {
			t.Fatal("deleted topic still listed")
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestShutdownDoesNotWaitForIdleClients: a clean stop must not wait for clients to hang up.
func TestShutdownDoesNotWaitForIdleClients(t *testing.T) {
	parallel(t)
	b := startBroker(t, nil)
	c := dial(t, b.Addr)
	c.roundTrip(&wire.ApiVersionsRequest{}, &wire.ApiVersionsResponse{}, 3)
	stopped := make(chan struct{})
	go func() {
		b.Stop(t)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second): // connections.max.idle.ms is 10 minutes
		t.Fatal("the broker did not stop while a client connection was idle")
	}
	c.expectClosed()
}
