package group

import (
	"slices"
	"testing"
)

func TestSubscriptionTopics(t *testing.T) {
	// Subscription v1: version, topics ["a", "bc"], user data (null), owned partitions (none).
	v1 := []byte{0, 1, 0, 0, 0, 2, 0, 1, 'a', 0, 2, 'b', 'c', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	got, err := subscriptionTopics(v1)
	if err != nil || !slices.Equal(got, []string{"a", "bc"}) {
		t.Fatalf("v1: %q %v", got, err)
	}
	// A version this broker does not know yet is read as the newest it knows; what follows is
	// ignored.
	v9 := append([]byte{0, 9}, v1[2:]...)
	v9 = append(v9, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a)
	if got, err := subscriptionTopics(v9); err != nil || !slices.Equal(got, []string{"a", "bc"}) {
		t.Fatalf("v9: %q %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 0, 0, 0, 0, 9, 0, 1, 'a'}, {0, 0, 0xff, 0xff, 0xff, 0xff}, {0xff, 0xff, 0, 0, 0, 0},
		v1[:len(v1)-1], // cut inside the owned partitions: the whole subscription must decode
	} {
		if _, err := subscriptionTopics(bad); err == nil {
			t.Errorf("% x decoded", bad)
		}
	}
}

func FuzzSubscriptionTopics(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 2, 0, 1, 'a', 0, 2, 'b', 'c', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := subscriptionTopics(b)
		if err == nil && len(ts) > len(b)/2 {
			t.Fatalf("%d topics from %d bytes", len(ts), len(b))
		}
	})
}
