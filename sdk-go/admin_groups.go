package spool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// ErrGroupActive is returned by CommitGroupOffsets when the group has members: only the
// members may commit for an active group (Kafka answers UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION
// or REBALANCE_IN_PROGRESS to an admin commit).
var ErrGroupActive = errors.New("spool: group has active members; stop its consumers first")

// GroupListing is one group as ListGroups reports it.
type GroupListing struct {
	GroupID string
	// State is Kafka's state name (Empty, Stable, ...); empty when the broker is older than
	// ListGroups v4.
	State string
	// ProtocolType is "consumer" for consumer groups, empty for groups that only hold
	// committed offsets.
	ProtocolType string
	// Coordinator is the id of the broker that answered for the group.
	Coordinator int32
}

// GroupMember is one member of a described group.
type GroupMember struct {
	MemberID   string
	InstanceID *string // static membership (group.instance.id); nil for dynamic members
	ClientID   string
	ClientHost string
	// Assignment is the member's partitions by topic, decoded from the consumer protocol;
	// empty while the group rebalances or for other protocol types.
	Assignment map[string][]int32
	// AssignmentErr says why the assignment bytes of a consumer group did not decode.
	AssignmentErr error
}

// GroupDescription is one group as DescribeGroups reports it.
type GroupDescription struct {
	GroupID      string
	State        string
	ProtocolType string
	Protocol     string // the chosen assignor, e.g. "range"; set only when Stable
	Members      []GroupMember
	// Err is the group's error; a group that does not exist (state Dead, as Kafka brokers
	// before 4.0 describe it) gets wire.ErrGroupIdNotFound.
	Err error
}

// OffsetInfo is a committed offset.
type OffsetInfo struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
}

// PartitionLag is one partition of a group, as kafka-consumer-groups.sh --describe shows it.
type PartitionLag struct {
	Topic     string
	Partition int32
	// Committed is the group's committed offset, -1 when none is committed.
	Committed int64
	// End is the log end offset (high watermark), -1 when it could not be read.
	End int64
	// Lag is End - Committed, or -1 when either is unknown.
	Lag int64
	// MemberID, ClientID and ClientHost name the member the partition is assigned to, if any.
	MemberID, ClientID, ClientHost string
}

// findCoordinator asks any broker once which broker coordinates group and returns its address.
func (cl *Client) findCoordinator(ctx context.Context, group string) (string, error) {
	req := &wire.FindCoordinatorRequest{}
	req.Default()
	req.Key = group
	resp := &wire.FindCoordinatorResponse{}
	if err := cl.Request(ctx, req, resp); err != nil {
		return "", err
	}
	if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
		return "", fmt.Errorf("finding the coordinator of group %q: %w", group, withMessage(err, resp.ErrorMessage))
	}
	return net.JoinHostPort(resp.Host, strconv.Itoa(int(resp.Port))), nil
}

// groupCoordinator connects to the coordinator of group.
func (cl *Client) groupCoordinator(ctx context.Context, group string) (*conn, error) {
	addr, err := cl.findCoordinator(ctx, group)
	if err != nil {
		return nil, err
	}
	return cl.connTo(ctx, addr)
}

// groupRequest sends req to the coordinator of group with retries, looking the coordinator
// up again on each attempt, so NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS (both
// retriable) are ridden out; check reads the error codes of resp after each attempt.
func (cl *Client) groupRequest(ctx context.Context, group string, req, resp wire.Message, check func() error) error {
	return cl.withRetries(ctx, func(ctx context.Context) error {
		c, err := cl.groupCoordinator(ctx, group)
		if err != nil {
			return err
		}
		if err := roundTrip(ctx, c, req, resp); err != nil {
			return err
		}
		return check()
	})
}

// ListGroups lists the groups of every broker, sorted by group id. When some brokers fail to
// answer, the groups of the others are still returned, together with an error that names each
// broker that failed (Kafka's AdminClient gives the same split as valid() and errors()).
func (a *Admin) ListGroups(ctx context.Context) ([]GroupListing, error) {
	m, err := a.cl.fetchMetadata(ctx, []string{}, false)
	if err != nil {
		return nil, fmt.Errorf("spool: listing groups: %w", err)
	}
	ids := make([]int32, 0, len(m.brokers))
	for id := range m.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []GroupListing
	var failed []error
	for _, id := range ids {
		req := &wire.ListGroupsRequest{}
		req.Default()
		resp := &wire.ListGroupsResponse{}
		err := a.cl.withRetries(ctx, func(ctx context.Context) error {
			if err := a.cl.RequestNode(ctx, id, req, resp); err != nil {
				return err
			}
			return wire.ErrorForCode(resp.ErrorCode)
		})
		if err != nil {
			failed = append(failed, fmt.Errorf("spool: listing groups of broker %d: %w", id, err))
			continue
		}
		for _, g := range resp.Groups {
			out = append(out, GroupListing{GroupID: g.GroupId, State: g.GroupState, ProtocolType: g.ProtocolType, Coordinator: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out, errors.Join(failed...)
}

// DescribeGroups describes the named groups, in the order named. A group that does not exist
// is described with Err wire.ErrGroupIdNotFound; an error that stopped the request at all is
// returned as the error.
func (a *Admin) DescribeGroups(ctx context.Context, ids ...string) ([]GroupDescription, error) {
	out := make([]GroupDescription, 0, len(ids))
	for _, id := range ids {
		req := &wire.DescribeGroupsRequest{}
		req.Default()
		req.Groups = []string{id}
		resp := &wire.DescribeGroupsResponse{}
		err := a.cl.groupRequest(ctx, id, req, resp, func() error {
			if len(resp.Groups) != 1 {
				return fmt.Errorf("described %d groups, asked for 1", len(resp.Groups))
			}
			// Coordinator errors are retried; others belong to the description.
			if err := wire.ErrorForCode(resp.Groups[0].ErrorCode); err != nil && wire.IsRetriable(err) {
				return err
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("spool: describing group %q: %w", id, err)
		}
		out = append(out, describedGroup(resp.Groups[0]))
	}
	return out, nil
}

func describedGroup(g wire.DescribeGroupsResponseDescribedGroup) GroupDescription {
	d := GroupDescription{GroupID: g.GroupId, State: g.GroupState, ProtocolType: g.ProtocolType, Protocol: g.ProtocolData,
		Err: wire.ErrorForCode(g.ErrorCode)}
	if d.Err == nil && d.State == "Dead" {
		d.Err = wire.ErrGroupIdNotFound
	}
	for _, m := range g.Members {
		gm := GroupMember{MemberID: m.MemberId, InstanceID: m.GroupInstanceId, ClientID: m.ClientId, ClientHost: m.ClientHost}
		if g.ProtocolType == "consumer" {
			gm.Assignment, gm.AssignmentErr = assignedPartitions(m.MemberAssignment)
		}
		d.Members = append(d.Members, gm)
	}
	return d
}

// DeleteGroups deletes groups with their committed offsets. The map holds each group's
// result (nil on success; wire.ErrNonEmptyGroup while it has members, wire.ErrGroupIdNotFound
// when it does not exist); the error is for a failure to ask at all.
func (a *Admin) DeleteGroups(ctx context.Context, ids ...string) (map[string]error, error) {
	out := make(map[string]error, len(ids))
	for _, id := range ids {
		req := &wire.DeleteGroupsRequest{}
		req.Default()
		req.GroupsNames = []string{id}
		resp := &wire.DeleteGroupsResponse{}
		err := a.cl.groupRequest(ctx, id, req, resp, func() error {
			for _, r := range resp.Results {
				if err := wire.ErrorForCode(r.ErrorCode); err != nil && wire.IsRetriable(err) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("spool: deleting group %q: %w", id, err)
		}
		out[id] = nil
		for _, r := range resp.Results {
			if r.GroupId == id {
				out[id] = wire.ErrorForCode(r.ErrorCode)
			}
		}
	}
	return out, nil
}

// FetchOffsets returns every committed offset of group by topic and partition. A group
// without commits, or one that does not exist, has none.
func (a *Admin) FetchOffsets(ctx context.Context, group string) (map[string]map[int32]OffsetInfo, error) {
	req := &wire.OffsetFetchRequest{}
	req.Default()
	req.GroupId = group
	req.Topics = nil // every committed partition (v2+)
	resp := &wire.OffsetFetchResponse{}
	err := a.cl.groupRequest(ctx, group, req, resp, func() error {
		if err := wire.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := wire.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s[%d]: %w", t.Name, p.PartitionIndex, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: fetching offsets of group %q: %w", group, err)
	}
	out := map[string]map[int32]OffsetInfo{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.CommittedOffset < 0 {
				continue
			}
			if out[t.Name] == nil {
				out[t.Name] = map[int32]OffsetInfo{}
			}
			oi := OffsetInfo{Offset: p.CommittedOffset, LeaderEpoch: p.CommittedLeaderEpoch}
			if p.Metadata != nil {
				oi.Metadata = *p.Metadata
			}
			out[t.Name][p.PartitionIndex] = oi
		}
	}
	return out, nil
}

// CommitGroupOffsets sets committed offsets of group (offsets by topic and partition) as an
// administrator: generation -1 and no member id, which a broker accepts only while the group
// has no members; otherwise it fails with ErrGroupActive. The group is created if needed.
func (a *Admin) CommitGroupOffsets(ctx context.Context, group string, offsets map[string]map[int32]int64) error {
	req := &wire.OffsetCommitRequest{}
	req.Default()
	req.GroupId, req.GenerationIdOrMemberEpoch, req.MemberId = group, -1, ""
	for _, t := range slices.Sorted(maps.Keys(offsets)) {
		rt := wire.OffsetCommitRequestTopic{Name: t}
		for p, o := range offsets[t] {
			rt.Partitions = append(rt.Partitions, wire.OffsetCommitRequestPartition{PartitionIndex: p, CommittedOffset: o, CommittedLeaderEpoch: -1, CommittedMetadata: strp("")})
		}
		sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].PartitionIndex < rt.Partitions[j].PartitionIndex })
		req.Topics = append(req.Topics, rt)
	}
	resp := &wire.OffsetCommitResponse{}
	err := a.cl.groupRequest(ctx, group, req, resp, func() error {
		var errs []error
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				err := wire.ErrorForCode(p.ErrorCode)
				switch {
				case err == nil:
					continue
				case errors.Is(err, wire.ErrUnknownMemberId), errors.Is(err, wire.ErrIllegalGeneration), errors.Is(err, wire.ErrRebalanceInProgress):
					return finalError{fmt.Errorf("%w: %w", ErrGroupActive, err)}
				case wire.IsRetriable(err) && !errors.Is(err, wire.ErrUnknownTopicOrPartition):
					return err // the coordinator moved or is loading: all over again
				}
				errs = append(errs, fmt.Errorf("%s[%d]: %w", t.Name, p.PartitionIndex, err))
			}
		}
		if len(errs) > 0 {
			return finalError{errors.Join(errs...)}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: committing offsets of group %q: %w", group, err)
	}
	return nil
}

// DeleteGroupOffsets deletes committed offsets of group (partitions by topic) with
// OffsetDelete. The map holds each partition's result: nil, wire.ErrGroupSubscribedToTopic
// while a member of the group consumes the topic, wire.ErrUnknownTopicOrPartition. A
// group-level failure (wire.ErrGroupIdNotFound, wire.ErrNonEmptyGroup, ...) is the error.
func (a *Admin) DeleteGroupOffsets(ctx context.Context, group string, parts map[string][]int32) (map[string]map[int32]error, error) {
	req := &wire.OffsetDeleteRequest{}
	req.Default()
	req.GroupId = group
	for _, t := range slices.Sorted(maps.Keys(parts)) {
		rt := wire.OffsetDeleteRequestTopic{Name: t}
		for _, p := range parts[t] {
			rt.Partitions = append(rt.Partitions, wire.OffsetDeleteRequestPartition{PartitionIndex: p})
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := &wire.OffsetDeleteResponse{}
	err := a.cl.groupRequest(ctx, group, req, resp, func() error { return wire.ErrorForCode(resp.ErrorCode) })
	if err != nil {
		return nil, fmt.Errorf("spool: deleting offsets of group %q: %w", group, err)
	}
	out := map[string]map[int32]error{}
	for _, t := range resp.Topics {
		if out[t.Name] == nil {
			out[t.Name] = map[int32]error{}
		}
		for _, p := range t.Partitions {
			out[t.Name][p.PartitionIndex] = wire.ErrorForCode(p.ErrorCode)
		}
	}
	return out, nil
}

// GroupLag returns, for every partition the group has committed or is assigned, the
// committed offset, the log end offset and their difference, sorted by topic and partition.
// It fails with wire.ErrGroupIdNotFound when the group does not exist.
func (a *Admin) GroupLag(ctx context.Context, group string) ([]PartitionLag, error) {
	ds, err := a.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	if ds[0].Err != nil {
		return nil, fmt.Errorf("spool: group %q: %w", group, ds[0].Err)
	}
	committed, err := a.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	type key struct {
		topic string
		p     int32
	}
	rows := map[key]*PartitionLag{}
	row := func(t string, p int32) *PartitionLag {
		k := key{t, p}
		if rows[k] == nil {
			rows[k] = &PartitionLag{Topic: t, Partition: p, Committed: -1, End: -1, Lag: -1}
		}
		return rows[k]
	}
	for t, ps := range committed {
		for p, o := range ps {
			row(t, p).Committed = o.Offset
		}
	}
	for _, m := range ds[0].Members {
		for t, ps := range m.Assignment {
			for _, p := range ps {
				r := row(t, p)
				r.MemberID, r.ClientID, r.ClientHost = m.MemberID, m.ClientID, m.ClientHost
			}
		}
	}
	// Only partitions that exist now are asked for: a deleted (or shrunk) topic keeps its
	// commits, and its end offsets are simply unknown.
	names := make([]string, 0, len(rows))
	for k := range rows {
		names = append(names, k.topic)
	}
	m, err := a.cl.fetchMetadata(ctx, names, false)
	if err != nil {
		return nil, fmt.Errorf("spool: group lag of %q: %w", group, err)
	}
	byTopic := map[string]map[int32]int64{}
	for k := range rows {
		tm := m.topics[k.topic]
		if tm == nil || tm.err != nil || int(k.p) >= len(tm.partitions) || tm.partitions[k.p].leader < 0 {
			continue
		}
		if byTopic[k.topic] == nil {
			byTopic[k.topic] = map[int32]int64{}
		}
		byTopic[k.topic][k.p] = OffsetLatest
	}
	for t, ps := range byTopic {
		ends, err := a.cl.listOffsets(ctx, t, ps)
		if err != nil {
			return nil, fmt.Errorf("spool: group lag of %q: %w", group, err)
		}
		for p, end := range ends {
			r := rows[key{t, p}]
			r.End = end
			if r.Committed >= 0 {
				r.Lag = end - r.Committed
			}
		}
	}
	out := make([]PartitionLag, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}
