package cluster

import (
	"sync"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// racingStore is a metadata store whose state moves on while it is being read: each of its
// first races reads changes it (a new version, its Changes channel closed), as a ZooKeeper
// watch landing between two reads of a request would. Version v has the one broker v, the
// controller v and topic "t" led by v. Methods a metadata read does not call are the nil
// embedded interface's (they panic).
type racingStore struct {
	Metadata
	mu      sync.Mutex
	version int32
	races   int
	reads   int
	changed chan struct{}
}

func newRacingStore(races int) *racingStore {
	return &racingStore{version: 1, races: races, changed: make(chan struct{})}
}

func (r *racingStore) read() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	v := r.version
	if r.races > 0 {
		r.races--
		r.bumpLocked()
	}
	return v
}

func (r *racingStore) bumpLocked() {
	r.version++
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *racingStore) bump() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bumpLocked()
}

func (r *racingStore) ClusterID() string   { return "racing" }
func (r *racingStore) ControllerID() int32 { return r.read() }
func (r *racingStore) Brokers() []Broker   { return []Broker{{NodeID: r.read()}} }
func (r *racingStore) Topics() []Topic     { return []Topic{racingTopic(r.read())} }
func (r *racingStore) Changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func racingTopic(v int32) Topic {
	return Topic{Name: "t", ID: wire.UUID{1}, Partitions: []Partition{{Index: 0, Leader: v, LeaderEpoch: v, Replicas: []int32{v}, ISR: []int32{v}}}}
}

// consistent reports whether an image's parts are all of one version of the racing store.
func consistent(im *Image) bool {
	t, ok := im.Topic("t")
	byID, okID := im.TopicByID(wire.UUID{1})
	return ok && okID && len(im.Brokers()) == 1 && im.Brokers()[0].NodeID == im.Controller &&
		t.Partitions[0].Leader == im.Controller && byID.Partitions[0].Leader == im.Controller
}

func TestImageIsOneVersion(t *testing.T) {
	cases := []struct {
		rule       string
		races      int
		consistent bool
	}{
		{"a store that does not change while read gives one version at once", 0, true},
		{"a change between two reads of a build makes it read again", 1, true},
		{"changes overtaking several builds are read again until one build sees no change", 2 * 3, true},
		{"a store that never settles is given up on after the retries: the last read is used", 1000, false},
	}
	for _, c := range cases {
		st := newRacingStore(c.races)
		im := NewImages(st).Current()
		if consistent(im) != c.consistent {
			t.Errorf("%s: image with controller %d, brokers %v, topics %v: consistent %v, want %v",
				c.rule, im.Controller, im.Brokers(), im.Topics(), !c.consistent, c.consistent)
		}
	}
}

func TestImageSharedUntilAChange(t *testing.T) {
	st := newRacingStore(0)
	images := NewImages(st)
	first := images.Current()
	readsAfterFirst := st.reads
	if again := images.Current(); again != first || st.reads != readsAfterFirst {
		t.Fatalf("a second request without a change got image %d (reads %d→%d), want the same image %d and no read of the store",
			again.Version, readsAfterFirst, st.reads, first.Version)
	}
	st.bump()
	next := images.Current()
	if next == first || next.Version <= first.Version || next.Controller != first.Controller+1 || !consistent(next) {
		t.Fatalf("after a change: image %d with controller %d, want a newer image of version %d", next.Version, next.Controller, first.Controller+1)
	}
	images.Invalidate()
	if inv := images.Current(); inv == next || inv.Version <= next.Version {
		t.Fatalf("after Invalidate: image %d, want a new one after %d", inv.Version, next.Version)
	}
}

// TestImageConcurrentReaders: requests racing a stream of changes share images without locks
// (run with -race), each reader sees the versions only move forward, and once the changes stop
// the image is of the last version.
func TestImageConcurrentReaders(t *testing.T) {
	st := newRacingStore(0)
	images := NewImages(st)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			st.bump()
			images.Current()
		}
		close(stop)
	}()
	errs := make(chan string, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				im := images.Current()
				if im.Version < last {
					errs <- "a reader saw an older image after a newer one"
					return
				}
				last = im.Version
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	st.mu.Lock()
	want := st.version
	st.mu.Unlock()
	if im := images.Current(); !consistent(im) || im.Controller != want {
		t.Fatalf("the image after the changes stopped: controller %d, brokers %v; want version %d throughout", im.Controller, im.Brokers(), want)
	}
}
