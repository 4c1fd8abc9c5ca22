module github.com/spoolmq/spool/sdk-cgo

go 1.26.8

require (
	github.com/spoolmq/spool/broker v0.0.0
	github.com/spoolmq/spool/protocol-spec v0.0.0
	github.com/spoolmq/spool/sdk-go v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
)

replace (
	github.com/spoolmq/spool/broker => ../broker
	github.com/spoolmq/spool/protocol-spec => ../protocol-spec
	github.com/spoolmq/spool/sdk-go => ../sdk-go
)
