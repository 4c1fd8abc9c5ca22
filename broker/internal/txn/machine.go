package txn

import (
	"fmt"
	"math"
	"slices"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// The transaction state machine, as a pure function: a transactional id's metadata, an event
// and the time in; the next metadata, the error to answer and the effects out (Kafka's
// TransactionCoordinator handlers and TransactionMetadata's transitions, written per event).
// The coordinator moves metadata only through Step (coordinator.go) and carries the effects
// out: persist the next metadata to __transaction_state, then write markers.

// State is a transaction's state, with Kafka's codes in __transaction_state.
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	case Dead:
		return "Dead"
	case PrepareEpochFence:
		return "PrepareEpochFence"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// validPrevious is each state's legal previous states (Kafka's TransactionState).
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteCommit, CompleteAbort},
	PrepareEpochFence: {Ongoing},
}

// Legal reports whether a transaction may move from one state to another.
func Legal(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// TopicPartition is a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// Meta is what the coordinator keeps of a transactional id (Kafka's TransactionMetadata).
type Meta struct {
	ID         string
	ProducerID int64
	Epoch      int16
	// LastProducerID and LastEpoch are the id and epoch handed out before the current ones
	// (KIP-360: a producer that lost the answer to InitProducerId may retry with them).
	LastProducerID int64
	LastEpoch      int16
	TimeoutMs      int32
	State          State
	// Partitions are the partitions of the open (or ending) transaction, sorted.
	Partitions []TopicPartition
	StartMs    int64 // when the transaction began (its first partition)
	UpdateMs   int64
}

// Clone is a deep copy.
func (m Meta) Clone() Meta {
	m.Partitions = slices.Clone(m.Partitions)
	return m
}

// Event is what happens to a transactional id.
type Event int8

const (
	// Init is InitProducerId.
	Init Event = iota
	// AddPartitions is AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets
	// partition).
	AddPartitions
	// End is EndTxn.
	End
	// MarkersWritten: every partition of a preparing transaction has its marker.
	MarkersWritten
	// Expire: the coordinator's timer found the transaction past its timeout.
	Expire
)

func (e Event) String() string {
	return [...]string{"Init", "AddPartitions", "End", "MarkersWritten", "Expire"}[e]
}

// Input is one event with its arguments.
type Input struct {
	Event Event
	// ProducerID and Epoch are the caller's (AddPartitions, End; Init v3+ with -1 for none).
	ProducerID int64
	Epoch      int16
	// TimeoutMs is Init's transaction.timeout.ms.
	TimeoutMs int32
	// Partitions are AddPartitions' partitions.
	Partitions []TopicPartition
	// Commit is End's decision.
	Commit bool
	// NewProducerID is a fresh producer id for Init, used for a new transactional id or when
	// the epoch is exhausted.
	NewProducerID int64
}

// Effects are what a transition asks the coordinator to do, in this order.
type Effects uint8

const (
	// Persist: append the next metadata to __transaction_state and apply it once committed;
	// the answer waits for that.
	Persist Effects = 1 << iota
	// WriteMarkers: once persisted, write the markers of the next metadata's decision
	// (PrepareCommit or PrepareAbort) to its partitions, then step MarkersWritten.
	WriteMarkers
)

// Outcome is Step's result. With Err set and no effects nothing changes; Err may also come
// with effects (Init on an open transaction aborts it and answers CONCURRENT_TRANSACTIONS).
type Outcome struct {
	Next    Meta
	Effects Effects
	Err     *wire.Error
}

// maxEpoch is the highest epoch handed out; at it a producer gets a new id (Kafka keeps
// Short.MaxValue for a later bump).
const maxEpoch = math.MaxInt16 - 1

// Step applies in to m (found says whether the id exists; for a new id m holds only ID) at
// nowMs. It never mutates m.
func Step(m Meta, found bool, in Input, nowMs int64) Outcome {
	out := step(m, found, in, nowMs)
	if found && out.Effects != 0 && !Legal(m.State, out.Next.State) {
		// Never reached by the rules above; the table is the last word.
		return Outcome{Next: m, Err: wire.ErrInvalidTxnState}
	}
	return out
}

func step(m Meta, found bool, in Input, nowMs int64) Outcome {
	next := m.Clone()
	next.UpdateMs = nowMs
	fail := func(e *wire.Error) Outcome { return Outcome{Next: m, Err: e} }
	if !found && in.Event != Init {
		return fail(wire.ErrInvalidProducerIdMapping)
	}
	switch in.Event {
	case Init:
		if !found {
			next = Meta{ID: m.ID, ProducerID: in.NewProducerID, Epoch: 0, LastProducerID: -1, LastEpoch: -1, TimeoutMs: in.TimeoutMs, State: Empty, UpdateMs: nowMs}
			return Outcome{Next: next, Effects: Persist}
		}
		// KIP-360: a producer naming its id and epoch must be the current one (or the one
		// just before, whose answer it may have lost).
		if in.ProducerID >= 0 && !(in.ProducerID == m.ProducerID && in.Epoch == m.Epoch) && !(in.ProducerID == m.LastProducerID && in.Epoch == m.LastEpoch) {
			return fail(wire.ErrProducerFenced)
		}
		switch m.State {
		case PrepareCommit, PrepareAbort, PrepareEpochFence:
			return fail(wire.ErrConcurrentTransactions) // markers in flight; the client retries
		case Ongoing:
			// Fence the open transaction's producer and abort it under the bumped epoch; the
			// caller retries and gets a second bump once the abort completed.
			next.LastProducerID, next.LastEpoch = m.ProducerID, m.Epoch
			next.Epoch = m.Epoch + 1
			next.State = PrepareAbort
			return Outcome{Next: next, Effects: Persist | WriteMarkers, Err: wire.ErrConcurrentTransactions}
		case Dead:
			return fail(wire.ErrConcurrentTransactions)
		}
		next.LastProducerID, next.LastEpoch = m.ProducerID, m.Epoch
		if m.Epoch >= maxEpoch {
			next.ProducerID, next.Epoch = in.NewProducerID, 0
		} else {
			next.Epoch = m.Epoch + 1
		}
		next.TimeoutMs = in.TimeoutMs
		next.State = Empty
		next.Partitions = nil
		return Outcome{Next: next, Effects: Persist}
	case AddPartitions:
		if e := checkProducer(m, in); e != nil {
			return fail(e)
		}
		switch m.State {
		case PrepareCommit, PrepareAbort, PrepareEpochFence:
			return fail(wire.ErrConcurrentTransactions)
		case Dead:
			return fail(wire.ErrInvalidTxnState)
		}
		if m.State != Ongoing {
			next.Partitions = nil
			next.StartMs = nowMs
		}
		added := false
		for _, tp := range in.Partitions {
			if i, ok := slices.BinarySearchFunc(next.Partitions, tp, compareTP); !ok {
				next.Partitions = slices.Insert(next.Partitions, i, tp)
				added = true
			}
		}
		if m.State == Ongoing && !added {
			return Outcome{Next: m} // nothing new: answered at once
		}
		next.State = Ongoing
		return Outcome{Next: next, Effects: Persist}
	case End:
		if e := checkProducer(m, in); e != nil {
			return fail(e)
		}
		switch {
		case m.State == Ongoing:
			next.State = PrepareAbort
			if in.Commit {
				next.State = PrepareCommit
			}
			return Outcome{Next: next, Effects: Persist | WriteMarkers}
		case m.State == CompleteCommit && in.Commit, m.State == CompleteAbort && !in.Commit:
			return Outcome{Next: m} // a retry of an end that completed
		case m.State == PrepareCommit && in.Commit, m.State == PrepareAbort && !in.Commit:
			return fail(wire.ErrConcurrentTransactions)
		}
		return fail(wire.ErrInvalidTxnState)
	case MarkersWritten:
		switch m.State {
		case PrepareCommit:
			next.State = CompleteCommit
		case PrepareAbort:
			next.State = CompleteAbort
		default:
			return fail(wire.ErrInvalidTxnState)
		}
		return Outcome{Next: next, Effects: Persist}
	case Expire:
		if m.State != Ongoing || nowMs < m.StartMs+int64(m.TimeoutMs) {
			return fail(wire.ErrInvalidTxnState)
		}
		// Abort under a bumped epoch: the late producer is fenced (Kafka's timeout abort).
		next.LastProducerID, next.LastEpoch = m.ProducerID, m.Epoch
		next.Epoch = m.Epoch + 1
		next.State = PrepareAbort
		return Outcome{Next: next, Effects: Persist | WriteMarkers}
	}
	return fail(wire.ErrInvalidRequest)
}

// checkProducer is the rule of AddPartitions and End: the id and epoch must be current.
func checkProducer(m Meta, in Input) *wire.Error {
	switch {
	case in.ProducerID != m.ProducerID:
		return wire.ErrInvalidProducerIdMapping
	case in.Epoch != m.Epoch:
		return wire.ErrProducerFenced
	}
	return nil
}
