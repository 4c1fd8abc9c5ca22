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
// cannot carry record batches v2: producing must fail with a clear error, not hang.
func TestNoCommonVersion(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(kversion.V0_10_0()), kfake.SeedTopics(1, "old"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := newClient(t, c.ListenAddrs()[0], spool.Idempotence(false))
	err = cl.ProduceSync(testCtx(t), spool.StringRecord("old", "x"))
	if !errors.Is(err, wire.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "no Produce version in common") {
		t.Fatalf("err %v", err)
	}
}
