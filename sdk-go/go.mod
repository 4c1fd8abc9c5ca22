module github.com/spoolmq/spool/sdk-go

go 1.26.8
