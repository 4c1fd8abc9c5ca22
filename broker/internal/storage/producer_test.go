package storage

import (
	"github.com/spoolmq/spool/protocol-spec/wire/batch"

	"errors"
	"fmt"
	"testing"
	"time"
)

func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{Timestamp: t0.UnixMilli(), Key: fmt.Sprintf("p%d-s%d", pid, int(seq)+i), Value: "v"}
	}
	return buildBatch(t, batchSpec{recs: recs, pid: pid, epoch: epoch, seq: seq})
}

func TestIdempotentProducer(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	top := t // logs opened in subtests live as long as the whole test
	l := openLog(top, dir, cfg)
	app := func(l *Log, b []byte) (AppendResult, error) {
		return l.Append(b, AppendOptions{AssignOffsets: true, Now: t0})
	}
	// seq 0-2, 3-5, ...
	var firsts []AppendResult
	for i := range 6 {
		res, err := app(l, idemBatch(t, 7, 0, int32(3*i), 3))
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, res)
	}
	end := l.LogEndOffset()

	t.Run("duplicate of the last batch", func(t *testing.T) {
		res, err := app(l, idemBatch(t, 7, 0, 15, 3))
		if err != nil || !res.Duplicate || res.BaseOffset != firsts[5].BaseOffset || res.LastOffset != firsts[5].LastOffset {
			t.Fatalf("got %+v, %v; want a duplicate of %+v", res, err, firsts[5])
		}
		if l.LogEndOffset() != end {
			t.Fatal("a duplicate was appended")
		}
	})
	t.Run("duplicate of an older cached batch", func(t *testing.T) {
		res, err := app(l, idemBatch(t, 7, 0, 3, 3))
		if err != nil || !res.Duplicate || res.BaseOffset != firsts[1].BaseOffset {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
	t.Run("too old to be cached is out of order", func(t *testing.T) {
		if _, err := app(l, idemBatch(t, 7, 0, 0, 3)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("gap", func(t *testing.T) {
		if _, err := app(l, idemBatch(t, 7, 0, 19, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("got %v", err)
		}
		if l.LogEndOffset() != end {
			t.Fatal("an out of order batch was appended")
		}
	})
	t.Run("next in sequence", func(t *testing.T) {
		res, err := app(l, idemBatch(t, 7, 0, 18, 2))
		if err != nil || res.Duplicate || res.BaseOffset != end {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
	t.Run("new epoch must start at 0", func(t *testing.T) {
		if _, err := app(l, idemBatch(t, 7, 1, 20, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("got %v", err)
		}
		if _, err := app(l, idemBatch(t, 7, 1, 0, 1)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("old epoch is fenced", func(t *testing.T) {
		if _, err := app(l, idemBatch(t, 7, 0, 20, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unknown producer starts anywhere", func(t *testing.T) {
		if _, err := app(l, idemBatch(t, 99, 3, 42, 1)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("several batches of one producer in one append", func(t *testing.T) {
		b := append(idemBatch(t, 8, 0, 0, 2), idemBatch(t, 8, 0, 2, 2)...)
		if _, err := app(l, b); err != nil {
			t.Fatal(err)
		}
		b = append(idemBatch(t, 8, 0, 4, 2), idemBatch(t, 8, 0, 7, 2)...)
		if _, err := app(l, b); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("gap inside an append: %v", err)
		}
	})

	last7 := int32(0) // producer 7's newest sequence (epoch 1)
	check := func(t *testing.T, l *Log) {
		t.Helper()
		res, err := app(l, idemBatch(t, 7, 1, last7, 1))
		if err != nil || !res.Duplicate {
			t.Fatalf("duplicate after reopen: %+v, %v", res, err)
		}
		if _, err := app(l, idemBatch(t, 7, 0, 20, 1)); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("fencing after reopen: %v", err)
		}
		if _, err := app(l, idemBatch(t, 8, 0, 7, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("gap after reopen: %v", err)
		}
	}
	t.Run("survives a clean reopen", func(t *testing.T) {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(top, dir, cfg)
		check(t, l)
	})
	t.Run("survives a crash (rebuilt from snapshot and log)", func(t *testing.T) {
		// More batches after the last snapshot, then a crash: no snapshot at close.
		for i := range 30 {
			if _, err := app(l, idemBatch(t, 7, 1, int32(1+i), 1)); err != nil {
				t.Fatal(err)
			}
		}
		last7 = 30
		l.crash()
		l = openLog(top, dir, cfg)
		check(t, l)
		res, err := app(l, idemBatch(t, 7, 1, 26, 1))
		if err != nil || !res.Duplicate {
			t.Fatalf("fifth newest batch before the crash: %+v, %v", res, err)
		}
	})
	t.Run("survives losing every snapshot", func(t *testing.T) {
		l.crash()
		offs, _ := (&producerStateManager{dir: dir}).snapshotOffsets()
		for _, o := range offs {
			removeIfExists(snapshotPath(dir, o))
		}
		l = openLog(top, dir, cfg)
		check(t, l)
	})
	t.Run("expiration", func(t *testing.T) {
		if n := l.ExpireProducers(t0.Add(48 * time.Hour)); n == 0 {
			t.Fatal("nothing expired")
		}
		if _, err := app(l, idemBatch(t, 7, 0, 55, 1)); err != nil {
			t.Fatalf("an expired producer is unknown and may start anywhere: %v", err)
		}
	})
}

func TestProducerSnapshotFormat(t *testing.T) {
	m := newProducerStateManager(t.TempDir(), testLogger(t))
	for i := range 7 {
		m.update(&batchInfo{pid: 3, epoch: 2, seq: int32(i * 2), lastDelta: 1, base: int64(10 * i), last: int64(10*i + 1), maxTs: 99})
	}
	m.update(&batchInfo{pid: 4, epoch: 0, seq: 0, base: 100, last: 100, maxTs: 5})
	// Transactions: 5 aborted one at 101-102 (marker 103), 6 open from 104.
	m.update(&batchInfo{pid: 5, epoch: 0, seq: 0, lastDelta: 1, base: 101, last: 102, txn: true})
	m.update(&batchInfo{pid: 5, epoch: 0, seq: -1, base: 103, last: 103, txn: true, control: true, ctype: batch.ControlAbort})
	m.update(&batchInfo{pid: 6, epoch: 1, seq: 0, base: 104, last: 104, txn: true})
	b := m.encode(123)
	st, err := decodeSnapshot(b)
	prods := st.producers
	if err != nil || st.offset != 123 || len(prods) != 4 || prods[3].n != producerBatchesKept || prods[3].epoch != 2 || prods[3].lastSeq() != 13 {
		t.Fatalf("decoded %d %v %v", st.offset, prods, err)
	}
	if len(st.ongoing) != 1 || st.ongoing[6] != 104 || len(st.aborted) != 1 || st.aborted[0] != (AbortedTxn{ProducerID: 5, FirstOffset: 101, LastOffset: 103}) {
		t.Fatalf("transactions decoded as open %v aborted %v", st.ongoing, st.aborted)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if _, err := decodeSnapshot(c); err == nil {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
	if _, err := decodeSnapshot(b[:len(b)-1]); err == nil {
		t.Fatal("truncation went unnoticed")
	}
}

func TestSequenceWrap(t *testing.T) {
	if incSeq(1<<31-1, 1) != 0 || incSeq(1<<31-2, 3) != 1 || incSeq(5, 2) != 7 {
		t.Fatal("incSeq")
	}
	if !inSequence(1<<31-1, 0) || inSequence(3, 5) || !inSequence(3, 4) {
		t.Fatal("inSequence")
	}
}
