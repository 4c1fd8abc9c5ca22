// Command producer-keyed produces keyed records asynchronously; each key always lands on the
// partition the Java client would choose (murmur2).
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
	cl, err := spool.NewClient(spool.SeedBrokers(seeds...)) // keyed records go by Hash by default
	if err != nil {
		return err
	}
	defer cl.Close()
	// A topic left by an earlier run is fine.
	if err := cl.Admin().CreateTopic(ctx, "example-keyed", 6, 1, nil); err != nil && !errors.Is(err, spool.ErrTopicAlreadyExists) {
		return err
	}
	var mu sync.Mutex
	where := map[string]int32{}
	var firstErr error
	for i := range 60 {
		key := fmt.Sprintf("key%d", i%3+1)
		cl.Produce(ctx, spool.KeyStringRecord("example-keyed", key, fmt.Sprint(i)), func(r *spool.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			where[string(r.Key)] = r.Partition
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if firstErr != nil {
		return firstErr
	}
	fmt.Fprintf(out, "key1→%d key2→%d key3→%d\n", where["key1"], where["key2"], where["key3"])
	return nil
}
