package metrics

import (
	"context"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Group attribute keys: the consumer group is OpenTelemetry's messaging.consumer.group.name.
const (
	attrGroup      = attribute.Key("messaging.consumer.group.name")
	attrGroupState = attribute.Key("spool.group.state")
)

// GroupStates are the states spool.groups always reports, zero or not, so an alert on one
// (say PreparingRebalance) has a series before the first group enters it.
var GroupStates = []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}

// GroupState is one group coordinated here, as the group gauges report it.
type GroupState struct {
	GroupID string
	State   string
	Members int
	Lag     []PartitionLag
}

// PartitionLag is a group's committed offset of one partition and how far it is behind the
// partition's end as a consumer sees it (the high watermark): Kafka's kafka-consumer-groups
// LAG column. Partitions without a local replica are left out: only their leader knows their end.
type PartitionLag struct {
	Topic     string
	Partition int32
	Committed int64
	Lag       int64
}

// ObserveGroups registers the group gauges; groups is called at each collection (on the
// scraping goroutine), so lag costs nothing per record or per commit.
func (m *Metrics) ObserveGroups(groups func() []GroupState) error {
	if m == nil {
		return nil
	}
	b := &builder{meter: m.meter}
	gauge := b.gauge
	count := gauge("spool.groups", "{group}", "Consumer groups coordinated here, by state (spool.group.state).")
	members := gauge("spool.group.members", "{member}", "Members of each group coordinated here.")
	committed := gauge("spool.group.committed_offset", "{offset}", "A group's committed offset, by group, topic and partition.")
	lag := gauge("spool.group.lag", "{record}", "Records between a group's committed offset and the partition's high watermark, by group, topic and partition.")
	if err := b.err("group instruments"); err != nil {
		return err
	}
	stateAttrs := make(map[string]metric.ObserveOption, len(GroupStates))
	for _, s := range GroupStates {
		stateAttrs[s] = metric.WithAttributeSet(attribute.NewSet(attrGroupState.String(s)))
	}
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		byState := make(map[string]int64, len(GroupStates))
		for _, g := range groups() {
			byState[g.State]++
			o.ObserveInt64(members, int64(g.Members), metric.WithAttributeSet(attribute.NewSet(attrGroup.String(g.GroupID))))
			for _, l := range g.Lag {
				a := metric.WithAttributeSet(attribute.NewSet(attrGroup.String(g.GroupID), attrTopic.String(l.Topic),
					attrPartition.String(strconv.Itoa(int(l.Partition)))))
				o.ObserveInt64(committed, l.Committed, a)
				o.ObserveInt64(lag, l.Lag, a)
			}
		}
		for _, s := range GroupStates {
			o.ObserveInt64(count, byState[s], stateAttrs[s])
		}
		return nil
	}, count, members, committed, lag)
	if err != nil {
		return fmt.Errorf("registering the group metrics callback: %w", err)
	}
	return nil
}
