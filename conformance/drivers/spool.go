package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoolmq/spool/conformance"
	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// spoolClient drives the Spool Go SDK.
type spoolClient struct {
	cl    *spool.Client
	group bool
}

func openSpool(o conformance.Request, assigned *assignment) (client, string, error) {
	opts := []spool.Opt{spool.SeedBrokers(o.Bootstrap), spool.RetryBackoff(20*time.Millisecond, 500*time.Millisecond)}
	switch o.Acks {
	case "0":
		opts = append(opts, spool.RequiredAcks(spool.AcksNone))
	case "1":
		opts = append(opts, spool.RequiredAcks(spool.AcksLeader))
	case "", "all", "-1":
	default:
		return nil, "", fmt.Errorf("open: acks %q", o.Acks)
	}
	if o.Idempotent != nil {
		opts = append(opts, spool.Idempotence(*o.Idempotent))
	}
	if o.Compression != "" {
		c, err := compress.ParseCodec(o.Compression)
		if err != nil {
			return nil, "", fmt.Errorf("open: %w", err)
		}
		opts = append(opts, spool.Compression(c))
	}
	switch o.Partitioner {
	case "", "default":
	case "manual":
		opts = append(opts, spool.WithPartitioner(spool.ManualPartitioner()))
	default:
		return nil, "", fmt.Errorf("open: partitioner %q", o.Partitioner)
	}
	if o.SessionTimeoutMs > 0 {
		opts = append(opts, spool.SessionTimeout(time.Duration(o.SessionTimeoutMs)*time.Millisecond),
			spool.HeartbeatInterval(time.Duration(o.SessionTimeoutMs)*time.Millisecond/10))
	}
	if o.Balancer != "" {
		opts = append(opts, spool.Balancers(o.Balancer))
	}
	if len(o.Config) > 0 {
		// librdkafka's security keys, as the SDK's one table reads them.
		conf, err := spool.NewConfFromMap(o.Config)
		if err != nil {
			return nil, "", fmt.Errorf("open: %w", err)
		}
		opts = append(opts, conf.Opts()...)
	}
	if o.Group != "" {
		opts = append(opts, spool.ConsumerGroup(o.Group), spool.ConsumeTopics(o.Topics...), spool.DisableAutoCommit(),
			spool.OnAssigned(func(_ context.Context, m map[string][]int32) { assigned.add(m) }),
			spool.OnRevoked(func(_ context.Context, m map[string][]int32) { assigned.remove(m) }),
			spool.OnLost(func(_ context.Context, m map[string][]int32) { assigned.remove(m) }))
	}
	cl, err := spool.NewClient(opts...)
	if err != nil {
		return nil, "", fmt.Errorf("open: %w", err)
	}
	return &spoolClient{cl: cl, group: o.Group != ""}, "sdk-go", nil
}

func (c *spoolClient) produce(ctx context.Context, recs []conformance.DriverRecord) []conformance.ProduceResult {
	return produceEach(len(recs), func(i int, done func(int32, int64, error)) {
		r := recs[i]
		rec := &spool.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: at(r.TimestampMs)}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, spool.Header{Key: []byte(h.Key), Value: h.Value})
		}
		c.cl.Produce(ctx, rec, func(rec *spool.Record, err error) { done(rec.Partition, rec.Offset, err) })
	}, func() { c.cl.Flush(ctx) })
}

func (c *spoolClient) consume(ctx context.Context, topic string, from int64, count int, wait time.Duration) ([]conformance.DriverRecord, error) {
	o := spool.OffsetStart()
	if from >= 0 {
		o = spool.OffsetAt(from)
	}
	if err := c.cl.AssignTopic(ctx, topic, o); err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	return c.poll(ctx, count, wait)
}

func (c *spoolClient) poll(ctx context.Context, count int, wait time.Duration) ([]conformance.DriverRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []conformance.DriverRecord
	for len(out) < count || count == 0 {
		rs, err := c.cl.Poll(ctx)
		for _, r := range rs {
			out = append(out, toDriver(r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp, r.Headers))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return out, nil // what came within the wait
		}
		if err != nil {
			return out, fmt.Errorf("poll: %w", err)
		}
	}
	return out, nil
}

func (c *spoolClient) commit(ctx context.Context) error {
	if !c.group {
		return errors.New("commit: the client is not in a group")
	}
	return c.cl.CommitUncommitted(ctx)
}

func (c *spoolClient) close() { c.cl.Close() }

func toDriver(topic string, p int32, off int64, key, value []byte, ts time.Time, hs []spool.Header) conformance.DriverRecord {
	r := conformance.DriverRecord{Topic: topic, Partition: p, Offset: off, Key: key, Value: value, TimestampMs: ms(ts)}
	for _, h := range hs {
		r.Headers = append(r.Headers, conformance.DriverHeader{Key: string(h.Key), Value: h.Value})
	}
	return r
}
