package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/conformance"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// franzClient drives franz-go (github.com/twmb/franz-go/pkg/kgo), the reference driver.
type franzClient struct {
	opts     []kgo.Opt // common to the producing and consuming clients
	prod     *kgo.Client
	cons     *kgo.Client
	group    bool
	assigned *assignment
}

// franzCodecs and franzBalancers map the driver protocol's names to franz-go's.
var (
	franzCodecs = map[string]kgo.CompressionCodec{"": kgo.NoCompression(), "none": kgo.NoCompression(),
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	franzBalancers = map[string]kgo.GroupBalancer{"range": kgo.RangeBalancer(), "roundrobin": kgo.RoundRobinBalancer(),
		"cooperative-sticky": kgo.CooperativeStickyBalancer()}
)

func openFranz(o conformance.Request, assigned *assignment) (client, string, error) {
	common := []kgo.Opt{kgo.SeedBrokers(o.Bootstrap), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	sec, err := franzSecurity(o.Config)
	if err != nil {
		return nil, "", fmt.Errorf("open: %w", err)
	}
	common = append(common, sec...)
	prod := append([]kgo.Opt{}, common...)
	idempotent := o.Idempotent == nil || *o.Idempotent
	switch o.Acks {
	case "0":
		prod = append(prod, kgo.RequiredAcks(kgo.NoAck()))
		idempotent = false
	case "1":
		prod = append(prod, kgo.RequiredAcks(kgo.LeaderAck()))
		idempotent = false
	case "", "all", "-1":
	default:
		return nil, "", fmt.Errorf("open: acks %q", o.Acks)
	}
	if !idempotent {
		prod = append(prod, kgo.DisableIdempotentWrite())
	}
	codec, ok := franzCodecs[o.Compression]
	if !ok {
		return nil, "", fmt.Errorf("open: compression %q", o.Compression)
	}
	prod = append(prod, kgo.ProducerBatchCompression(codec))
	switch o.Partitioner {
	case "", "default":
	case "manual":
		prod = append(prod, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	default:
		return nil, "", fmt.Errorf("open: partitioner %q", o.Partitioner)
	}
	pc, err := kgo.NewClient(prod...)
	if err != nil {
		return nil, "", fmt.Errorf("open: %w", err)
	}
	c := &franzClient{opts: common, prod: pc, group: o.Group != "", assigned: assigned}
	if c.group {
		group := append([]kgo.Opt{}, common...)
		if o.SessionTimeoutMs > 0 {
			group = append(group, kgo.SessionTimeout(time.Duration(o.SessionTimeoutMs)*time.Millisecond),
				kgo.HeartbeatInterval(time.Duration(o.SessionTimeoutMs)*time.Millisecond/10))
		}
		if o.Balancer != "" {
			balancer, ok := franzBalancers[o.Balancer]
			if !ok {
				pc.Close()
				return nil, "", fmt.Errorf("open: balancer %q", o.Balancer)
			}
			group = append(group, kgo.Balancers(balancer))
		}
		c.cons, err = kgo.NewClient(append(group, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topics...), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { assigned.add(m) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { assigned.remove(m) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { assigned.remove(m) }))...)
		if err != nil {
			pc.Close()
			return nil, "", fmt.Errorf("open: %w", err)
		}
	}
	return c, "franz-go", nil
}

func (c *franzClient) produce(ctx context.Context, recs []conformance.DriverRecord) []conformance.ProduceResult {
	return produceEach(len(recs), func(i int, done func(int32, int64, error)) {
		r := recs[i]
		rec := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: at(r.TimestampMs)}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		c.prod.Produce(ctx, rec, func(rec *kgo.Record, err error) { done(rec.Partition, rec.Offset, err) })
	}, func() { c.prod.Flush(ctx) })
}

func (c *franzClient) consume(ctx context.Context, topic string, from int64, count int, wait time.Duration) ([]conformance.DriverRecord, error) {
	if c.cons != nil {
		return nil, errors.New("consume: the client consumes already")
	}
	o := kgo.NewOffset().AtStart()
	if from >= 0 {
		o = kgo.NewOffset().At(from)
	}
	var err error
	c.cons, err = kgo.NewClient(append(c.opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(o))...)
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	return c.poll(ctx, count, wait)
}

func (c *franzClient) poll(ctx context.Context, count int, wait time.Duration) ([]conformance.DriverRecord, error) {
	if c.cons == nil {
		return nil, errors.New("poll: the client consumes nothing")
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []conformance.DriverRecord
	for len(out) < count || count == 0 {
		fs := c.cons.PollRecords(ctx, count-len(out))
		fs.EachRecord(func(r *kgo.Record) {
			var hs []spool.Header
			for _, h := range r.Headers {
				hs = append(hs, spool.Header{Key: []byte(h.Key), Value: h.Value})
			}
			out = append(out, toDriver(r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp, hs))
		})
		if ctx.Err() != nil {
			return out, nil // what came within the wait
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			// A retriable error (COORDINATOR_NOT_AVAILABLE while a fresh cluster creates
			// __consumer_offsets) is one franz-go retries itself: keep polling.
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !kerr.IsRetriable(err) {
				errs = append(errs, fmt.Errorf("%s/%d: %w", t, p, err))
			}
		})
		if len(errs) > 0 {
			return out, fmt.Errorf("poll: %w", errors.Join(errs...))
		}
	}
	return out, nil
}

func (c *franzClient) commit(ctx context.Context) error {
	if !c.group {
		return errors.New("commit: the client is not in a group")
	}
	return c.cons.CommitUncommittedOffsets(ctx)
}

func (c *franzClient) close() {
	if c.cons != nil {
		c.cons.Close()
	}
	c.prod.Close()
}

// franzSecurity are franz-go's options for librdkafka's security keys (Request.Config).
func franzSecurity(keys map[string]string) ([]kgo.Opt, error) {
	sec, err := conformance.ParseSecurity(keys)
	if err != nil || sec == nil {
		return nil, err
	}
	var opts []kgo.Opt
	if sec.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(sec.TLS))
	}
	switch sec.Mechanism {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: sec.Username, Pass: sec.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: sec.Username, Pass: sec.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: sec.Username, Pass: sec.Password}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("SASL mechanism %s: franz-go driver knows PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", sec.Mechanism)
	}
	return opts, nil
}
