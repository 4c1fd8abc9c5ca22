package conformance

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Version negotiation and framing: SPEC.md §1, §2, §8.14.

func init() {
	for v := int16(0); v <= maxV(wire.KeyApiVersions); v++ {
		register(&Case{ID: fmt.Sprintf("versions/apiversions-v%d", v), Spec: "§8.14",
			Desc: fmt.Sprintf("ApiVersions v%d answers with no error and lists ApiVersions itself", v),
			Run: func(t *T) {
				c := t.Conn()
				req := &wire.ApiVersionsRequest{ClientSoftwareName: "spool-conformance", ClientSoftwareVersion: "1"}
				var resp wire.ApiVersionsResponse
				t.Do(c, req, &resp, v)
				t.wantCode("ApiVersions", resp.ErrorCode, nil)
				if r, ok := advertised(resp)[wire.KeyApiVersions]; !ok || r[0] != 0 || r[1] < 3 {
					t.Errorf("ApiVersions is advertised as %v, want 0-3 or wider", r)
				}
			}})
	}
	register(&Case{ID: "versions/apiversions-too-high", Spec: "§8.14",
		Desc: "ApiVersions at a version above the broker's gets a v0 answer with UNSUPPORTED_VERSION and the ApiVersions range",
		Run: func(t *T) {
			c := t.Conn()
			// v0 and v127 share the body encoding (an empty request at v0; a flexible one is
			// not expected to parse), so send a header v2 request the way clients do.
			if err := c.WriteRaw(Frame(&wire.ApiVersionsRequest{}, 127, 7)); err != nil {
				t.Fatalf("%v", err)
			}
			var resp wire.ApiVersionsResponse
			if err := c.Recv(&resp, 0, 7, 10*time.Second); err != nil {
				t.Fatalf("ApiVersions v127: %v", err)
			}
			t.wantCode("ApiVersions v127", resp.ErrorCode, wire.ErrUnsupportedVersion)
			if _, ok := advertised(resp)[wire.KeyApiVersions]; !ok {
				t.Errorf("the answer does not list ApiVersions' own range")
			}
		}})
	for _, api := range wire.APIs {
		if api.Key == wire.KeyWriteTxnMarkers {
			continue // inter-broker: Spool never advertises it to clients (Kafka's ZooKeeper mode does)
		}
		register(&Case{ID: "versions/window-" + kebab(api.Name), Spec: "§1",
			Desc: fmt.Sprintf("ApiVersions advertises %s (key %d) covering the window v%d-%d", api.Name, api.Key, api.MinVersion, api.MaxVersion),
			Run: func(t *T) {
				r, ok := t.apiVersions()[api.Key]
				if !ok {
					t.Fatalf("%s is not advertised", api.Name)
				}
				if r[0] > api.MinVersion || r[1] < api.MaxVersion {
					t.Errorf("%s advertised v%d-%d, want a range covering v%d-%d", api.Name, r[0], r[1], api.MinVersion, api.MaxVersion)
				}
			}})
	}
	register(&Case{ID: "versions/unsupported-version-closes", Spec: "§2",
		Desc: "a request at a version the broker does not support closes the connection without a reply",
		Run: func(t *T) {
			c := t.Conn()
			if err := c.WriteRaw(Frame(&wire.MetadataRequest{}, 99, 1)); err != nil {
				t.Fatalf("%v", err)
			}
			if err := c.WaitClosed(10 * time.Second); err != nil {
				t.Errorf("Metadata v99: %v", err)
			}
		}})
	register(&Case{ID: "versions/unknown-api-closes", Spec: "§2",
		Desc: "a request with an unknown API key closes the connection without a reply",
		Run: func(t *T) {
			c := t.Conn()
			frame := binary.BigEndian.AppendUint32(nil, 10)
			frame = binary.BigEndian.AppendUint16(frame, 9999) // api key
			frame = binary.BigEndian.AppendUint16(frame, 0)    // version
			frame = binary.BigEndian.AppendUint32(frame, 1)    // correlation id
			frame = binary.BigEndian.AppendUint16(frame, 0xffff)
			if err := c.WriteRaw(frame); err != nil {
				t.Fatalf("%v", err)
			}
			if err := c.WaitClosed(10 * time.Second); err != nil {
				t.Errorf("API key 9999: %v", err)
			}
		}})
	register(&Case{ID: "versions/oversized-frame-closes", Spec: "§2",
		Desc: "a frame size above socket.request.max.bytes (100 MiB) closes the connection before the payload is read",
		Run: func(t *T) {
			c := t.Conn()
			if err := c.WriteRaw(binary.BigEndian.AppendUint32(nil, 200<<20)); err != nil {
				t.Fatalf("%v", err)
			}
			if err := c.WaitClosed(10 * time.Second); err != nil {
				t.Errorf("200 MiB frame: %v", err)
			}
		}})
	register(&Case{ID: "versions/negative-frame-closes", Spec: "§2",
		Desc: "a negative frame size closes the connection",
		Run: func(t *T) {
			c := t.Conn()
			if err := c.WriteRaw([]byte{0xff, 0xff, 0xff, 0xf0}); err != nil {
				t.Fatalf("%v", err)
			}
			if err := c.WaitClosed(10 * time.Second); err != nil {
				t.Errorf("negative frame: %v", err)
			}
		}})
	register(&Case{ID: "versions/correlation-id-echoed", Spec: "§2",
		Desc: "the broker copies any correlation id (negative, zero, repeated) into the response unchanged",
		Run: func(t *T) {
			c := t.Conn()
			ids := []int32{-5, 0, 0, 1 << 30, -2147483648}
			for _, id := range ids {
				if err := c.WriteRaw(Frame(&wire.ApiVersionsRequest{}, 2, id)); err != nil {
					t.Fatalf("%v", err)
				}
			}
			for _, id := range ids {
				var resp wire.ApiVersionsResponse
				if err := c.Recv(&resp, 2, id, 10*time.Second); err != nil {
					t.Fatalf("correlation id %d: %v", id, err)
				}
			}
		}})
	register(&Case{ID: "versions/pipelined-in-order", Spec: "§2",
		Desc: "pipelined requests of different APIs are answered in the order they were sent",
		Run: func(t *T) {
			c := t.Conn()
			md := def[wire.MetadataRequest]()
			md.Topics = []wire.MetadataRequestTopic{}
			reqs := []struct {
				m    wire.Message
				resp wire.Message
				v    int16
			}{
				{md, new(wire.MetadataResponse), maxV(wire.KeyMetadata)},
				{&wire.ApiVersionsRequest{}, new(wire.ApiVersionsResponse), 0},
				{def[wire.ListGroupsRequest](), new(wire.ListGroupsResponse), maxV(wire.KeyListGroups)},
				{def[wire.DescribeClusterRequest](), new(wire.DescribeClusterResponse), maxV(wire.KeyDescribeCluster)},
				{md, new(wire.MetadataResponse), 0},
			}
			for i, r := range reqs {
				if err := c.WriteRaw(Frame(r.m, r.v, int32(100+i))); err != nil {
					t.Fatalf("%v", err)
				}
			}
			for i, r := range reqs {
				if err := c.Recv(r.resp, r.v, int32(100+i), 20*time.Second); err != nil {
					t.Fatalf("response %d: %v", i, err)
				}
			}
		}})
	register(&Case{ID: "versions/metadata-v0-probe", Spec: "§8.4",
		Desc: "Metadata v0 with an empty topic list (kafka-python's probe) lists brokers and all topics",
		Run: func(t *T) {
			topic := t.Topic(1)
			c := t.Conn()
			var resp wire.MetadataResponse
			t.Do(c, &wire.MetadataRequest{Topics: []wire.MetadataRequestTopic{}}, &resp, 0)
			if len(resp.Brokers) == 0 {
				t.Errorf("no brokers")
			}
			if findTopic(resp, topic) == nil {
				t.Errorf("topic %s missing from the v0 all-topics answer", topic)
			}
		}})
}

// advertised maps each advertised API key to its [min, max] range.
func advertised(resp wire.ApiVersionsResponse) map[int16][2]int16 {
	m := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		m[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return m
}

func (t *T) apiVersions() map[int16][2]int16 {
	var resp wire.ApiVersionsResponse
	t.Do(t.Conn(), &wire.ApiVersionsRequest{ClientSoftwareName: "spool-conformance", ClientSoftwareVersion: "1"}, &resp, maxV(wire.KeyApiVersions))
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %s", codeName(resp.ErrorCode))
	}
	return advertised(resp)
}

func kebab(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' {
			if i > 0 {
				out = append(out, '-')
			}
			ch += 'a' - 'A'
		}
		out = append(out, ch)
	}
	return string(out)
}

// def returns a new message with every field at its default.
func def[M any, PM interface {
	*M
	Default()
}]() PM {
	m := PM(new(M))
	m.Default()
	return m
}

func findTopic(resp wire.MetadataResponse, name string) *wire.MetadataResponseTopic {
	for i := range resp.Topics {
		if n := resp.Topics[i].Name; n != nil && *n == name {
			return &resp.Topics[i]
		}
	}
	return nil
}
