package server

// Metadata (key 3), versions 0-12; flexible from 9.
//
// Lists this cluster's brokers (their endpoints on the listener the request came through) and the requested topics (all topics when the list is null, or
// empty in v0, kafka-python's probe). Unknown topics are created when
// auto.create.topics.enable holds and the request allows it (always before v4; the
// AllowAutoTopicCreation flag from v4), with num.partitions partitions; otherwise they get
// UNKNOWN_TOPIC_OR_PARTITION, and bad names INVALID_TOPIC_EXCEPTION. v10+ carries topic ids: a
// topic looked up by id alone is found by id. Leaders, leader epochs, replicas, ISR and
// offline replicas come from the metadata image; a partition without a leader (all its ISR
// down) gets LEADER_NOT_AVAILABLE. So does one whose leader is not among the live brokers
// listed (its registration is gone, e.g. a ZooKeeper session that expired before the
// controller moved leadership), with leader -1, as Kafka's metadata cache answers: a client is
// never pointed at a node id the same answer does not list. A live leader without the
// client's listener gets LISTENER_NOT_FOUND from v6 (LEADER_NOT_AVAILABLE before). Any broker
// answers for the whole cluster.
// The whole answer (cluster id, controller, brokers, topics) and its authorization (the ACLs)
// come from one metadata image (cluster.Images.Current, read once per request), so it never
// mixes two versions of the metadata: a leader is listed among the brokers of the same
// version, and a topic is listed under the ACLs of that version.
// Authorized operations are not computed: they keep Kafka's "not requested" value.
//
// Authorization (with authorizer.class.name set): the list of all topics holds only those the
// principal may Describe; a topic asked for by name or id without Describe gets
// TOPIC_AUTHORIZATION_FAILED whether or not it exists; auto-creation needs Create on the cluster
// or the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/spoolmq/spool/broker/internal/cluster"
	"github.com/spoolmq/spool/broker/internal/security"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

func handleMetadata(s *Server, ctx context.Context, req *request) *pending {
	r := req.msg.(*wire.MetadataRequest)
	resp := &wire.MetadataResponse{}
	resp.Default()
	im := s.images.Current() // the one read of the metadata for this request
	view := leaderView{alive: map[int32]bool{}, listed: map[int32]bool{}, listenerErrors: req.version >= 6}
	for _, b := range im.Brokers() {
		view.alive[b.NodeID] = true
		// Each broker's endpoint on the listener the client came through; a broker without
		// that listener is left out, as Kafka does.
		if host, port, ok := b.Addr(req.listener); ok {
			view.listed[b.NodeID] = true
			resp.Brokers = append(resp.Brokers, wire.MetadataResponseBroker{NodeId: b.NodeID, Host: host, Port: port, Rack: b.Rack})
		}
	}
	cid := im.ClusterID
	resp.ClusterId = &cid
	resp.ControllerId = im.Controller

	all := r.Topics == nil || (req.version == 0 && len(r.Topics) == 0)
	if all {
		for _, t := range im.Topics() {
			if s.permitsIn(im, req, security.OpDescribe, security.ResourceTopic, t.Name) { // a filter: no denial logged
				resp.Topics = append(resp.Topics, view.topic(t))
			}
		}
		return ready(reply{msg: resp})
	}
	autoCreate := s.cfg.autoCreate && (req.version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		var t cluster.Topic
		var ok bool
		switch {
		case rt.Name != nil:
			t, ok = im.Topic(*rt.Name)
		case rt.TopicId != (wire.UUID{}):
			t, ok = im.TopicByID(rt.TopicId)
			if !ok {
				resp.Topics = append(resp.Topics, wire.MetadataResponseTopic{ErrorCode: wire.ErrUnknownTopicId.Code, TopicId: rt.TopicId, TopicAuthorizedOperations: -1 << 31})
				continue
			}
		}
		name := t.Name
		if rt.Name != nil {
			name = *rt.Name
		}
		if !s.allowedIn(im, req, security.OpDescribe, security.ResourceTopic, name) {
			// Refused whether or not the topic exists, so its existence does not leak.
			resp.Topics = append(resp.Topics, wire.MetadataResponseTopic{ErrorCode: wire.ErrTopicAuthorizationFailed.Code, Name: rt.Name, TopicId: rt.TopicId, TopicAuthorizedOperations: -1 << 31})
			continue
		}
		if ok {
			resp.Topics = append(resp.Topics, view.topic(t))
			continue
		}
		var err error = wire.ErrUnknownTopicOrPartition
		if !cluster.ValidTopicName(name) {
			err = wire.ErrInvalidTopicException
		} else if autoCreate && !s.permitsIn(im, req, security.OpCreate, security.ResourceCluster, security.ClusterName) &&
			!s.allowedIn(im, req, security.OpCreate, security.ResourceTopic, name) {
			err = wire.ErrTopicAuthorizationFailed
		} else if autoCreate {
			if t, err = s.autoCreateTopic(ctx, name); err == nil {
				resp.Topics = append(resp.Topics, view.topic(t))
				continue
			}
		}
		n := name
		resp.Topics = append(resp.Topics, wire.MetadataResponseTopic{ErrorCode: errCode(err), Name: &n, TopicAuthorizedOperations: -1 << 31})
	}
	return ready(reply{msg: resp})
}

// leaderView is what one Metadata answer knows of the brokers: which are alive (registered)
// and which of those it lists (they have the client's listener).
type leaderView struct {
	alive, listed  map[int32]bool
	listenerErrors bool // v6+: a live leader without the listener is LISTENER_NOT_FOUND
}

// topic is t's entry of the answer.
func (v leaderView) topic(t cluster.Topic) wire.MetadataResponseTopic {
	name := t.Name
	mt := wire.MetadataResponseTopic{Name: &name, TopicId: t.ID, IsInternal: t.Internal, TopicAuthorizedOperations: -1 << 31}
	for _, p := range t.Partitions {
		mp := wire.MetadataResponsePartition{
			PartitionIndex: p.Index, LeaderId: p.Leader, LeaderEpoch: p.LeaderEpoch,
			ReplicaNodes: p.Replicas, IsrNodes: p.ISR, OfflineReplicas: p.Offline,
		}
		if mp.OfflineReplicas == nil {
			mp.OfflineReplicas = []int32{}
		}
		switch {
		case p.Leader < 0 || !v.alive[p.Leader]:
			mp.ErrorCode, mp.LeaderId = wire.ErrLeaderNotAvailable.Code, -1
		case !v.listed[p.Leader] && v.listenerErrors:
			mp.ErrorCode, mp.LeaderId = wire.ErrListenerNotFound.Code, -1
		case !v.listed[p.Leader]:
			mp.ErrorCode, mp.LeaderId = wire.ErrLeaderNotAvailable.Code, -1
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// autoCreateTopic creates a topic with the broker's defaults, tolerating a concurrent creation
// of the same topic.
func (s *Server) autoCreateTopic(ctx context.Context, name string) (cluster.Topic, error) {
	t, err := s.createTopic(ctx, name, s.cfg.numPartitions, s.cfg.replication, nil, false)
	if errors.Is(err, cluster.ErrTopicExists) {
		if t, ok := s.md.Topic(name); ok {
			return t, nil
		}
	}
	return t, err
}
