package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Version is the SDK version sent to brokers in ApiVersions.
const Version = "0.1.0"

// Acks is the number of acknowledgements a produce request waits for.
type Acks int16

const (
	// AcksNone (acks=0): the broker sends no response; records are done once written.
	AcksNone Acks = 0
	// AcksLeader (acks=1): the leader has appended the records.
	AcksLeader Acks = 1
	// AcksAll (acks=all, -1): every in-sync replica has the records.
	AcksAll Acks = -1
)

// OffsetReset is what a consumer does when its position is missing or out of range
// (Kafka's auto.offset.reset).
type OffsetReset int8

const (
	// ResetEarliest moves to the log start offset.
	ResetEarliest OffsetReset = iota
	// ResetLatest moves to the log end offset.
	ResetLatest
	// ResetNone surfaces the error from Poll.
	ResetNone
)

// IsolationLevel selects which records a consumer sees.
type IsolationLevel int8

const (
	// ReadUncommitted reads up to the high watermark.
	ReadUncommitted IsolationLevel = 0
	// ReadCommitted reads up to the last stable offset and drops the records of aborted
	// transactions.
	ReadCommitted IsolationLevel = 1
)

type config struct {
	seeds           []string
	clientID        string
	dialTimeout     time.Duration
	requestTimeout  time.Duration
	apiTimeout      time.Duration
	retryBackoff    time.Duration
	retryBackoffMax time.Duration
	metadataMaxAge  time.Duration
	logger          *slog.Logger
	dial            func(ctx context.Context, network, addr string) (net.Conn, error)
	propagator      propagation.TextMapPropagator
	tracerProvider  trace.TracerProvider // otel.go
	meterProvider   metric.MeterProvider
	sec             securityConfig

	// producer
	acks            Acks
	idempotent      bool
	idempotentSet   bool
	linger          time.Duration
	maxBatchBytes   int
	maxBatchRecords int
	maxBuffered     int
	maxBufBytes     int64
	blockOnFull     bool
	codec           compress.Codec
	codecLevels     [compress.Zstd + 1]int // per codec, Kafka's level (0: the codec's default)
	partitioner     Partitioner
	onDelivery      func(*Delivery) // WithDeliveryHandler (producer_tracked.go)
	stickyLinger    time.Duration   // StickyPartitioningLinger, applied to partitioner when set
	stickyLingerSet bool
	deliveryTimeout time.Duration
	autoCreate      bool
	produceTimeout  time.Duration
	maxInFlight     int
	txnID           string        // TransactionalID (txn.go)
	txnTimeout      time.Duration // TransactionTimeout

	// consumer
	fetchMaxWait       time.Duration
	fetchMinBytes      int32
	fetchMaxBytes      int32
	fetchPartMaxBytes  int32
	offsetReset        OffsetReset
	isolation          IsolationLevel
	maxBufferedFetches int

	group groupConfig
}

func defaultConfig() config {
	return config{
		seeds:              []string{"127.0.0.1:9092"},
		clientID:           "spool-go",
		dialTimeout:        10 * time.Second,
		requestTimeout:     30 * time.Second,
		apiTimeout:         60 * time.Second,
		retryBackoff:       100 * time.Millisecond,
		retryBackoffMax:    1 * time.Second,
		metadataMaxAge:     5 * time.Minute,
		acks:               AcksAll,
		idempotent:         true,
		linger:             5 * time.Millisecond,
		maxBatchBytes:      1 << 20,
		maxBatchRecords:    10000,
		maxBuffered:        50000,
		maxBufBytes:        32 << 20,
		blockOnFull:        true,
		codec:              compress.None,
		deliveryTimeout:    2 * time.Minute,
		autoCreate:         true,
		produceTimeout:     30 * time.Second,
		maxInFlight:        5,
		txnTimeout:         DefaultTransactionTimeout,
		fetchMaxWait:       500 * time.Millisecond,
		fetchMinBytes:      1,
		fetchMaxBytes:      50 << 20,
		fetchPartMaxBytes:  1 << 20,
		offsetReset:        ResetEarliest,
		isolation:          ReadUncommitted,
		maxBufferedFetches: 4,
		group:              defaultGroupConfig(),
	}
}

// Opt configures a Client. Options are checked once, in NewClient.
type Opt func(*config) error

// SeedBrokers sets the HOST:PORT addresses used to discover the cluster.
// Default: 127.0.0.1:9092.
func SeedBrokers(addrs ...string) Opt {
	return func(c *config) error {
		if len(addrs) == 0 {
			return errors.New("SeedBrokers: at least one address is required")
		}
		c.seeds = append([]string(nil), addrs...)
		return nil
	}
}

// ClientID sets the client id sent in every request header. Default: "spool-go".
func ClientID(id string) Opt { return func(c *config) error { c.clientID = id; return nil } }

// DialTimeout bounds connecting to a broker. Default: 10s.
func DialTimeout(d time.Duration) Opt {
	return durOpt("DialTimeout", d, func(c *config) *time.Duration { return &c.dialTimeout })
}

// RequestTimeout bounds one request/response round trip, plus the time the request lets the
// broker wait on purpose (a Fetch's max wait, a JoinGroup's rebalance), when the caller's
// context has no earlier deadline, and ApiVersions negotiation. Default: 30s.
func RequestTimeout(d time.Duration) Opt {
	return durOpt("RequestTimeout", d, func(c *config) *time.Duration { return &c.requestTimeout })
}

// APITimeout bounds a call the client retries (admin calls, commits and other requests to the
// group coordinator, offset lookups), retries included, when the caller's context has no
// deadline (Kafka's default.api.timeout.ms). Default: 60s.
func APITimeout(d time.Duration) Opt {
	return durOpt("APITimeout", d, func(c *config) *time.Duration { return &c.apiTimeout })
}

func durOpt(name string, d time.Duration, field func(*config) *time.Duration) Opt {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%s: must be positive, got %v", name, d)
		}
		*field(c) = d
		return nil
	}
}

// RetryBackoff sets the first and the largest wait between retries of retriable errors; the
// wait doubles per attempt. Default: 100ms, 1s.
func RetryBackoff(first, maxWait time.Duration) Opt {
	return func(c *config) error {
		if first <= 0 || maxWait < first {
			return fmt.Errorf("RetryBackoff: need 0 < first <= max, got %v, %v", first, maxWait)
		}
		c.retryBackoff, c.retryBackoffMax = first, maxWait
		return nil
	}
}

// MetadataMaxAge sets how often metadata is refreshed even without errors. Default: 5m.
func MetadataMaxAge(d time.Duration) Opt {
	return func(c *config) error {
		if d < time.Second {
			return fmt.Errorf("MetadataMaxAge: must be at least 1s, got %v", d)
		}
		c.metadataMaxAge = d
		return nil
	}
}

// Dialer sets the function that opens broker connections (for proxies, TLS or tests); it
// gets the broker's HOST:PORT and a context bounded by DialTimeout. Default: a net.Dialer.
func Dialer(fn func(ctx context.Context, network, addr string) (net.Conn, error)) Opt {
	return func(c *config) error {
		if fn == nil {
			return errors.New("Dialer: nil")
		}
		c.dial = fn
		return nil
	}
}

// Logger sets a logger for connection and retry events. Default: none.
func Logger(l *slog.Logger) Opt { return func(c *config) error { c.logger = l; return nil } }

// RequiredAcks sets the produce acks. Default: AcksAll. Anything but AcksAll turns idempotence
// off unless Idempotence(true) was given, which then conflicts.
func RequiredAcks(a Acks) Opt {
	return func(c *config) error {
		if a != AcksNone && a != AcksLeader && a != AcksAll {
			return fmt.Errorf("RequiredAcks: %d is not 0, 1 or -1 (all)", a)
		}
		c.acks = a
		return nil
	}
}

// Idempotence turns the idempotent producer on or off (InitProducerId, per-partition sequence
// numbers, so retries never duplicate or reorder). Default: on. Requires AcksAll.
func Idempotence(on bool) Opt {
	return func(c *config) error { c.idempotent, c.idempotentSet = on, true; return nil }
}

// Linger sets how long a partition's batch waits for more records before it is sent. Zero
// sends as soon as a request to the partition's leader may go out (see MaxInFlight).
// Default: 5ms.
func Linger(d time.Duration) Opt {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("Linger: negative %v", d)
		}
		c.linger = d
		return nil
	}
}

// MaxInFlight bounds the produce requests outstanding on one broker connection (Kafka's
// max.in.flight.requests.per.connection); each request carries at most one batch per
// partition, so a partition has at most n batches in flight. With idempotence, order holds
// across retries because every batch keeps its sequence numbers and is resent behind its
// predecessors; without it, a retried batch may land after a later one. Brokers remember the
// last 5 batches per producer, so n > 5 turns idempotence off unless Idempotence(true) was
// given, which then conflicts. Default: 5.
func MaxInFlight(n int) Opt {
	return func(c *config) error {
		if n < 1 || n > 1000 {
			return fmt.Errorf("MaxInFlight: %d outside [1, 1000]", n)
		}
		c.maxInFlight = n
		return nil
	}
}

// MaxBatchBytes caps the uncompressed size of one partition's batch. Default: 1 MiB.
func MaxBatchBytes(n int) Opt {
	return func(c *config) error {
		if n < 1024 || n > 64<<20 {
			return fmt.Errorf("MaxBatchBytes: %d outside [1 KiB, 64 MiB]", n)
		}
		c.maxBatchBytes = n
		return nil
	}
}

// MaxBatchRecords caps the records of one partition's batch (librdkafka's
// batch.num.messages). A batch that holds a large share of what may be buffered at once
// (MaxBufferedRecords) leaves nothing to send while it waits for its acknowledgement, so
// smaller batches can be faster: several then travel at once. Default: 10000, librdkafka's.
func MaxBatchRecords(n int) Opt {
	return func(c *config) error {
		if n < 1 || n > 1000000 {
			return fmt.Errorf("MaxBatchRecords: %d outside [1, 1000000]", n)
		}
		c.maxBatchRecords = n
		return nil
	}
}

// MaxBufferedRecords bounds the records produced but not yet acknowledged. Default: 50000,
// as franz-go's: with acks=all a producer's throughput is at most this many records per
// round trip (fsync included), and 10000 kept a fast producer blocked on it.
func MaxBufferedRecords(n int) Opt {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("MaxBufferedRecords: %d < 1", n)
		}
		c.maxBuffered = n
		return nil
	}
}

// MaxBufferedBytes bounds the bytes of the records produced but not yet acknowledged: their
// keys, values and headers plus 21 bytes of framing each (a record's size in its batch, about).
// A record larger than the bound still goes when nothing else is buffered. Default: 32 MiB,
// the Java producer's buffer.memory: a bound on the producer's memory (each buffered byte is
// held once, in its batch) that still leaves MaxInFlight requests of full 1 MiB batches to
// several partitions' leaders.
func MaxBufferedBytes(n int64) Opt {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("MaxBufferedBytes: %d < 1", n)
		}
		c.maxBufBytes = n
		return nil
	}
}

// BlockOnFullBuffer chooses between blocking Produce until space frees (true) and failing the
// record with ErrBufferFull (false) when the buffer is full. Default: true.
func BlockOnFullBuffer(block bool) Opt {
	return func(c *config) error { c.blockOnFull = block; return nil }
}

// Compression sets the batch codec. Default: compress.None.
func Compression(codec compress.Codec) Opt {
	return func(c *config) error {
		if !codec.Valid() {
			return fmt.Errorf("Compression: unknown codec %d", codec)
		}
		c.codec = codec
		return nil
	}
}

// CompressionLevel sets the level a codec compresses at, in Kafka's terms as the Java
// producer's compression.gzip.level (1 to 9, or -1), compression.lz4.level (1 to 17) and
// compression.zstd.level (-131072 to 22) take it; it applies when Compression selects that
// codec. A level out of the codec's range, or a level for a codec without levels (snappy,
// none), is an error. Default: the codec's default (gzip -1, lz4 9, zstd 3).
func CompressionLevel(codec compress.Codec, level int) Opt {
	return func(c *config) error {
		if _, _, _, ok := compress.LevelRange(codec); !ok {
			return fmt.Errorf("CompressionLevel: %s has no levels", codec)
		}
		if err := compress.CheckLevel(codec, level); err != nil {
			return fmt.Errorf("CompressionLevel: %w", err)
		}
		c.codecLevels[codec] = level
		return nil
	}
}

// WithPartitioner sets the partitioner. Default: DefaultPartitioner() (keyed records by Hash,
// unkeyed round-robin).
func WithPartitioner(p Partitioner) Opt {
	return func(c *config) error {
		if p == nil {
			return errors.New("WithPartitioner: nil")
		}
		c.partitioner = p
		return nil
	}
}

// StickyPartitioningLinger sets how long the partitioners of PartitionerByName that place
// records without a usable key at random (murmur2_random, consistent_random) keep them on one
// partition per topic before picking another (librdkafka's sticky.partitioning.linger.ms);
// 0 picks a partition per record. Default: DefaultStickyLinger. Other partitioners ignore it.
func StickyPartitioningLinger(d time.Duration) Opt {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("StickyPartitioningLinger: negative %v", d)
		}
		c.stickyLinger, c.stickyLingerSet = d, true
		return nil
	}
}

// AllowAutoTopicCreation sets whether the producer asks the broker to create a topic it
// produces to and the broker does not have (Metadata's AllowAutoTopicCreation, from v4; older
// versions always ask). The broker creates it only with auto.create.topics.enable=true, Kafka's
// default. Either way a record whose topic does not exist waits for it up to DeliveryTimeout,
// then fails with wire.ErrUnknownTopicOrPartition; Produce does not block meanwhile. Default:
// true, as the Java producer and librdkafka's producers (conf key allow.auto.create.topics).
// Consuming never asks for a topic to be created (librdkafka's consumer default).
func AllowAutoTopicCreation(allow bool) Opt {
	return func(c *config) error {
		c.autoCreate = allow
		return nil
	}
}

// DeliveryTimeout bounds how long a record may be retried before its callback gets the last
// error. Default: 2m.
func DeliveryTimeout(d time.Duration) Opt {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("DeliveryTimeout: must be positive, got %v", d)
		}
		c.deliveryTimeout = d
		return nil
	}
}

// FetchMaxWait sets how long the broker may hold a fetch waiting for data. Default: 500ms.
func FetchMaxWait(d time.Duration) Opt {
	return func(c *config) error {
		if d < 0 || d > time.Minute {
			return fmt.Errorf("FetchMaxWait: %v outside [0, 1m]", d)
		}
		c.fetchMaxWait = d
		return nil
	}
}

// FetchMaxBytes sets the response and per-partition size caps of one fetch.
// Default: 50 MiB and 1 MiB.
func FetchMaxBytes(total, perPartition int32) Opt {
	return func(c *config) error {
		if total < 1 || perPartition < 1 || perPartition > total {
			return fmt.Errorf("FetchMaxBytes: need 0 < perPartition <= total, got %d, %d", total, perPartition)
		}
		c.fetchMaxBytes, c.fetchPartMaxBytes = total, perPartition
		return nil
	}
}

// AutoOffsetReset sets the policy for a missing or out-of-range position. Default: ResetEarliest.
func AutoOffsetReset(r OffsetReset) Opt {
	return func(c *config) error {
		if r < ResetEarliest || r > ResetNone {
			return fmt.Errorf("AutoOffsetReset: unknown policy %d", r)
		}
		c.offsetReset = r
		return nil
	}
}

// Isolation sets the consumer's isolation level. Default: ReadUncommitted.
func Isolation(l IsolationLevel) Opt {
	return func(c *config) error {
		if l != ReadUncommitted && l != ReadCommitted {
			return fmt.Errorf("Isolation: unknown level %d", l)
		}
		c.isolation = l
		return nil
	}
}

// TransactionalID makes the client a transactional producer (Kafka's transactional.id):
// InitTransactions, then records produced between BeginTransaction and CommitTransaction (or
// AbortTransaction) become visible to read_committed consumers all at once, or never. The id
// must stay the same across restarts of the same logical producer, so that a new instance
// fences the old one. It implies idempotence, and conflicts with Idempotence(false),
// RequiredAcks other than AcksAll and MaxInFlight above 5. Default: none.
func TransactionalID(id string) Opt {
	return func(c *config) error {
		if id == "" {
			return errors.New("TransactionalID: empty id")
		}
		c.txnID = id
		return nil
	}
}

// TransactionTimeout is how long the coordinator lets a transaction run before aborting it
// (Kafka's transaction.timeout.ms); the broker's transaction.max.timeout.ms bounds it. Default:
// DefaultTransactionTimeout (one minute).
func TransactionTimeout(d time.Duration) Opt {
	return func(c *config) error {
		if d < time.Millisecond || d > time.Duration(1<<31-1)*time.Millisecond {
			return fmt.Errorf("TransactionTimeout: %v out of range", d)
		}
		c.txnTimeout = d
		return nil
	}
}

func (c *config) validate() error {
	if c.txnID != "" {
		switch {
		case c.idempotentSet && !c.idempotent:
			return errors.New("TransactionalID requires idempotence: drop Idempotence(false)")
		case c.acks != AcksAll:
			return errors.New("TransactionalID requires RequiredAcks(AcksAll)")
		case c.maxInFlight > 5:
			return fmt.Errorf("TransactionalID allows at most MaxInFlight(5), got %d", c.maxInFlight)
		}
		c.idempotent = true
	}
	if c.idempotent && c.acks != AcksAll {
		if c.idempotentSet {
			return errors.New("Idempotence(true) requires RequiredAcks(AcksAll)")
		}
		c.idempotent = false
	}
	if c.idempotent && c.maxInFlight > 5 {
		if c.idempotentSet {
			return fmt.Errorf("Idempotence(true) allows at most MaxInFlight(5), got %d", c.maxInFlight)
		}
		c.idempotent = false
	}
	if err := c.group.validate(); err != nil {
		return err
	}
	if err := c.sec.resolve(); err != nil {
		return err
	}
	if c.partitioner == nil {
		c.partitioner = DefaultPartitioner()
	}
	if c.stickyLingerSet {
		c.partitioner = applyStickyLinger(c.partitioner, c.stickyLinger)
	}
	if c.dial == nil {
		d := &net.Dialer{Timeout: c.dialTimeout}
		c.dial = d.DialContext
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
