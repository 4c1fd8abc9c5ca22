// Command admin creates a topic, grows it, changes a config, reads a broker's config and
// deletes the topic.
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

const topic = "example-admin"

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
	ad := cl.Admin()
	// A topic left by an earlier run that stopped half-way is fine.
	err = ad.CreateTopic(ctx, topic, 3, 1, map[string]string{"retention.ms": "86400000"})
	if err != nil && !errors.Is(err, spool.ErrTopicAlreadyExists) {
		return err
	}
	n, err := partitions(ctx, ad)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s has %d partitions\n", topic, n)
	if n < 6 {
		if err := ad.CreatePartitions(ctx, topic, 6); err != nil {
			return err
		}
	}
	if n, err = partitions(ctx, ad); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s now has %d partitions\n", topic, n)

	week := "604800000"
	if err := ad.AlterTopicConfigs(ctx, topic, map[string]*string{"retention.ms": &week}); err != nil {
		return err
	}
	cfgs, err := ad.DescribeTopicConfigs(ctx, topic, "retention.ms")
	if err != nil {
		return err
	}
	for _, c := range cfgs {
		fmt.Fprintf(out, "%s=%s (default: %v)\n", c.Name, *c.Value, c.Default)
	}

	// Broker configs are read from the broker itself, by its id.
	ci, err := ad.Cluster(ctx)
	if err != nil {
		return err
	}
	bcfgs, err := ad.DescribeConfigs(ctx, spool.BrokerResource(ci.Controller), "num.partitions")
	if err != nil {
		return err
	}
	for _, c := range bcfgs {
		fmt.Fprintf(out, "broker %d %s=%s (default: %v)\n", ci.Controller, c.Name, *c.Value, c.Default)
	}

	ends, err := ad.ListOffsets(ctx, topic, spool.OffsetLatest)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "end offsets of %d partitions\n", len(ends))
	if err := ad.DeleteTopics(ctx, topic); err != nil {
		return err
	}
	fmt.Fprintf(out, "deleted %s\n", topic)
	return nil
}

func partitions(ctx context.Context, ad *spool.Admin) (int, error) {
	ds, err := ad.DescribeTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	if ds[0].Err != nil {
		return 0, fmt.Errorf("describing %s: %w", topic, ds[0].Err)
	}
	return len(ds[0].Partitions), nil
}
