package zk

// Batched partition state writes (issue 28): a controller pass writes the states it decided
// in multis of up to maxStateBatch partitions, each fenced by the controller epoch as a single
// write is, instead of one ZooKeeper round trip per partition: creating a topic of 100
// partitions, or moving the leaderships of a lost broker, costs a few round trips. A batch
// that fails as a whole (a leader changed an ISR meanwhile, a state created by an earlier pass
// the image has not shown yet) is written again one partition at a time, so one conflict costs
// only its partition. Info logs get one line per batch; the line per partition is at debug.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/spoolmq/spool/broker/internal/metrics"
)

// maxStateBatch bounds the partitions of one multi: up to three operations each (the
// partitions and partition znodes of a new topic, then the state), a few hundred bytes, far
// below ZooKeeper's request limit (jute.maxbuffer, 1 MiB by default).
const maxStateBatch = 250

// stateWrite is one partition state the controller decided to write.
type stateWrite struct {
	topic     string
	partition int32
	old       partitionState // what the image holds (has: whether there is a state at all)
	has       bool
	next      partitionState
}

// partitionKey names a partition.
type partitionKey struct {
	topic     string
	partition int32
}

// pendingWrite is the image state a written state replaced: while the image still shows it,
// the write is in flight to the image.
type pendingWrite struct {
	has       bool
	zkVersion int32
}

// replaces reports whether the image state (st, has) is the one the write replaced.
func (pw pendingWrite) replaces(st partitionState, has bool) bool {
	return pw.has == has && (!has || pw.zkVersion == st.ZkVersion)
}

// parentZnodes knows, per topic, which partition znodes exist (read once per topic and pass).
type parentZnodes struct {
	c     *controller
	known map[string]map[string]bool // topic → partition znode names; nil map: no partitions znode
}

// ops appends the creation of the missing parents of a partition's state znode, and records
// them as created (the batch either creates them or fails and is retried one by one).
func (pz *parentZnodes) ops(ops []any, topic string, p int32) ([]any, error) {
	s := pz.c.s
	acl := zk.WorldACL(zk.PermAll)
	children, ok := pz.known[topic]
	if !ok {
		names, _, err := s.conn.Children(s.p(partitionsPath(topic)))
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return ops, fmt.Errorf("listing the partitions of %s: %w", topic, err)
		default:
			children = make(map[string]bool, len(names))
			for _, n := range names {
				children[n] = true
			}
		}
		pz.known[topic] = children
	}
	if children == nil {
		ops = append(ops, &zk.CreateRequest{Path: s.p(partitionsPath(topic)), Acl: acl})
		children = map[string]bool{}
		pz.known[topic] = children
	}
	if name := strconv.Itoa(int(p)); !children[name] {
		ops = append(ops, &zk.CreateRequest{Path: s.p(partitionPath(topic, p)), Acl: acl})
		children[name] = true
	}
	return ops, nil
}

// writeStates writes the decided states, batched; it returns errFenced as soon as a write is
// fenced, else the errors of the partitions that could not be written.
func (c *controller) writeStates(writes []stateWrite) error {
	var errs []error
	pz := &parentZnodes{c: c, known: map[string]map[string]bool{}}
	for len(writes) > 0 {
		n := min(len(writes), maxStateBatch)
		batch := writes[:n]
		writes = writes[n:]
		began := time.Now()
		err := c.writeBatch(pz, batch)
		if errors.Is(err, errFenced) {
			return err
		}
		if err != nil {
			// One at a time: each conflict is classified on its own (writeState).
			c.s.log.Debug("a batch of partition states failed; writing them one by one", "partitions", len(batch), "err", err)
			for topic := range topicsOf(batch) {
				delete(pz.known, topic)
			}
			for _, w := range batch {
				if err := c.writeState(w.topic, w.partition, w.old, w.has, w.next); err != nil {
					if errors.Is(err, errFenced) {
						return err
					}
					if !errors.Is(err, errSuperseded) {
						errs = append(errs, err)
					}
					continue
				}
				c.written([]stateWrite{w}, began)
			}
			continue
		}
		c.written(batch, began)
	}
	return errors.Join(errs...)
}

// writeBatch writes a batch's states in one fenced multi.
func (c *controller) writeBatch(pz *parentZnodes, batch []stateWrite) error {
	acl := zk.WorldACL(zk.PermAll)
	ops := make([]any, 0, len(batch)+1)
	for _, w := range batch {
		data := encodePartitionState(w.next)
		if w.has {
			ops = append(ops, &zk.SetDataRequest{Path: c.s.p(partitionStatePath(w.topic, w.partition)), Data: data, Version: w.old.ZkVersion})
			continue
		}
		var err error
		if ops, err = pz.ops(ops, w.topic, w.partition); err != nil {
			return err
		}
		ops = append(ops, &zk.CreateRequest{Path: c.s.p(partitionStatePath(w.topic, w.partition)), Data: data, Acl: acl})
	}
	return c.write(ops...)
}

// written logs and counts written states: one info line for the batch, one debug line each.
func (c *controller) written(batch []stateWrite, began time.Time) {
	elected, isr := 0, 0
	log := c.s.log
	debug := log.Enabled(context.Background(), slog.LevelDebug)
	c.pendingMu.Lock()
	if c.pending == nil {
		c.pending = map[partitionKey]pendingWrite{}
	}
	for _, w := range batch {
		c.pending[partitionKey{w.topic, w.partition}] = pendingWrite{has: w.has, zkVersion: w.old.ZkVersion}
	}
	c.pendingMu.Unlock()
	for _, w := range batch {
		if !w.has || w.next.Leader != w.old.Leader {
			elected++
			metrics.LeaderElected(time.Since(began))
			if debug {
				log.Debug("partition leader elected", "topic", w.topic, "partition", w.partition, "leader", w.next.Leader,
					"leader_epoch", w.next.LeaderEpoch, "isr", w.next.ISR)
			}
		} else {
			isr++
			if debug {
				log.Debug("partition ISR changed by the controller", "topic", w.topic, "partition", w.partition, "isr", w.next.ISR)
			}
		}
		metrics.ISRChanged(len(w.old.ISR), len(w.next.ISR))
	}
	if len(batch) == 1 {
		w := batch[0]
		if elected == 1 {
			log.Info("partition leader elected", "topic", w.topic, "partition", w.partition, "leader", w.next.Leader,
				"leader_epoch", w.next.LeaderEpoch, "isr", w.next.ISR)
		} else {
			log.Info("partition ISR changed by the controller", "topic", w.topic, "partition", w.partition, "isr", w.next.ISR)
		}
		return
	}
	log.Info("partition states written by the controller", "leaders_elected", elected, "isr_changes", isr,
		"topics", len(topicsOf(batch)), "took", time.Since(began).Round(time.Millisecond))
}

// topicsOf is the set of topics of a batch.
func topicsOf(batch []stateWrite) map[string]struct{} {
	out := map[string]struct{}{}
	for _, w := range batch {
		out[w.topic] = struct{}{}
	}
	return out
}
