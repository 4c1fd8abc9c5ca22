package brokertest_test

import (
	"os"
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	brokertest.StopSharedZooKeeper()
	os.Exit(code)
}
