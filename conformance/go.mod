module github.com/spoolmq/spool/conformance

go 1.26.8
