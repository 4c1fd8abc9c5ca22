package spool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestNoCommonVersion runs against a broker capped at Kafka 0.10.0, whose Produce (max v2)
// cannot carry record batches v2: producing must fail with a clear error, not hang. kfake is
// capped by its own option; our broker's real ApiVersions answer is cut down to Kafka
// 0.10.0's window on its way to the client.
func TestNoCommonVersion(t *testing.T) {
	t.Parallel()
	t.Run("kfake", func(t *testing.T) {
		t.Parallel()
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(kversion.V0_10_0()), kfake.SeedTopics(1, "old"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		testNoCommonVersion(t, newClient(t, c.ListenAddrs()[0], spool.Idempotence(false)), "old")
	})
	t.Run("spool", func(t *testing.T) {
		t.Parallel()
		addr := targets[0].start(t)
		// CreateTopics came after 0.10.0, so the topic is made without the cap.
		topic := createTopic(t, newClient(t, addr), 1)
		rr := startRewriteRelay(t, addr, rewriteHooks{response: func(key, _ int16, resp wire.Message) bool {
			if key != wire.KeyApiVersions {
				return false
			}
			capVersions(resp.(*wire.ApiVersionsResponse), kversion.V0_10_0())
			return true
		}})
		testNoCommonVersion(t, newClient(t, addr, spool.Dialer(rr.dial), spool.Idempotence(false)), topic)
	})
}

func testNoCommonVersion(t *testing.T, cl *spool.Client, topic string) {
	err := cl.ProduceSync(testCtx(t), spool.StringRecord(topic, "x"))
	if !errors.Is(err, wire.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "no Produce version in common") {
		t.Fatalf("err %v", err)
	}
}

// capVersions narrows an ApiVersions answer to what a broker of version vs supports: keys vs
// lacks, or whose range ends below ours, are dropped.
func capVersions(resp *wire.ApiVersionsResponse, vs *kversion.Versions) {
	kept := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		if top, ok := vs.LookupMaxKeyVersion(k.ApiKey); ok && top >= k.MinVersion {
			k.MaxVersion = min(k.MaxVersion, top)
			kept = append(kept, k)
		}
	}
	resp.ApiKeys = kept
}
