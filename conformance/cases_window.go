package conformance

import (
	"fmt"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Both ends of each API's version window (SPEC.md §1): a well-formed request at the lowest
// and at the highest version of the window is decoded and answered without error.

// windowCheck builds one API's request for a case (with a fresh topic where it needs one)
// and returns the response to decode into and the error code to check in it.
type windowCheck struct {
	key   int16
	min   int16 // lowest version to send, when above the window's (Produce v0-2 carry old formats)
	build func(t *T, c *Conn) (req, resp wire.Message, code func() int16)
}

func init() {
	checks := []windowCheck{
		{key: wire.KeyProduce, min: 3, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.ProduceResponse)
			return produceReq(t.Topic(1), 0, 1, t.makeBatch(plain, values("w", 2)...)), resp, func() int16 { return resp.Responses[0].PartitionResponses[0].ErrorCode }
		}},
		{key: wire.KeyFetch, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.FetchResponse)
			return fetchReq(t.Topic(1), 0, 0, 0, 1, 1<<20, 1<<20), resp, func() int16 { return resp.Responses[0].Partitions[0].ErrorCode }
		}},
		{key: wire.KeyListOffsets, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.ListOffsetsResponse)
			return listOffsetsReq(t.Topic(1), -2, 0), resp, func() int16 { return resp.Topics[0].Partitions[0].ErrorCode }
		}},
		{key: wire.KeyMetadata, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.MetadataResponse)
			req := def[wire.MetadataRequest]()
			req.Topics = []wire.MetadataRequestTopic{{Name: ptr(t.Topic(1))}}
			return req, resp, func() int16 { return resp.Topics[0].ErrorCode }
		}},
		{key: wire.KeyOffsetCommit, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.OffsetCommitResponse)
			_, group := t.newGroup()
			return commitReq(group, -1, "", t.Topic(1), 0, 1, ""), resp, func() int16 { return resp.Topics[0].Partitions[0].ErrorCode }
		}},
		{key: wire.KeyOffsetFetch, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.OffsetFetchResponse)
			_, group := t.newGroup()
			req := &wire.OffsetFetchRequest{GroupId: group, Topics: []wire.OffsetFetchRequestTopic{{Name: t.Topic(1), PartitionIndexes: []int32{0}}}}
			return req, resp, func() int16 { return resp.Topics[0].Partitions[0].ErrorCode }
		}},
		{key: wire.KeyJoinGroup, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.JoinGroupResponse)
			_, group := t.newGroup()
			return joinReq(group, "", protoType), resp, func() int16 {
				if resp.ErrorCode == wire.CodeOf(wire.ErrMemberIdRequired) {
					return 0 // the first step of a v4+ join
				}
				return resp.ErrorCode
			}
		}},
		{key: wire.KeyDescribeGroups, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.DescribeGroupsResponse)
			_, group := t.newGroup()
			return &wire.DescribeGroupsRequest{Groups: []string{group}}, resp, func() int16 { return resp.Groups[0].ErrorCode }
		}},
		{key: wire.KeyListGroups, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.ListGroupsResponse)
			return &wire.ListGroupsRequest{}, resp, func() int16 { return resp.ErrorCode }
		}},
		{key: wire.KeyCreateTopics, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.CreateTopicsResponse)
			req := def[wire.CreateTopicsRequest]()
			req.ValidateOnly = true
			req.Topics = []wire.CreateTopicsRequestCreatableTopic{{Name: t.Name("t"), NumPartitions: 1, ReplicationFactor: 1}}
			return req, resp, func() int16 { return resp.Topics[0].ErrorCode }
		}},
		{key: wire.KeyDeleteTopics, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.DeleteTopicsResponse)
			topic := t.Topic(1)
			// v6 names topics in Topics (by name here), earlier versions in TopicNames
			req := &wire.DeleteTopicsRequest{TopicNames: []string{topic}, Topics: []wire.DeleteTopicsRequestDeleteTopicState{{Name: ptr(topic)}}, TimeoutMs: 30000}
			return req, resp, func() int16 { return resp.Responses[0].ErrorCode }
		}},
		{key: wire.KeyDescribeConfigs, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.DescribeConfigsResponse)
			req := &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 2, ResourceName: t.Topic(1), ConfigurationKeys: []string{"retention.ms"}}}}
			return req, resp, func() int16 { return resp.Results[0].ErrorCode }
		}},
		{key: wire.KeyCreatePartitions, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.CreatePartitionsResponse)
			req := &wire.CreatePartitionsRequest{ValidateOnly: true, TimeoutMs: 30000, Topics: []wire.CreatePartitionsRequestTopic{{Name: t.Topic(1), Count: 2}}}
			return req, resp, func() int16 { return resp.Results[0].ErrorCode }
		}},
		{key: wire.KeyIncrementalAlterConfigs, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.IncrementalAlterConfigsResponse)
			req := &wire.IncrementalAlterConfigsRequest{ValidateOnly: true, Resources: []wire.IncrementalAlterConfigsRequestAlterConfigsResource{{
				ResourceType: 2, ResourceName: t.Topic(1), Configs: []wire.IncrementalAlterConfigsRequestAlterableConfig{{Name: "retention.ms", Value: ptr("3600000")}}}}}
			return req, resp, func() int16 { return resp.Responses[0].ErrorCode }
		}},
		{key: wire.KeyDescribeCluster, build: func(t *T, c *Conn) (wire.Message, wire.Message, func() int16) {
			resp := new(wire.DescribeClusterResponse)
			return def[wire.DescribeClusterRequest](), resp, func() int16 { return resp.ErrorCode }
		}},
	}
	for _, ch := range checks {
		api := wire.LookupAPI(ch.key)
		lo := max(api.MinVersion, ch.min)
		for _, v := range []int16{lo, api.MaxVersion} {
			end := "max"
			if v == lo {
				end = "min"
			}
			register(&Case{ID: fmt.Sprintf("versions/%s-%s-v%d", kebab(api.Name), end, v), Spec: "§1",
				Desc: fmt.Sprintf("a well-formed %s request at v%d (the window's %s) is answered without error", api.Name, v, map[string]string{"min": "lowest", "max": "highest"}[end]),
				Run: func(t *T) {
					c := t.Conn()
					req, resp, code := ch.build(t, c)
					defer func() {
						// code indexes the answer's lists: an answer without the requested
						// topic, partition or group is a failure, not a crash
						if p := recover(); p != nil {
							t.Fatalf("%s v%d: the answer lacks the entry asked for (%v)", api.Name, v, p)
						}
					}()
					// A coordinator that is still loading or moving (Kafka, just after it
					// created __consumer_offsets) answers with an error clients retry: so do we.
					var got int16
					t.waitFor(fmt.Sprintf("%s v%d answered by a settled coordinator", api.Name, v), func() (bool, string) {
						t.Do(c, req, resp, v)
						got = code()
						return !coordinatorMoving(got), codeName(got)
					})
					t.wantCode(fmt.Sprintf("%s v%d", api.Name, v), got, nil)
				}})
		}
	}
}
