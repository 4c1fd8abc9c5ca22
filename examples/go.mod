module github.com/spoolmq/spool/examples

go 1.26.8
