package server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spoolmq/spool/broker/brokertest"
)

// scramBroker has a SASL_PLAINTEXT listener with PLAIN (user admin, from the JAAS config) and
// both SCRAM mechanisms (users from AlterUserScramCredentials).
func scramBroker(t *testing.T, dataDir string) *brokertest.Broker {
	return brokertest.Start(t, brokertest.Options{DataDir: dataDir, Props: map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`,
	}})
}

func scramAdmin(t *testing.T, b *brokertest.Broker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func alterSCRAM(t *testing.T, adm *kadm.Client, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(context.Background(), del, up)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("altering %s: %v %s", r.User, r.Err, r.ErrMessage)
		}
	}
}

// franz-go authenticates with SCRAM-SHA-256 and SCRAM-SHA-512 using credentials created
// through AlterUserScramCredentials (every client's SCRAM-SHA-512 over SASL_SSL is in
// TestClientSecurityMatrix); a wrong password is refused; a deleted credential stops working;
// DescribeUserScramCredentials lists mechanisms and iterations; credentials survive a restart;
// Kafka's iteration bounds hold.
func TestSCRAM(t *testing.T) {
	parallel(t)
	b := scramBroker(t, "")
	adm := scramAdmin(t, b)
	ctx := context.Background()
	alterSCRAM(t, adm, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-scram"},
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-scram"},
	})
	addr := kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT"))
	alice := scram.Auth{User: "alice", Pass: "alice-scram"}
	if err := produceConsume(t, "scram-512", 5, addr, kgo.SASL(alice.AsSha512Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", err)
	}
	if err := produceConsume(t, "scram-256", 5, addr, kgo.SASL(alice.AsSha256Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	wrong := scram.Auth{User: "alice", Pass: "guess"}
	if err := metadataErr(t, addr, kgo.SASL(wrong.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := metadataErr(t, addr, kgo.SASL(scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("unknown user: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	infos := described["alice"].CredInfos
	if len(described) != 1 || len(infos) != 2 || infos[0].Mechanism != kadm.ScramSha256 || infos[0].Iterations != 8192 ||
		infos[1].Mechanism != kadm.ScramSha512 || infos[1].Iterations != 4096 {
		t.Errorf("DescribeUserScramCredentials: %+v", described)
	}
	if d, err := adm.DescribeUserSCRAMs(ctx, "nobody"); err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describing an unknown user: %+v %v, want RESOURCE_NOT_FOUND", d, err)
	}

	// Kafka's bounds, checked by the broker (the request is built by hand: kadm checks too).
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "bob", 2, 1000, []byte("salt"), make([]byte, 64)
	req.Upsertions = append(req.Upsertions, up)
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "carol", 2
	req.Deletions = append(req.Deletions, del)
	cl, err := kgo.NewClient(addr, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range resp.Results {
		codes[r.User] = r.ErrorCode
	}
	if codes["bob"] != kerr.UnacceptableCredential.Code || codes["carol"] != kerr.ResourceNotFound.Code {
		t.Errorf("1000 iterations and deleting a missing credential: %v, want UNACCEPTABLE_CREDENTIAL and RESOURCE_NOT_FOUND", codes)
	}

	// Deleting the SHA-256 credential: that mechanism stops working, the other does not.
	alterSCRAM(t, adm, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	if err := metadataErr(t, addr, kgo.SASL(alice.AsSha256Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("deleted SCRAM-SHA-256 credential: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// The credentials are in the data directory.
	dir := b.DataDir
	b.Stop(t)
	b = scramBroker(t, dir)
	if err := metadataErr(t, kgo.SeedBrokers(b.Listener(t, "SASL_PLAINTEXT")), kgo.SASL(alice.AsSha512Mechanism())); err != nil {
		t.Errorf("SCRAM-SHA-512 after a restart: %v", err)
	}
}
