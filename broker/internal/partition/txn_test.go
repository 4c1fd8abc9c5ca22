package partition

import (
	"context"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

func txnRecords(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.SetProducer(pid, epoch, seq)
	b.SetTransactional(true)
	for range n {
		b.Append(time.Now().UnixMilli(), nil, []byte("v"), nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), out...)
}

func commit(t *testing.T, a Appended) {
	t.Helper()
	Commit(context.Background(), []Appended{a}, func(_ int, err error) { t.Fatal(err) })
}

// TestTxnLastStableOffsetAndMarkers follows the partition's transaction rules on a sole
// replica: an open transaction holds the last stable offset at its first record, so a
// read_committed read stops there while a read_uncommitted one goes on; the abort marker
// (AppendMarker) releases it, wakes the parked consumers, and the aborted range is listed for
// reads that overlap it; a marker of an older epoch than the producer's is refused.
func TestTxnLastStableOffsetAndMarkers(t *testing.T) {
	p := open(t, "t", []int32{1}, 1)
	appendDurable(t, p, 2) // 0-1, plain
	res, a, err := p.AppendAsLeader(txnRecords(t, 9, 0, 0, 3), true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	commit(t, a)           // 2-4, producer 9's open transaction
	appendDurable(t, p, 1) // 5, plain, behind the open transaction
	o := p.Offsets()
	if o.HighWatermark != 6 || o.LastStable != res.BaseOffset {
		t.Fatalf("offsets %+v, want high watermark 6 and last stable offset %d", o, res.BaseOffset)
	}
	rc, _, err := p.Read(2, 1<<20, ReadCommitted, Consumer)
	if err != nil || rc.Size != 0 {
		t.Fatalf("read_committed at the last stable offset: %d bytes, %v", rc.Size, err)
	}
	rc.Release()
	ru, _, err := p.Read(2, 1<<20, ReadUncommitted, Consumer)
	if err != nil || ru.Size == 0 {
		t.Fatalf("read_uncommitted past the open transaction: %d bytes, %v", ru.Size, err)
	}
	ru.Release()

	consumer := p.Changed(Consumer)
	if _, _, err := p.AppendMarker(9, -1, false, 3, true, time.Now()); err == nil {
		t.Fatal("a marker of an older epoch (-1) than the producer's data (0) was appended")
	}
	mres, ma, err := p.AppendMarker(9, 0, false, 3, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	commit(t, ma)
	if !closed(consumer) {
		t.Fatal("the abort marker did not wake a parked consumer")
	}
	if o := p.Offsets(); o.LastStable != o.HighWatermark || o.HighWatermark != mres.LastOffset+1 {
		t.Fatalf("after the abort: offsets %+v, want the last stable offset at the high watermark %d", o, mres.LastOffset+1)
	}
	got := p.AbortedTransactions(0, p.Offsets().LastStable)
	if len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 9, FirstOffset: 2, LastOffset: mres.BaseOffset}) {
		t.Fatalf("aborted transactions %+v", got)
	}
	if got := p.AbortedTransactions(mres.LastOffset+1, 100); len(got) != 0 {
		t.Fatalf("a read after the marker lists %+v", got)
	}
	if prods := p.Producers(); len(prods) != 1 || prods[0].ProducerID != 9 || prods[0].TxnStartOffset != -1 {
		t.Fatalf("producers %+v, want producer 9 without an open transaction", prods)
	}
}
