package group

import (
	"errors"
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

var errBadSubscription = errors.New("malformed consumer protocol subscription")

// OffsetDeletion names one committed offset to delete. Err, when set, is the answer for this
// partition without looking at the group (the handler's UNKNOWN_TOPIC_OR_PARTITION).
type OffsetDeletion struct {
	Topic     string
	Partition int32
	Err       int16
}

// DeleteOffsets deletes committed offsets of a group as Kafka's OffsetDelete does. done gets
// a group-level error code, or 0 and one code per deletion: GROUP_SUBSCRIBED_TO_TOPIC for a
// topic an active consumer group subscribes to, NONE for the rest once their tombstones are
// durable. The tombstones are appended before DeleteOffsets returns, so requests that follow
// on a connection see them in order; done may run later, on another goroutine.
func (c *Coordinator) DeleteOffsets(groupID string, dels []OffsetDeletion, done func(groupCode int16, codes []int16)) {
	if groupID == "" {
		done(wire.ErrInvalidGroupId.Code, nil)
		return
	}
	if e := c.serving(groupID); e != nil {
		done(e.Code, nil)
		return
	}
	g := c.lookup(groupID, false)
	if g == nil {
		done(wire.ErrGroupIdNotFound.Code, nil)
		return
	}
	defer g.mu.Unlock()
	// An active group may only lose offsets of topics nobody in it consumes; knowing that
	// needs the consumer protocol's subscriptions, so other protocol types are refused whole.
	var subscribed func(topic string) bool
	switch g.state {
	case Dead:
		done(wire.ErrGroupIdNotFound.Code, nil)
		return
	case Empty:
		subscribed = func(string) bool { return false }
	default:
		if g.protocolType != "consumer" {
			done(wire.ErrNonEmptyGroup.Code, nil)
			return
		}
		subscribed = g.subscribedTopics()
	}
	codes := make([]int16, len(dels))
	var kvs []kv
	var gone []tp
	for i, d := range dels {
		switch {
		case d.Err != 0:
			codes[i] = d.Err
		case subscribed(d.Topic):
			codes[i] = wire.ErrGroupSubscribedToTopic.Code
		default:
			kvs = append(kvs, kv{key: offsetKey(g.id, d.Topic, d.Partition)})
			gone = append(gone, tp{d.Topic, d.Partition})
		}
	}
	if len(kvs) == 0 {
		done(0, codes)
		return
	}
	w, err := c.append(g.id, kvs)
	if err != nil {
		c.log.Warn("deleting offsets", "group", g.id, "err", err)
		done(wire.ErrCoordinatorNotAvailable.Code, nil)
		return
	}
	// Dropped from memory now, not after the commit (durable, then on the ISR): the tombstones sit in the log ahead of any
	// later commit, so a reload agrees with memory even if this answer is lost.
	for _, k := range gone {
		delete(g.offsets, k)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := w.wait(c.ctx); err != nil {
			done(wire.ErrCoordinatorNotAvailable.Code, nil)
			return
		}
		done(0, codes)
	}()
}

// subscribedTopics reports, for an active consumer group, whether any member subscribes to a
// topic. As Kafka, it answers true for every topic when that cannot be known: no protocol
// chosen yet, or a subscription that does not decode. Called with the group lock held.
func (g *group) subscribedTopics() func(topic string) bool {
	all := func(string) bool { return true }
	if g.protocol == "" {
		return all
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		ts, err := subscriptionTopics(m.metadata(g.protocol))
		if err != nil {
			return all
		}
		for _, t := range ts {
			topics[t] = true
		}
	}
	return func(topic string) bool { return topics[topic] }
}

// subscriptionTopics reads the topics of a consumer protocol subscription. Like Kafka, it
// decodes the whole subscription, so bytes that end early count as undecodable.
func subscriptionTopics(b []byte) ([]string, error) {
	var sub wire.ConsumerProtocolSubscription
	if _, err := sub.DecodeVersioned(b); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSubscription, err)
	}
	return sub.Topics, nil
}
