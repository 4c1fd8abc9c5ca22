package spool

import (
	"errors"
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// TxnErrorClass is how bad a transactional producer's error is, in Kafka's three classes
// (librdkafka's rd_kafka_error_is_fatal, _is_retriable, _txn_requires_abort).
type TxnErrorClass int8

const (
	// TxnRetriable: the call may simply be made again (a timeout, a coordinator moving); the
	// transaction is intact.
	TxnRetriable TxnErrorClass = iota + 1
	// TxnAbortable: the running transaction cannot commit (a record failed, the group fenced
	// the offsets); AbortTransaction, then a new transaction, goes on.
	TxnAbortable
	// TxnFatal: the producer can do nothing more and must be closed (a newer producer with
	// the same transactional.id fenced it, the transactional id is not authorized, the broker
	// broke the protocol).
	TxnFatal
)

func (c TxnErrorClass) String() string {
	switch c {
	case TxnRetriable:
		return "retriable"
	case TxnAbortable:
		return "abortable"
	case TxnFatal:
		return "fatal"
	}
	return "unknown"
}

// TxnError is the error of a transactional call (InitTransactions, BeginTransaction,
// SendOffsetsToTransaction, CommitTransaction, AbortTransaction) and of records produced in
// a transaction that failed. Err is the cause (a *wire.Error for a Kafka error code), so
// errors.Is(err, wire.ErrProducerFenced) works through it.
type TxnError struct {
	Op    string // the call, e.g. "CommitTransaction"
	Class TxnErrorClass
	Err   error
}

func (e *TxnError) Error() string {
	return fmt.Sprintf("spool: %s: %s error: %v", e.Op, e.Class, e.Err)
}

func (e *TxnError) Unwrap() error { return e.Err }

// ErrTransactionAborted is the outcome of a record of a transaction aborted before the record
// was sent (AbortTransaction drops what is unsent), and is wrapped by CommitTransaction's
// error when the transaction had to be aborted instead (TxnSession).
var ErrTransactionAborted = errors.New("spool: transaction aborted")

// IsFatal reports whether err is a transactional error after which the producer must be
// closed (Kafka's fatal class: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...).
func IsFatal(err error) bool {
	var te *TxnError
	return errors.As(err, &te) && te.Class == TxnFatal
}

// TxnRequiresAbort reports whether err leaves the running transaction unable to commit:
// AbortTransaction must be called before the next BeginTransaction.
func TxnRequiresAbort(err error) bool {
	var te *TxnError
	return errors.As(err, &te) && te.Class == TxnAbortable
}

// IsRetriable reports whether the call that returned err may be made again as it was.
func IsRetriable(err error) bool {
	var te *TxnError
	if errors.As(err, &te) {
		return te.Class == TxnRetriable
	}
	return retriable(err)
}

// txnClass sorts an error of a transactional request (or of a record in a transaction) into
// Kafka's classes, as the Java client's TransactionManager does. A producer fenced by a
// newer instance, an unauthorized transactional id and errors that mean the broker and this
// producer disagree on the protocol are fatal; retriable codes and broken connections are
// retriable; anything else dooms only the running transaction.
func txnClass(err error) TxnErrorClass {
	var te *TxnError
	if errors.As(err, &te) {
		return te.Class
	}
	switch {
	case errors.Is(err, wire.ErrProducerFenced), errors.Is(err, wire.ErrInvalidProducerEpoch),
		errors.Is(err, wire.ErrTransactionalIdAuthorizationFailed),
		errors.Is(err, wire.ErrClusterAuthorizationFailed),
		errors.Is(err, wire.ErrInvalidTxnState),
		errors.Is(err, wire.ErrInvalidTransactionTimeout),
		errors.Is(err, wire.ErrUnsupportedVersion),
		errors.Is(err, wire.ErrTransactionalIdNotFound),
		errors.Is(err, ErrClosed):
		return TxnFatal
	case retriable(err):
		return TxnRetriable
	}
	return TxnAbortable
}
