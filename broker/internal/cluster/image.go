package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/scram"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Image is one version of the cluster's metadata as a request reads it: the cluster id, the
// controller, the live brokers, the topics with their partitions' states (reassignments in
// progress included) and configs, the dynamic broker configs the store follows, the ACLs and
// the SCRAM credentials, all from one state of the store (nothing changed in the store while
// it was read) and of the loaders that set ACLs and credentials. A handler reads
// Images.Current once and answers from that image alone, so its answer never mixes two
// versions (a broker list from before a change with leaders from after it, or a topic
// authorized under ACLs of one version and described from another).
//
// An Image is immutable: it and everything it returns (slices, maps, topics) are shared by
// every request that reads it, and nobody may modify them. Reading it takes no lock.
type Image struct {
	// Version counts the images an Images built, from 1: a later image has a larger one.
	Version    uint64
	ClusterID  string
	Controller int32

	brokers []Broker // sorted by node id
	topics  []Topic  // sorted by name
	byName  map[string]int
	byID    map[wire.UUID]int
	// brokerCfg are the dynamic broker configs the store follows (Metadata.DynamicBrokerConfigs).
	brokerCfg map[string]map[string]string
	sections
}

// sections are the parts of an image its store does not signal on Changes: set by their
// loaders through Images.SetACLs and SetScram, which make the next image carry them.
type sections struct {
	acls  *security.ACLIndex
	scram map[string]map[scram.Mechanism]security.ScramCredential
}

// BrokerConfigs are the dynamic configs of broker (a node id in decimal, "" the cluster-wide
// default) when the image holds them (ok); it holds the default's and this broker's, and in
// the embedded store every broker's. Shared: do not modify.
func (im *Image) BrokerConfigs(broker string) (map[string]string, bool) {
	c, ok := im.brokerCfg[broker]
	return c, ok
}

// ACLs are the ACLs as last set by Images.SetACLs (nil: none set). Shared.
func (im *Image) ACLs() *security.ACLIndex { return im.acls }

// ScramCredential is user's credential for mechanism m, as last set by Images.SetScram.
func (im *Image) ScramCredential(user string, m scram.Mechanism) (security.ScramCredential, bool) {
	c, ok := im.scram[user][m]
	return c, ok
}

// ScramUsers is the number of users with SCRAM credentials.
func (im *Image) ScramUsers() int { return len(im.scram) }

// Reassignment is one partition's reassignment in progress, as the image lists it.
type Reassignment struct {
	Topic            string
	Partition        int32
	Replicas         []int32
	Adding, Removing []int32
}

// Reassignments are the partitions being reassigned, by topic and partition. Shared.
func (im *Image) Reassignments() []Reassignment {
	var out []Reassignment
	for _, t := range im.topics {
		for _, p := range t.Partitions {
			if len(p.Adding) > 0 || len(p.Removing) > 0 {
				out = append(out, Reassignment{Topic: t.Name, Partition: p.Index, Replicas: p.Replicas, Adding: p.Adding, Removing: p.Removing})
			}
		}
	}
	return out
}

// Brokers are the live brokers, by node id. Shared: do not modify.
func (im *Image) Brokers() []Broker { return im.brokers }

// Topics are the topics, by name. Shared: do not modify.
func (im *Image) Topics() []Topic { return im.topics }

// Topic returns the topic named name. Shared: do not modify.
func (im *Image) Topic(name string) (Topic, bool) {
	i, ok := im.byName[name]
	if !ok {
		return Topic{}, false
	}
	return im.topics[i], true
}

// TopicByID returns the topic with id. Shared: do not modify.
func (im *Image) TopicByID(id wire.UUID) (Topic, bool) {
	i, ok := im.byID[id]
	if !ok {
		return Topic{}, false
	}
	return im.topics[i], true
}

// Images keeps the current Image of a Metadata store, built from the store when a request
// first needs it after a change (the store's Changes channel closed), and shared until the
// next change. This is the metadata image's first step: the store still holds the state;
// the image gives each request one consistent version of it.
//
// Concurrency: Current is safe for concurrent use. A current image is one atomic load and a
// non-blocking check of its change channel; a rebuild is serialised by buildMu (the store's
// reads are in memory: no I/O under it), so concurrent requests after a change build once.
//
// Consistency: a build takes the invalidation count, the store's change channel and the
// sections first and reads the store after; if the channel closed, the count moved or the
// sections were replaced meanwhile, a change may have fallen between two of the reads, and
// the build reads again. Every change of what an image holds closes the channel (the stores'
// notifyLocked), except a change the store does not signal, which its writer reports with
// Invalidate (Embedded.SetSelf), and the sections (ACLs, SCRAM credentials), which their
// setters replace with a new pointer: an image built with older ones is stale. When only the
// sections moved, the next image shares the store's part with the previous one (no re-read).
type Images struct {
	md      Metadata
	buildMu sync.Mutex
	cur     atomic.Pointer[built]
	version uint64 // guarded by buildMu
	// invalidated is bumped by Invalidate; an image built before the bump is stale.
	invalidated atomic.Uint64
	// secMu serialises the section setters; sec is read by builds without it.
	secMu sync.Mutex
	sec   atomic.Pointer[sections]
}

type built struct {
	image   *Image
	changed <-chan struct{} // closed when the store moves past image
	epoch   uint64          // invalidated when built
	sec     *sections       // the sections when built (nil: none set yet)
}

// maxBuildRetries bounds the re-reads of a build that changes keep overtaking: the last read
// is used (its parts may then come from two versions, as before images existed); the next
// request reads again.
const maxBuildRetries = 8

// NewImages keeps the images of md.
func NewImages(md Metadata) *Images { return &Images{md: md} }

// Current returns the image of the store's current version.
func (s *Images) Current() *Image {
	if b := s.cur.Load(); b != nil && s.fresh(b) {
		return b.image
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	prev := s.cur.Load()
	if prev != nil && s.fresh(prev) {
		return prev.image
	}
	var b *built
	if prev != nil && s.storeFresh(prev) {
		// Only the sections moved (an ACL or credential reload): the store's part is
		// shared with the previous image, not read again.
		sec := s.sec.Load()
		im := *prev.image
		im.sections = sectionsOf(sec)
		b = &built{image: &im, changed: prev.changed, epoch: prev.epoch, sec: sec}
	} else {
		for try := 0; ; try++ {
			epoch := s.invalidated.Load()
			changed := s.md.Changes()
			sec := s.sec.Load()
			im := s.read(sec)
			b = &built{image: im, changed: changed, epoch: epoch, sec: sec}
			if s.fresh(b) || try == maxBuildRetries {
				break
			}
		}
	}
	s.version++
	b.image.Version = s.version
	s.cur.Store(b)
	return b.image
}

// Invalidate makes the next Current read the store again (a change the store does not
// signal on its Changes channel).
func (s *Images) Invalidate() { s.invalidated.Add(1) }

// SetACLs makes acls the ACLs of the next image (the authorizer's loader calls it after each
// read of the store's ACLs).
func (s *Images) SetACLs(acls *security.ACLIndex) {
	s.setSection(func(sec *sections) { sec.acls = acls })
}

// SetScram makes creds (user, mechanism) the SCRAM credentials of the next image; the
// caller hands creds over and does not modify it afterwards.
func (s *Images) SetScram(creds map[string]map[scram.Mechanism]security.ScramCredential) {
	s.setSection(func(sec *sections) { sec.scram = creds })
}

func (s *Images) setSection(set func(*sections)) {
	s.secMu.Lock()
	defer s.secMu.Unlock()
	next := sectionsOf(s.sec.Load())
	set(&next)
	s.sec.Store(&next) // a new pointer: every image built with the old one is stale
}

// sectionsOf is *sec, or no sections for nil.
func sectionsOf(sec *sections) sections {
	if sec == nil {
		return sections{}
	}
	return *sec
}

func (s *Images) fresh(b *built) bool {
	return b.sec == s.sec.Load() && s.storeFresh(b)
}

// storeFresh reports whether the store has not moved past b (its part of the image is current).
func (s *Images) storeFresh(b *built) bool {
	if b.epoch != s.invalidated.Load() {
		return false
	}
	select {
	case <-b.changed:
		return false
	default:
		return true
	}
}

// read copies the store's state into a new image with the sections sec.
func (s *Images) read(sec *sections) *Image {
	im := &Image{ClusterID: s.md.ClusterID(), Controller: s.md.ControllerID(), brokers: s.md.Brokers(), topics: s.md.Topics(),
		brokerCfg: s.md.DynamicBrokerConfigs()}
	im.sections = sectionsOf(sec)
	im.byName = make(map[string]int, len(im.topics))
	im.byID = make(map[wire.UUID]int, len(im.topics))
	for i, t := range im.topics {
		im.byName[t.Name] = i
		if t.ID != (wire.UUID{}) {
			im.byID[t.ID] = i
		}
	}
	return im
}
