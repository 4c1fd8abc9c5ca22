package zk

import "errors"

// DeleteTopicPass runs the controller's deletion of topic name once, as a controller pass
// whose image still lists the topic does.
func (s *Store) DeleteTopicPass(name string) error {
	s.mu.RLock()
	c := s.ctrl
	s.mu.RUnlock()
	if c == nil {
		return errors.New("not the controller")
	}
	return c.deleteTopic(name)
}
