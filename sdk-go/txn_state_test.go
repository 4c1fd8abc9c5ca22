package spool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func TestTxnStep(t *testing.T) {
	const refused = txnState(-1)
	cases := []struct {
		rule string
		from txnState
		ev   txnEvent
		want txnState // refused: the event is not allowed there
	}{
		{"InitTransactions starts from Uninitialized", txnUninitialized, evInit, txnInitializing},
		{"InitTransactions is called once", txnReady, evInit, refused},
		{"a producer id makes the producer Ready", txnInitializing, evInitDone, txnReady},
		{"a failed init may be tried again", txnInitializing, evInitFailed, txnUninitialized},
		{"nothing before InitTransactions: begin", txnUninitialized, evBegin, refused},
		{"nothing before InitTransactions: produce", txnUninitialized, evProduce, refused},
		{"BeginTransaction from Ready", txnReady, evBegin, txnInTransaction},
		{"no nested transactions", txnInTransaction, evBegin, refused},
		{"records only inside a transaction", txnReady, evProduce, refused},
		{"records inside a transaction", txnInTransaction, evProduce, txnInTransaction},
		{"no records while committing", txnCommitting, evProduce, refused},
		{"no records once the transaction failed", txnAbortableError, evProduce, refused},
		{"commit a running transaction", txnInTransaction, evCommit, txnCommitting},
		{"a commit may be retried", txnCommitting, evCommit, txnCommitting},
		{"no commit without a transaction", txnReady, evCommit, refused},
		{"a failed transaction cannot commit", txnAbortableError, evCommit, refused},
		{"abort a running transaction", txnInTransaction, evAbort, txnAborting},
		{"abort a failed transaction", txnAbortableError, evAbort, txnAborting},
		{"an abort may be retried", txnAborting, evAbort, txnAborting},
		{"no abort without a transaction", txnReady, evAbort, refused},
		{"no abort once committing", txnCommitting, evAbort, refused},
		{"EndTxn after commit: Ready", txnCommitting, evEnded, txnReady},
		{"EndTxn after abort: Ready", txnAborting, evEnded, txnReady},
		{"EndTxn means nothing in a transaction", txnInTransaction, evEnded, refused},
		{"an abortable error dooms the transaction", txnInTransaction, evAbortable, txnAbortableError},
		{"an abortable error during commit", txnCommitting, evAbortable, txnAbortableError},
		{"an abortable error during abort: abort again", txnAborting, evAbortable, txnAbortableError},
		{"no abortable error outside a transaction", txnReady, evAbortable, refused},
		{"fatal from a transaction", txnInTransaction, evFatal, txnFatal},
		{"fatal from Ready", txnReady, evFatal, txnFatal},
		{"fatal while initializing", txnInitializing, evFatal, txnFatal},
		{"fatal from an abortable error", txnAbortableError, evFatal, txnFatal},
		{"fatal is for good: abort", txnFatal, evAbort, refused},
		{"fatal is for good: init", txnFatal, evInit, refused},
		{"fatal is for good: fatal again", txnFatal, evFatal, refused},
	}
	for _, c := range cases {
		got, err := txnStep(c.from, c.ev)
		if c.want == refused {
			var se *errTxnState
			if !errors.As(err, &se) || got != c.from {
				t.Errorf("%s: %s --%s--> %s, %v; want refused, state kept", c.rule, c.from, c.ev, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %s --%s--> %s, %v; want %s", c.rule, c.from, c.ev, got, err, c.want)
		}
	}
}

func TestTxnStepErrorsSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		from txnState
		ev   txnEvent
		want string
	}{
		{txnUninitialized, evBegin, "InitTransactions first"},
		{txnReady, evProduce, "BeginTransaction first"},
		{txnAbortableError, evCommit, "must be aborted"},
	} {
		_, err := txnStep(c.from, c.ev)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s --%s-->: error %v, want it to say %q", c.from, c.ev, err, c.want)
		}
	}
}

func TestTxnErrorClasses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want TxnErrorClass
	}{
		{wire.ErrProducerFenced, TxnFatal},
		{wire.ErrInvalidProducerEpoch, TxnFatal},
		{wire.ErrTransactionalIdAuthorizationFailed, TxnFatal},
		{fmt.Errorf("EndTxn: %w", wire.ErrProducerFenced), TxnFatal},
		{wire.ErrConcurrentTransactions, TxnRetriable},
		{wire.ErrCoordinatorLoadInProgress, TxnRetriable},
		{wire.ErrNotCoordinator, TxnRetriable},
		{ErrConnClosed, TxnRetriable},
		{wire.ErrIllegalGeneration, TxnAbortable},
		{wire.ErrUnknownMemberId, TxnAbortable},
		{wire.ErrFencedInstanceId, TxnAbortable},
		{wire.ErrTopicAuthorizationFailed, TxnAbortable},
		{wire.ErrGroupAuthorizationFailed, TxnAbortable},
		{wire.ErrMessageTooLarge, TxnAbortable},
		{&TxnError{Class: TxnFatal, Err: wire.ErrMessageTooLarge}, TxnFatal},
	} {
		if got := txnClass(c.err); got != c.want {
			t.Errorf("txnClass(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	fatal := fmt.Errorf("wrapped: %w", &TxnError{Op: "CommitTransaction", Class: TxnFatal, Err: wire.ErrProducerFenced})
	if !IsFatal(fatal) || TxnRequiresAbort(fatal) || IsRetriable(fatal) || !errors.Is(fatal, wire.ErrProducerFenced) {
		t.Errorf("fatal TxnError: IsFatal %v TxnRequiresAbort %v IsRetriable %v Is(fenced) %v",
			IsFatal(fatal), TxnRequiresAbort(fatal), IsRetriable(fatal), errors.Is(fatal, wire.ErrProducerFenced))
	}
	ab := &TxnError{Op: "Produce", Class: TxnAbortable, Err: wire.ErrMessageTooLarge}
	if IsFatal(ab) || !TxnRequiresAbort(ab) {
		t.Errorf("abortable TxnError: IsFatal %v TxnRequiresAbort %v", IsFatal(ab), TxnRequiresAbort(ab))
	}
}
