package zk

import "errors"

// BumpEpochsPass writes, as one controller pass, every partition of topic with its leader
// epoch one higher; the write of partition stale is made against a version that is not the
// current one (as when a leader changed its ISR meanwhile).
func (s *Store) BumpEpochsPass(topic string, stale int32) error {
	s.mu.RLock()
	c := s.ctrl
	s.mu.RUnlock()
	if c == nil {
		return errors.New("not the controller")
	}
	t, ok := s.Topic(topic)
	if !ok {
		return errors.New("no topic " + topic)
	}
	var ws []stateWrite
	for _, p := range t.Partitions {
		st, has := s.state(topic, p.Index)
		next := st
		next.LeaderEpoch++
		next.ControllerEpoch = c.epoch
		if p.Index == stale {
			st.ZkVersion += 7
		}
		ws = append(ws, stateWrite{topic: topic, partition: p.Index, old: st, has: has, next: next})
	}
	return c.writeStates(ws)
}
