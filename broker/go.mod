module github.com/spoolmq/spool/broker

go 1.26.8
