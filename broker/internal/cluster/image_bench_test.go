package cluster

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkMetadataRead compares what a Metadata request for all topics reads: the four
// separate store reads it made before images (each deep-copying), and one Images.Current of
// an unchanged store (an atomic load and a channel check), on the embedded store with 100
// topics of 10 partitions.
func BenchmarkMetadataRead(b *testing.B) {
	e, err := OpenEmbedded(b.TempDir(), Broker{NodeID: 1, Host: "127.0.0.1", Port: 9092})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for i := 0; i < 100; i++ {
		if _, err := e.CreateTopic(context.Background(), fmt.Sprintf("topic-%03d", i), 10, 1, nil, false); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("store-reads", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _, brokers, topics := e.ClusterID(), e.ControllerID(), e.Brokers(), e.Topics()
			if len(brokers) != 1 || len(topics) != 100 {
				b.Fatal("wrong metadata")
			}
		}
	})
	b.Run("image", func(b *testing.B) {
		images := NewImages(e)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			im := images.Current()
			if len(im.Brokers()) != 1 || len(im.Topics()) != 100 {
				b.Fatal("wrong metadata")
			}
		}
	})
}
