package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spoolmq/spool/protocol-spec/wire"
	spool "github.com/spoolmq/spool/sdk-go"
)

// userJSON is one user in `spool user list --json`.
type userJSON struct {
	User        string           `json:"user"`
	Credentials []credentialJSON `json:"credentials"`
}

type credentialJSON struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// userCmd manages SCRAM users through AlterUserScramCredentials and
// DescribeUserScramCredentials, as kafka-configs.sh --entity-type users does.
func userCmd(ctx context.Context, clientFor clientFunc, sub string, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlags("user " + sub)
	var mechs listFlag
	var iterations *int
	var password *string
	asJSON := new(bool)
	switch sub {
	case "create":
		fs.Var(&mechs, "mechanism", "`M`: SCRAM-SHA-256 or SCRAM-SHA-512; repeatable (default SCRAM-SHA-512)")
		iterations = fs.Int("iterations", 4096, fmt.Sprintf("SCRAM iteration count, %d to %d", spool.ScramMinIterations, spool.ScramMaxIterations))
		password = fs.String("password", "", "the password (default: the first line of stdin)")
	case "delete":
		fs.Var(&mechs, "mechanism", "`M`: delete only this mechanism's credential; repeatable (default every one)")
	case "list":
		asJSON = fs.Bool("json", false, "print one JSON array (fields in the README)")
	}
	if err := fs.parse(args); err != nil {
		return err
	}
	names := fs.Args()
	if sub != "list" && len(names) == 0 {
		return fs.bad("user %s: missing user name", sub)
	}
	if slices.Contains(names, "") {
		return fs.bad("user %s: empty user name", sub)
	}
	ms, err := parseEach(mechs, spool.ParseScramMechanism)
	if err != nil {
		return fs.bad("user %s: --mechanism: %v", sub, err)
	}
	if sub == "create" {
		if *iterations < spool.ScramMinIterations || *iterations > spool.ScramMaxIterations {
			return fs.bad("user create: --iterations must be from %d to %d, got %d", spool.ScramMinIterations, spool.ScramMaxIterations, *iterations)
		}
		if len(ms) == 0 {
			ms = []spool.ScramMechanism{spool.ScramSHA512}
		}
		if *password == "" {
			line, err := bufio.NewReader(stdin).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("reading the password from stdin: %w", err)
			}
			*password = strings.TrimRight(line, "\r\n")
		}
		if *password == "" {
			return fs.bad("user create: empty password: give --password or a line on stdin")
		}
	}
	cl, err := clientFor()
	if err != nil {
		return err
	}
	defer cl.Close()
	ad := cl.Admin()
	switch sub {
	case "create":
		for _, n := range names {
			for _, m := range ms {
				if err := ad.UpsertUserScram(ctx, n, m, *iterations, *password); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "set %s credential of %s (%d iterations)\n", m, n, *iterations)
			}
		}
	case "delete":
		for _, n := range names {
			del := ms
			if len(del) == 0 {
				us, err := ad.DescribeUserScram(ctx, n)
				if err != nil {
					return err
				}
				for _, u := range us {
					if u.Err != nil {
						return fmt.Errorf("user %s: %w", n, u.Err)
					}
					for _, c := range u.Credentials {
						del = append(del, c.Mechanism)
					}
				}
			}
			for _, m := range del {
				if err := ad.DeleteUserScram(ctx, n, m); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "deleted %s credential of %s\n", m, n)
			}
		}
	case "list":
		us, err := ad.DescribeUserScram(ctx, names...)
		if err != nil {
			return err
		}
		out := []userJSON{}
		var errs []error
		for _, u := range us {
			if u.Err != nil {
				if errors.Is(u.Err, wire.ErrResourceNotFound) {
					u.Err = fmt.Errorf("no SCRAM credentials: %w", u.Err)
				}
				errs = append(errs, fmt.Errorf("user %s: %w", u.User, u.Err))
				continue
			}
			j := userJSON{User: u.User, Credentials: []credentialJSON{}}
			for _, c := range u.Credentials {
				j.Credentials = append(j.Credentials, credentialJSON{Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
			}
			out = append(out, j)
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if *asJSON {
			return writeJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
		for _, u := range out {
			for _, c := range u.Credentials {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", u.User, c.Mechanism, c.Iterations)
			}
		}
		return tw.Flush()
	}
	return nil
}
