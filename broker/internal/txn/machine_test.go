package txn

import (
	"slices"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func TestStep(t *testing.T) {
	tp := func(t string, p int32) TopicPartition { return TopicPartition{t, p} }
	base := Meta{ID: "t", ProducerID: 7, Epoch: 3, LastProducerID: 7, LastEpoch: 2, TimeoutMs: 1000, StartMs: 100}
	in := func(s State, parts ...TopicPartition) Meta {
		m := base.Clone()
		m.State = s
		m.Partitions = parts
		return m
	}
	cases := []struct {
		rule    string
		from    Meta
		found   bool
		in      Input
		now     int64
		want    State
		epoch   int16
		pid     int64
		effects Effects
		err     *wire.Error
		parts   []TopicPartition
	}{
		{"a new transactional id gets a new producer id at epoch 0", Meta{ID: "t"}, false, Input{Event: Init, ProducerID: -1, NewProducerID: 42, TimeoutMs: 500}, 0, Empty, 0, 42, Persist, nil, nil},
		{"an unknown transactional id cannot add partitions", Meta{ID: "t"}, false, Input{Event: AddPartitions, ProducerID: 1}, 0, Empty, 0, 0, 0, wire.ErrInvalidProducerIdMapping, nil},
		{"init of an ended transaction bumps the epoch", in(CompleteCommit, tp("a", 0)), true, Input{Event: Init, ProducerID: -1}, 0, Empty, 4, 7, Persist, nil, nil},
		{"init of an empty one bumps the epoch", in(Empty), true, Input{Event: Init, ProducerID: -1}, 0, Empty, 4, 7, Persist, nil, nil},
		{"init at the last epoch takes a new producer id", func() Meta { m := in(Empty); m.Epoch = maxEpoch; return m }(), true, Input{Event: Init, ProducerID: -1, NewProducerID: 99}, 0, Empty, 0, 99, Persist, nil, nil},
		{"init of an open transaction fences it: abort under a bumped epoch, the caller retries", in(Ongoing, tp("a", 0)), true, Input{Event: Init, ProducerID: -1}, 0, PrepareAbort, 4, 7, Persist | WriteMarkers, wire.ErrConcurrentTransactions, []TopicPartition{tp("a", 0)}},
		{"init while markers are written is retried", in(PrepareCommit, tp("a", 0)), true, Input{Event: Init, ProducerID: -1}, 0, PrepareCommit, 3, 7, 0, wire.ErrConcurrentTransactions, []TopicPartition{tp("a", 0)}},
		{"init naming a stale producer epoch is fenced (KIP-360)", in(Empty), true, Input{Event: Init, ProducerID: 7, Epoch: 1}, 0, Empty, 3, 7, 0, wire.ErrProducerFenced, nil},
		{"init naming the current epoch is a recovery bump (KIP-360)", in(CompleteAbort), true, Input{Event: Init, ProducerID: 7, Epoch: 3}, 0, Empty, 4, 7, Persist, nil, nil},
		{"the first partitions begin a transaction", in(Empty), true, Input{Event: AddPartitions, ProducerID: 7, Epoch: 3, Partitions: []TopicPartition{tp("b", 1), tp("a", 0)}}, 5, Ongoing, 3, 7, Persist, nil, []TopicPartition{tp("a", 0), tp("b", 1)}},
		{"partitions after a commit begin a new transaction", in(CompleteCommit, tp("z", 0)), true, Input{Event: AddPartitions, ProducerID: 7, Epoch: 3, Partitions: []TopicPartition{tp("a", 0)}}, 5, Ongoing, 3, 7, Persist, nil, []TopicPartition{tp("a", 0)}},
		{"partitions already in the transaction change nothing", in(Ongoing, tp("a", 0)), true, Input{Event: AddPartitions, ProducerID: 7, Epoch: 3, Partitions: []TopicPartition{tp("a", 0)}}, 5, Ongoing, 3, 7, 0, nil, []TopicPartition{tp("a", 0)}},
		{"an older epoch is fenced", in(Ongoing), true, Input{Event: AddPartitions, ProducerID: 7, Epoch: 2}, 0, Ongoing, 3, 7, 0, wire.ErrProducerFenced, nil},
		{"another producer id does not map to the transactional id", in(Ongoing), true, Input{Event: End, ProducerID: 8, Epoch: 3}, 0, Ongoing, 3, 7, 0, wire.ErrInvalidProducerIdMapping, nil},
		{"partitions cannot be added while markers are written", in(PrepareAbort), true, Input{Event: AddPartitions, ProducerID: 7, Epoch: 3, Partitions: []TopicPartition{tp("a", 0)}}, 0, PrepareAbort, 3, 7, 0, wire.ErrConcurrentTransactions, nil},
		{"commit of an open transaction prepares it and writes markers", in(Ongoing, tp("a", 0)), true, Input{Event: End, ProducerID: 7, Epoch: 3, Commit: true}, 0, PrepareCommit, 3, 7, Persist | WriteMarkers, nil, []TopicPartition{tp("a", 0)}},
		{"abort of an open transaction prepares it and writes markers", in(Ongoing, tp("a", 0)), true, Input{Event: End, ProducerID: 7, Epoch: 3}, 0, PrepareAbort, 3, 7, Persist | WriteMarkers, nil, []TopicPartition{tp("a", 0)}},
		{"a retried commit of a completed commit succeeds", in(CompleteCommit), true, Input{Event: End, ProducerID: 7, Epoch: 3, Commit: true}, 0, CompleteCommit, 3, 7, 0, nil, nil},
		{"abort after a completed commit is an invalid state", in(CompleteCommit), true, Input{Event: End, ProducerID: 7, Epoch: 3}, 0, CompleteCommit, 3, 7, 0, wire.ErrInvalidTxnState, nil},
		{"commit while the commit's markers are written is retried", in(PrepareCommit), true, Input{Event: End, ProducerID: 7, Epoch: 3, Commit: true}, 0, PrepareCommit, 3, 7, 0, wire.ErrConcurrentTransactions, nil},
		{"abort while a commit is being written is an invalid state", in(PrepareCommit), true, Input{Event: End, ProducerID: 7, Epoch: 3}, 0, PrepareCommit, 3, 7, 0, wire.ErrInvalidTxnState, nil},
		{"ending with no transaction is an invalid state", in(Empty), true, Input{Event: End, ProducerID: 7, Epoch: 3, Commit: true}, 0, Empty, 3, 7, 0, wire.ErrInvalidTxnState, nil},
		{"written markers complete a commit", in(PrepareCommit, tp("a", 0)), true, Input{Event: MarkersWritten}, 0, CompleteCommit, 3, 7, Persist, nil, []TopicPartition{tp("a", 0)}},
		{"written markers complete an abort", in(PrepareAbort, tp("a", 0)), true, Input{Event: MarkersWritten}, 0, CompleteAbort, 3, 7, Persist, nil, []TopicPartition{tp("a", 0)}},
		{"markers complete only a preparing transaction", in(Ongoing), true, Input{Event: MarkersWritten}, 0, Ongoing, 3, 7, 0, wire.ErrInvalidTxnState, nil},
		{"an expired transaction is aborted under a bumped epoch", in(Ongoing, tp("a", 0)), true, Input{Event: Expire}, 1100, PrepareAbort, 4, 7, Persist | WriteMarkers, nil, []TopicPartition{tp("a", 0)}},
		{"a transaction within its timeout does not expire", in(Ongoing, tp("a", 0)), true, Input{Event: Expire}, 1099, Ongoing, 3, 7, 0, wire.ErrInvalidTxnState, []TopicPartition{tp("a", 0)}},
	}
	for _, c := range cases {
		before := c.from.Clone()
		out := Step(c.from, c.found, c.in, c.now)
		if out.Err != c.err || out.Effects != c.effects || out.Next.State != c.want || out.Next.Epoch != c.epoch || out.Next.ProducerID != c.pid {
			t.Errorf("%s: got state %s epoch %d pid %d effects %b err %v; want %s %d %d %b %v", c.rule, out.Next.State, out.Next.Epoch, out.Next.ProducerID, out.Effects, out.Err, c.want, c.epoch, c.pid, c.effects, c.err)
			continue
		}
		if !slices.Equal(out.Next.Partitions, c.parts) {
			t.Errorf("%s: partitions %v, want %v", c.rule, out.Next.Partitions, c.parts)
		}
		if !slices.Equal(c.from.Partitions, before.Partitions) || c.from.State != before.State {
			t.Errorf("%s: Step changed its input", c.rule)
		}
	}
}

func TestLegalTransitions(t *testing.T) {
	cases := []struct {
		rule     string
		from, to State
		legal    bool
	}{
		{"a commit is prepared only from an open transaction", Empty, PrepareCommit, false},
		{"an open transaction may be prepared for commit", Ongoing, PrepareCommit, true},
		{"a fence leads to an abort", PrepareEpochFence, PrepareAbort, true},
		{"a prepared commit only completes", PrepareCommit, CompleteAbort, false},
		{"a completed transaction may begin another", CompleteAbort, Ongoing, true},
		{"only an idle id dies", Ongoing, Dead, false},
	}
	for _, c := range cases {
		if Legal(c.from, c.to) != c.legal {
			t.Errorf("%s: Legal(%s, %s) = %v", c.rule, c.from, c.to, !c.legal)
		}
	}
}
