// Command producer-roundrobin spreads unkeyed records evenly over a topic's partitions.
package main

import (
	"context"
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
	cl, err := spool.NewClient(spool.SeedBrokers(brokers), spool.WithPartitioner(spool.RoundRobin()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Admin().CreateTopic(ctx, "example-rr", 3, 1, nil); err != nil {
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
