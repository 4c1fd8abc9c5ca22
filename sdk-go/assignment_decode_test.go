package spool

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgAssignment encodes an assignment with franz-go's kmsg, an encoder we did not write.
func kmsgAssignment(version int16, parts map[string][]int32, userData []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = version
	for _, t := range slices.Sorted(maps.Keys(parts)) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t, parts[t]
		a.Topics = append(a.Topics, at)
	}
	a.UserData = userData
	return a.AppendTo(nil)
}

func TestDecodeConsumerAssignment(t *testing.T) {
	want := map[string][]int32{"orders": {0, 2}, "clicks": {1}, "empty": {}}
	for v := int16(0); v <= 3; v++ {
		got, err := assignedPartitions(kmsgAssignment(v, want, []byte("ud")))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if !maps.EqualFunc(got, want, slices.Equal[[]int32]) {
			t.Fatalf("v%d: %v, want %v", v, got, want)
		}
	}
	if got, err := assignedPartitions(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty bytes: %v %v", got, err)
	}
	good := kmsgAssignment(1, want, nil)
	for name, b := range map[string][]byte{
		"truncated":        good[:len(good)-1],
		"negative version": {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
		"huge count":       {0, 0, 0x7f, 0xff, 0xff, 0xff},
		"one byte":         {0},
	} {
		if got, err := assignedPartitions(b); err == nil {
			t.Errorf("%s: decoded %v", name, got)
		}
	}
}

func FuzzDecodeConsumerAssignment(f *testing.F) {
	f.Add(kmsgAssignment(0, map[string][]int32{"a": {1, 2}}, nil))
	f.Add(kmsgAssignment(3, map[string][]int32{"a": {}, "b": {7}}, []byte{1}))
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := assignedPartitions(b)
		if err != nil {
			return
		}
		n := 0
		for _, ps := range got {
			n += len(ps)
		}
		if n*4 > len(b) {
			t.Fatalf("%d partitions from %d bytes", n, len(b))
		}
	})
}
