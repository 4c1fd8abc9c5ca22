package spool_test

import (
	"testing"
)

// DescribeLogDirs reports one replica per partition on a single broker, with the bytes
// produced to it, against our broker and franz-go's in-memory Kafka.
func TestAdminDescribeLogDirs(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, addr string) {
		cl := newClient(t, addr)
		ad := cl.Admin()
		topic := createTopic(t, cl, 2)
		other := createTopic(t, cl, 1)
		produceEach(t, cl, topic, 2, 10)
		dirs, err := ad.DescribeLogDirs(testCtx(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 2 {
			t.Fatalf("%d replicas described, want the 2 of %s: %+v", len(dirs), topic, dirs)
		}
		for i, d := range dirs {
			if d.Topic != topic || d.Partition != int32(i) || d.Size <= 0 || d.Dir == "" || d.OffsetLag != 0 {
				t.Errorf("replica %d: %+v, want %s-%d with a size, a directory and no lag", i, d, topic, i)
			}
		}
		all, err := ad.DescribeLogDirs(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range all {
			found = found || d.Topic == other && d.Size == 0
		}
		if !found {
			t.Errorf("every topic: the empty %s is missing from %+v", other, all)
		}
	})
}
