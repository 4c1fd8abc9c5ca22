module github.com/spoolmq/spool/sdk-cgo

go 1.26.8
