// Command producer-roundrobin spreads unkeyed records evenly over a topic's partitions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	spool "github.com/spoolmq/spool/sdk-go"
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
	seeds, err := spool.ParseBrokers(brokers) // "host1:9092,host2:9092"
	if err != nil {
		return err
	}
	cl, err := spool.NewClient(spool.SeedBrokers(seeds...), spool.WithPartitioner(spool.RoundRobin()))
	if err != nil {
		return err
	}
	defer cl.Close()
	// A topic left by an earlier run is fine.
	if err := cl.Admin().CreateTopic(ctx, "example-rr", 3, 1, nil); err != nil && !errors.Is(err, spool.ErrTopicAlreadyExists) {
		return err
	}
	counts := make([]int, 3)
	for i := range 30 {
		r := spool.StringRecord("example-rr", fmt.Sprintf("event %d", i))
		if err := cl.ProduceSync(ctx, r); err != nil {
			return err
		}
		counts[r.Partition]++
	}
	fmt.Fprintf(out, "records per partition: %v\n", counts)
	return nil
}
