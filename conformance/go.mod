module github.com/spoolmq/spool/conformance

go 1.26.8

require (
	github.com/spoolmq/spool/broker v0.0.0
	github.com/spoolmq/spool/protocol-spec v0.0.0
	github.com/spoolmq/spool/sdk-go v0.0.0
	github.com/twmb/franz-go v1.22.3
)

replace (
	github.com/spoolmq/spool/broker => ../broker
	github.com/spoolmq/spool/protocol-spec => ../protocol-spec
	github.com/spoolmq/spool/sdk-go => ../sdk-go
)
