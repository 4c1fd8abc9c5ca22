package brokertest_test

import (
	"testing"

	"github.com/spoolmq/spool/broker/brokertest"
)

// A broker stopped before any client connects (or before Serve has even begun) stops
// cleanly; under -race this used to report Serve and Close racing.
func TestStartStopWithoutClients(t *testing.T) {
	for range 20 {
		b := brokertest.Start(t, brokertest.Options{})
		b.Stop(t)
	}
}
