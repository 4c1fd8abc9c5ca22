package server_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/spoolmq/spool/broker/brokertest"
	"github.com/spoolmq/spool/protocol-spec/wire"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// rawClient speaks the protocol with our codec over one connection, so tests can assert
// exactly what goes over the wire.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	corr int32
}

func dial(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c}
}

// send writes one request and returns its correlation id.
func (c *rawClient) send(msg wire.Message, version int16) int32 {
	c.t.Helper()
	api := wire.LookupAPI(msg.APIKey())
	c.corr++
	id := "test"
	h := wire.RequestHeader{RequestApiKey: msg.APIKey(), RequestApiVersion: version, CorrelationId: c.corr, ClientId: &id}
	b := h.AppendTo(make([]byte, 4, 256), api.RequestHeaderVersion(version))
	b = msg.AppendTo(b, version)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.writeRaw(b)
	return c.corr
}

func (c *rawClient) writeRaw(b []byte) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// frame reads one response frame.
func (c *rawClient) frame() ([]byte, error) {
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.conn, b)
	return b, err
}

// recv reads a response into msg and returns its correlation id.
func (c *rawClient) recv(msg wire.Message, version int16) int32 {
	c.t.Helper()
	b, err := c.frame()
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	api := wire.LookupAPI(msg.APIKey())
	r := wire.NewReader(b)
	var h wire.ResponseHeader
	h.ReadFrom(r, api.ResponseHeaderVersion(version))
	msg.ReadFrom(r, version)
	if r.Err() != nil {
		c.t.Fatalf("decoding %s v%d response: %v", api.Name, version, r.Err())
	}
	return h.CorrelationId
}

// roundTrip sends a request and decodes its response.
func (c *rawClient) roundTrip(req wire.Message, resp wire.Message, version int16) {
	c.t.Helper()
	id := c.send(req, version)
	if got := c.recv(resp, version); got != id {
		c.t.Fatalf("correlation id %d, want %d", got, id)
	}
}

// expectClosed asserts the broker closes the connection without answering.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	b, err := c.frame()
	if err == nil {
		c.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatalf("connection still open after 10s")
		}
	}
}

func startBroker(t *testing.T, props map[string]string) *brokertest.Broker {
	return brokertest.Start(t, brokertest.Options{Props: props})
}

func createTopic(t *testing.T, c *rawClient, name string, partitions int32, configs map[string]string) {
	t.Helper()
	req := &wire.CreateTopicsRequest{}
	req.Default()
	ct := wire.CreateTopicsRequestCreatableTopic{Name: name, NumPartitions: partitions, ReplicationFactor: 1}
	for k, v := range configs {
		ct.Configs = append(ct.Configs, wire.CreateTopicsRequestCreatableTopicConfig{Name: k, Value: &v})
	}
	req.Topics = []wire.CreateTopicsRequestCreatableTopic{ct}
	resp := &wire.CreateTopicsResponse{}
	c.roundTrip(req, resp, 7)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating %s: %v", name, wire.ErrorForCode(code))
	}
}

// buildBatch returns one record batch of n records "v0".."vN-1".
func buildBatch(t *testing.T, n int, configure func(*batch.Builder)) []byte {
	t.Helper()
	bb := batch.NewBuilder()
	if configure != nil {
		configure(bb)
	}
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		bb.Append(now, []byte{byte('k'), byte('0' + i%10)}, []byte{byte('v'), byte('0' + i%10)}, nil)
	}
	b, err := bb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

func produceRequest(topic string, partition int32, acks int16, records []byte) *wire.ProduceRequest {
	req := &wire.ProduceRequest{}
	req.Default()
	req.Acks, req.TimeoutMs = acks, 10000
	req.TopicData = []wire.ProduceRequestTopicProduceData{{Name: topic, PartitionData: []wire.ProduceRequestPartitionProduceData{{Index: partition, Records: records}}}}
	return req
}

func produce(t *testing.T, c *rawClient, topic string, partition int32, records []byte) wire.ProduceResponsePartitionProduceResponse {
	t.Helper()
	resp := &wire.ProduceResponse{}
	c.roundTrip(produceRequest(topic, partition, -1, records), resp, 9)
	return resp.Responses[0].PartitionResponses[0]
}

func fetchRequest(topic string, partition int32, offset int64, maxWaitMs, minBytes, maxBytes int32) *wire.FetchRequest {
	req := &wire.FetchRequest{}
	req.Default()
	req.MaxWaitMs, req.MinBytes, req.MaxBytes = maxWaitMs, minBytes, maxBytes
	req.Topics = []wire.FetchRequestTopic{{Topic: topic, Partitions: []wire.FetchRequestPartition{{Partition: partition, FetchOffset: offset, PartitionMaxBytes: maxBytes, LogStartOffset: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}}}
	return req
}

func fetch(t *testing.T, c *rawClient, version int16, req *wire.FetchRequest) wire.FetchResponsePartitionData {
	t.Helper()
	resp := &wire.FetchResponse{}
	c.roundTrip(req, resp, version)
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: %v", wire.ErrorForCode(resp.ErrorCode))
	}
	return resp.Responses[0].Partitions[0]
}

// recordValues decodes every record value of a fetched records region.
func recordValues(t *testing.T, records []byte) []string {
	t.Helper()
	var out []string
	sc := batch.NewScanner(records)
	for sc.Next() {
		var it batch.Iterator
		if err := it.Reset(sc.Batch(), 64<<20); err != nil {
			t.Fatalf("iterating: %v", err)
		}
		for it.Next() {
			out = append(out, string(it.Record().Value))
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	return out
}
