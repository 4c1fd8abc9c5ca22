// Command consumer produces a few records and reads them back from the start of every
// partition with the assign-and-poll consumer.
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
	cl, err := spool.NewClient(spool.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	// A topic left by an earlier run is fine.
	if err := cl.Admin().CreateTopic(ctx, "example-consume", 2, 1, nil); err != nil && !errors.Is(err, spool.ErrTopicAlreadyExists) {
		return err
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, spool.KeyStringRecord("example-consume", fmt.Sprint(i%2), fmt.Sprint(i))); err != nil {
			return err
		}
	}
	if err := cl.AssignTopic(ctx, "example-consume", spool.OffsetStart()); err != nil {
		return err
	}
	n := 0
	for r, err := range cl.Records(ctx) {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s[%d]@%d %s=%s\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
		if n++; n == 10 {
			break
		}
	}
	return nil
}
