package brokertest

import (
	"testing"

	"github.com/spoolmq/spool/broker/brokertest/testca"
)

// AdminJAAS is the PLAIN JAAS config of SASLSSLProps: one user, admin, password admin-secret.
const AdminJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`

// SASLSSLProps are the properties of a broker whose one listener is SASL_SSL, with a server
// certificate from ca, PLAIN for admin (AdminJAAS) and SCRAM-SHA-512 for the users a test
// creates through AlterUserScramCredentials. Callers add what their test needs (an
// authorizer, a second listener) to the map they get.
func SASLSSLProps(t testing.TB, ca *testca.CA) map[string]string {
	t.Helper()
	return map[string]string{
		"listeners":               "SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": AdminJAAS,
		"ssl.keystore.type":                             "PEM",
		"ssl.keystore.location":                         ca.Server(t, "broker").File,
	}
}
