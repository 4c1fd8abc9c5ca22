// Command admin creates a topic, describes it, changes a config and deletes it.
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
	if err := run(context.Background(), brokers(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func brokers() string {
	if b := os.Getenv("SPOOL_BROKERS"); b != "" {
		return b
	}
	return "127.0.0.1:9092"
}

func run(ctx context.Context, brokers string, out io.Writer) error {
	cl, err := spool.NewClient(spool.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	if err := ad.CreateTopic(ctx, "example-admin", 3, 1, map[string]string{"retention.ms": "86400000"}); err != nil {
		return err
	}
	ds, err := ad.DescribeTopics(ctx, "example-admin")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s has %d partitions\n", ds[0].Name, len(ds[0].Partitions))
	if err := ad.CreatePartitions(ctx, "example-admin", 6); err != nil {
		return err
	}
	week := "604800000"
	if err := ad.AlterTopicConfigs(ctx, "example-admin", map[string]*string{"retention.ms": &week}); err != nil {
		return err
	}
	cfgs, err := ad.DescribeTopicConfigs(ctx, "example-admin", "retention.ms")
	if err != nil {
		return err
	}
	for _, c := range cfgs {
		fmt.Fprintf(out, "%s=%s\n", c.Name, *c.Value)
	}
	ends, err := ad.ListOffsets(ctx, "example-admin", spool.OffsetLatest)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "end offsets of %d partitions\n", len(ends))
	return ad.DeleteTopics(ctx, "example-admin")
}
