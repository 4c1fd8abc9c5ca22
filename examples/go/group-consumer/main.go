// Command group-consumer joins a consumer group, consumes what its partitions hold and
// commits the offsets of what it processed, so that the next run of the same group resumes
// after them. Run several copies at once to see the partitions split between them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	spool "github.com/spoolmq/spool/sdk-go"
)

const (
	topic = "example-group"
	group = "example-group-consumers"
)

func main() {
	brokers := os.Getenv("SPOOL_BROKERS")
	if brokers == "" {
		brokers = "127.0.0.1:9092"
	}
	if err := run(context.Background(), brokers, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, brokers string, out io.Writer) error {
	if err := produce(ctx, brokers); err != nil {
		return err
	}
	seeds, err := spool.ParseBrokers(brokers) // "host1:9092,host2:9092"
	if err != nil {
		return err
	}
	var mu sync.Mutex // callbacks run on the group's goroutine, records on this one
	cl, err := spool.NewClient(spool.SeedBrokers(seeds...),
		spool.ConsumerGroup(group),
		spool.ConsumeTopics(topic),
		spool.DisableAutoCommit(), // commit below, after processing
		spool.OnAssigned(func(_ context.Context, ps map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(out, "assigned %v\n", ps)
		}),
		spool.OnRevoked(func(_ context.Context, ps map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(out, "revoked %v\n", ps)
		}),
	)
	if err != nil {
		return err
	}
	defer cl.Close()

	for n := 0; n < 9; {
		recs, err := cl.Poll(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		for _, r := range recs {
			fmt.Fprintf(out, "%s[%d]@%d %s\n", r.Topic, r.Partition, r.Offset, r.Value)
		}
		mu.Unlock()
		n += len(recs)
		// Everything Poll returned is processed: commit it before asking for more.
		if err := cl.CommitUncommitted(ctx); err != nil {
			return err
		}
	}
	member, generation := cl.GroupMemberID()
	fmt.Fprintf(out, "committed as member %s of generation %d\n", member, generation)
	return nil
}

func produce(ctx context.Context, brokers string) error {
	seeds, err := spool.ParseBrokers(brokers) // "host1:9092,host2:9092"
	if err != nil {
		return err
	}
	cl, err := spool.NewClient(spool.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	// A topic left by an earlier run is fine.
	if err := cl.Admin().CreateTopic(ctx, topic, 3, 1, nil); err != nil && !errors.Is(err, spool.ErrTopicAlreadyExists) {
		return err
	}
	for i := range 9 {
		if err := cl.ProduceSync(ctx, spool.StringRecord(topic, fmt.Sprint("order-", i))); err != nil {
			return err
		}
	}
	return nil
}
