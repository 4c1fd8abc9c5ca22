package spool

import "fmt"

// The transactional producer's states and the rules between them, as a pure function
// (txnStep) with a table test (txn_state_test.go), in the manner of the broker's quorum and
// group machines. Kafka's TransactionManager (clients/.../internals/TransactionManager.java)
// has the same states; the names below are ours.
//
//	Uninitialized --init--> Initializing --initDone--> Ready --begin--> InTransaction
//	InTransaction --commit--> Committing --ended--> Ready
//	InTransaction|AbortableError --abort--> Aborting --ended--> Ready
//	InTransaction|Committing|Aborting --abortable--> AbortableError
//	any --fatal--> Fatal (for good)
//
// Committing and Aborting may be started again (a commit or abort whose wait ended early is
// retried by calling it again, as the Java client allows); a failure while initializing
// leaves the producer Uninitialized, so that InitTransactions may be called again.

// txnState is where the transactional producer stands.
type txnState int32

const (
	txnUninitialized txnState = iota
	txnInitializing
	txnReady
	txnInTransaction
	txnCommitting
	txnAborting
	txnAbortableError
	txnFatal
)

func (s txnState) String() string {
	switch s {
	case txnUninitialized:
		return "Uninitialized"
	case txnInitializing:
		return "Initializing"
	case txnReady:
		return "Ready"
	case txnInTransaction:
		return "InTransaction"
	case txnCommitting:
		return "Committing"
	case txnAborting:
		return "Aborting"
	case txnAbortableError:
		return "AbortableError"
	case txnFatal:
		return "Fatal"
	}
	return fmt.Sprintf("txnState(%d)", int32(s))
}

// txnEvent is what happens to the producer: a call of the user's or an outcome.
type txnEvent int8

const (
	evInit       txnEvent = iota // InitTransactions starts
	evInitFailed                 // InitTransactions failed without a fatal error
	evInitDone                   // InitProducerId answered with a producer id
	evBegin                      // BeginTransaction
	evProduce                    // a record (or SendOffsetsToTransaction) joins the transaction
	evCommit                     // CommitTransaction starts
	evAbort                      // AbortTransaction starts
	evEnded                      // EndTxn answered (or there was nothing to end)
	evAbortable                  // an error that only the running transaction suffers
	evFatal                      // an error after which the producer can do nothing
)

func (e txnEvent) String() string {
	return [...]string{"init", "initFailed", "initDone", "begin", "produce", "commit", "abort", "ended", "abortable", "fatal"}[e]
}

// errTxnState is wrapped by txnStep's error: the call is not valid in the producer's state.
type errTxnState struct {
	from txnState
	ev   txnEvent
}

func (e *errTxnState) Error() string {
	switch {
	case e.from == txnUninitialized && e.ev != evInit:
		return "spool: transactional producer: call InitTransactions first"
	case e.from == txnAbortableError && e.ev == evCommit:
		return "spool: the transaction failed and must be aborted (AbortTransaction)"
	case e.from == txnReady && (e.ev == evProduce || e.ev == evCommit || e.ev == evAbort):
		return "spool: no transaction is running (BeginTransaction first)"
	}
	return fmt.Sprintf("spool: transactional producer: %s is not valid in state %s", e.ev, e.from)
}

// txnStep is the state after ev in state s, or an error (and s unchanged) when ev is not
// allowed there. It is pure: the caller applies the result under its lock.
func txnStep(s txnState, ev txnEvent) (txnState, error) {
	bad := func() (txnState, error) { return s, &errTxnState{s, ev} }
	if s == txnFatal {
		return bad()
	}
	switch ev {
	case evFatal:
		return txnFatal, nil
	case evInit:
		if s == txnUninitialized {
			return txnInitializing, nil
		}
	case evInitFailed:
		if s == txnInitializing {
			return txnUninitialized, nil
		}
	case evInitDone:
		if s == txnInitializing {
			return txnReady, nil
		}
	case evBegin:
		if s == txnReady {
			return txnInTransaction, nil
		}
	case evProduce:
		if s == txnInTransaction {
			return s, nil
		}
	case evCommit:
		if s == txnInTransaction || s == txnCommitting {
			return txnCommitting, nil
		}
	case evAbort:
		if s == txnInTransaction || s == txnAbortableError || s == txnAborting {
			return txnAborting, nil
		}
	case evEnded:
		if s == txnCommitting || s == txnAborting {
			return txnReady, nil
		}
	case evAbortable:
		switch s {
		case txnInTransaction, txnCommitting, txnAborting, txnAbortableError:
			return txnAbortableError, nil
		}
	}
	return bad()
}
