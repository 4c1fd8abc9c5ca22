package cluster

import (
	"fmt"
	"sync"
	"testing"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
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

// DynamicBrokerConfigs of the racing store: the default's carry its version too.
func (r *racingStore) DynamicBrokerConfigs() map[string]map[string]string {
	return map[string]map[string]string{"": {"version": fmt.Sprint(r.read())}}
}

// imageACL is the one ACL a test sets: User:v may read topic "t", v the section's version.
func imageACL(v int) *security.ACLIndex {
	return security.IndexACLs([]security.Binding{{Pattern: security.Pattern{Type: security.ResourceTopic, Name: "t", PatternType: security.PatternLiteral},
		Entry: security.Entry{Principal: fmt.Sprintf("User:%d", v), Host: "*", Operation: security.OpRead, Permission: security.Allow}}})
}

// TestImageSectionsAreOneVersion: ACLs and SCRAM credentials set by their loaders reach the
// next image and only it; an image a request holds keeps the ACLs, credentials and broker
// configs it was built with while newer ones are set, so one request reads one version.
func TestImageSectionsAreOneVersion(t *testing.T) {
	st := newRacingStore(0)
	images := NewImages(st)
	az := security.NewAuthorizer(nil, false)
	first := images.Current()
	if first.ACLs() != nil || len(first.ACLs().Bindings()) != 0 || az.AuthorizeIn(first.ACLs(), "User:1", "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatalf("an image before any SetACLs has ACLs: %v", first.ACLs().Bindings())
	}
	if _, ok := first.BrokerConfigs("7"); ok {
		t.Fatal("the image holds broker 7's configs, which the store does not follow")
	}
	if c, ok := first.BrokerConfigs(""); !ok || c["version"] != "1" {
		t.Fatalf("the default's dynamic configs in the first image: %v %v, want version 1", c, ok)
	}

	images.SetACLs(imageACL(1))
	cred := security.ScramCredential{Salt: []byte("s"), Iterations: 4096}
	images.SetScram(map[string]map[scram.Mechanism]security.ScramCredential{"alice": {scram.SHA256: cred}})
	second := images.Current()
	if second == first || second.Version <= first.Version {
		t.Fatalf("SetACLs and SetScram did not make a new image: %d after %d", second.Version, first.Version)
	}
	if !az.AuthorizeIn(second.ACLs(), "User:1", "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatal("the image after SetACLs does not allow what its ACL allows")
	}
	if c, ok := second.ScramCredential("alice", scram.SHA256); !ok || c.Iterations != 4096 {
		t.Fatalf("alice's credential in the image after SetScram: %+v %v", c, ok)
	}
	if again := images.Current(); again != second {
		t.Fatal("no change since, yet a new image")
	}

	// An ACL change alone makes a new image without reading the store again.
	st.mu.Lock()
	reads := st.reads
	st.mu.Unlock()
	images.SetACLs(imageACL(5))
	aclOnly := images.Current()
	st.mu.Lock()
	readsAfter := st.reads
	st.mu.Unlock()
	if aclOnly == second || readsAfter != reads || aclOnly.Controller != second.Controller || !az.AuthorizeIn(aclOnly.ACLs(), "User:5", "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatalf("after an ACL change alone: image %d (store reads %d→%d), controller %d, want a new image with the new ACLs and the store's part of image %d",
			aclOnly.Version, reads, readsAfter, aclOnly.Controller, second.Version)
	}
	if az.AuthorizeIn(second.ACLs(), "User:5", "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatal("the new ACLs reached an image handed out before them")
	}

	// A store change keeps the sections; a new ACL set keeps the credentials.
	st.bump()
	images.SetACLs(imageACL(2))
	third := images.Current()
	if c, _ := third.BrokerConfigs(""); c["version"] != fmt.Sprint(third.Controller) || !consistent(third) {
		t.Fatalf("the third image mixes versions: controller %d, default configs %v", third.Controller, c)
	}
	if az.AuthorizeIn(third.ACLs(), "User:1", "h", security.OpRead, security.ResourceTopic, "t") || !az.AuthorizeIn(third.ACLs(), "User:2", "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatal("the third image does not carry the second ACL set alone")
	}
	if _, ok := third.ScramCredential("alice", scram.SHA256); !ok {
		t.Fatal("SetACLs dropped the SCRAM credentials")
	}
	// The request that took the second image still decides and reads with it.
	if !az.AuthorizeIn(second.ACLs(), "User:1", "h", security.OpRead, security.ResourceTopic, "t") || second.Controller != first.Controller {
		t.Fatal("an image changed after it was handed out")
	}
}

// TestImageSectionRacingABuild: ACL sets racing builds (run with -race) never leave the
// current image behind: once the setter stops, Current carries the last ACLs set.
func TestImageSectionRacingABuild(t *testing.T) {
	images := NewImages(newRacingStore(0))
	az := security.NewAuthorizer(nil, false)
	var wg sync.WaitGroup
	wg.Add(2)
	const last = 300
	go func() {
		defer wg.Done()
		for v := 1; v <= last; v++ {
			images.SetACLs(imageACL(v))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < last; i++ {
			images.Current()
		}
	}()
	wg.Wait()
	if im := images.Current(); !az.AuthorizeIn(im.ACLs(), fmt.Sprintf("User:%d", last), "h", security.OpRead, security.ResourceTopic, "t") {
		t.Fatalf("after the last SetACLs the image carries %v", im.ACLs().Bindings())
	}
}
