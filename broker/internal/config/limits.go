package config

import "strconv"

// ListenerMaxConnections is a listener's own connection limit, Kafka's
// listener.name.<listener>.max.connections (KIP-402), and whether it is set. Unlike the ssl.*
// overrides it does not fall back to the broker-wide max.connections: the two limits apply
// together, and the broker-wide one does not bind the inter-broker listener while this one does.
func (c *Config) ListenerMaxConnections(listener string) (int, bool) {
	v, ok := c.values[ListenerMaxConnectionsName(listener)]
	if !ok {
		return 0, false
	}
	n, _ := strconv.Atoi(v) // checked by Set
	return n, true
}

// ListenerMaxConnectionsName is the property name of a listener's connection limit, as the
// refused-connections metric and the refusal log name it.
func ListenerMaxConnectionsName(listener string) string {
	return listenerPrefix(listener) + MaxConnections
}
