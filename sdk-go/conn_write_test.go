package spool

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TestFrameWriterSplices writes produce requests whose batches are spliced (large ones) or
// copied in (small ones), mixed with a request without splices, in one flush, and checks that
// the bytes on the wire are exactly the frames the plain encoder makes.
func TestFrameWriterSplices(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(server)
		got <- b
	}()

	clientID := "frame-test"
	batchOf := func(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }
	produce := &wire.ProduceRequest{}
	produce.Default()
	produce.Acks = -1
	produce.TopicData = []wire.ProduceRequestTopicProduceData{
		{Name: "a", PartitionData: []wire.ProduceRequestPartitionProduceData{
			{Index: 0, Records: batchOf(5000, 'x')},
			{Index: 1, Records: batchOf(10, 'y')}, // copied in: the bytes behind it move
			{Index: 2, Records: batchOf(spliceMin, 'z')},
		}},
		{Name: "b", PartitionData: []wire.ProduceRequestPartitionProduceData{
			{Index: 7, Records: batchOf(3, 'w')},
		}},
	}
	meta := &wire.MetadataRequest{}
	meta.Default()
	calls := []*call{
		{key: 0, version: 9, req: produce, corr: 1},
		{key: 3, version: 12, req: meta, corr: 2},
		{key: 0, version: 7, req: produce, corr: 3},
	}
	var want []byte
	w := frameWriter{nc: client}
	for _, cl := range calls {
		if cl.key == 0 {
			for _, td := range produce.TopicData {
				for _, pd := range td.PartitionData {
					cl.splice = append(cl.splice, pd.Records)
				}
			}
		}
		if err := w.add(cl, &clientID); err != nil {
			t.Fatal(err)
		}
		api := wire.LookupAPI(cl.key)
		h := wire.RequestHeader{RequestApiKey: cl.key, RequestApiVersion: cl.version, CorrelationId: cl.corr, ClientId: &clientID}
		start := len(want)
		want = h.AppendTo(append(want, 0, 0, 0, 0), api.RequestHeaderVersion(cl.version))
		want = cl.req.AppendTo(want, cl.version)
		binary.BigEndian.PutUint32(want[start:], uint32(len(want)-start-4))
	}
	if w.pending != len(want) {
		t.Fatalf("pending %d bytes, want %d", w.pending, len(want))
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("wrote %d bytes that differ from the %d of the plain encoding", len(b), len(want))
	}

	// A splice count that does not match the request's records fields is an error, and
	// leaves nothing behind.
	bad := &call{key: 0, version: 9, req: produce, corr: 4, splice: [][]byte{batchOf(2000, 'q')}}
	if err := w.add(bad, &clientID); err == nil {
		t.Fatal("a wrong number of splices was accepted")
	}
	notSpliced := &call{key: 3, version: 12, req: meta, corr: 5, splice: [][]byte{{1}}}
	if err := w.add(notSpliced, &clientID); err == nil {
		t.Fatal("splices for a request without zero-copy fields were accepted")
	}
	if w.pending != 0 || len(w.buf) != 0 || len(w.pieces) != 0 {
		t.Fatalf("failed adds left %d pending bytes, %d buffered, %d pieces", w.pending, len(w.buf), len(w.pieces))
	}
}
