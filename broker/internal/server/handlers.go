package server

import (
	"context"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// handlerFunc serves one request. It runs on the connection's reader goroutine, so what it does
// before returning happens in request order (appends, for one); it may return a pending reply
// completed later by another goroutine (fsync waits, long polls). It returns nil to send nothing.
type handlerFunc func(s *Server, ctx context.Context, req *request) *pending

// handlers is the one table of served APIs; ApiVersions advertises these, at the version
// ranges of the protocol spec (wire.APIs), except the inter-broker ones (interBrokerOnly).
var handlers map[int16]handlerFunc

// The table is filled in init because ApiVersions' handler reads it.
func init() {
	handlers = map[int16]handlerFunc{
		wire.KeyProduce:                      handleProduce,
		wire.KeyFetch:                        handleFetch,
		wire.KeyListOffsets:                  handleListOffsets,
		wire.KeyFindCoordinator:              handleFindCoordinator,
		wire.KeyMetadata:                     handleMetadata,
		wire.KeyApiVersions:                  handleApiVersions,
		wire.KeySaslHandshake:                handleSaslHandshake,
		wire.KeySaslAuthenticate:             handleSaslAuthenticate,
		wire.KeyCreateTopics:                 handleCreateTopics,
		wire.KeyDeleteTopics:                 handleDeleteTopics,
		wire.KeyInitProducerId:               handleInitProducerID,
		wire.KeyAddPartitionsToTxn:           handleAddPartitionsToTxn,
		wire.KeyAddOffsetsToTxn:              handleAddOffsetsToTxn,
		wire.KeyEndTxn:                       handleEndTxn,
		wire.KeyWriteTxnMarkers:              handleWriteTxnMarkers,
		wire.KeyTxnOffsetCommit:              handleTxnOffsetCommit,
		wire.KeyDescribeProducers:            handleDescribeProducers,
		wire.KeyDescribeTransactions:         handleDescribeTransactions,
		wire.KeyListTransactions:             handleListTransactions,
		wire.KeyDescribeConfigs:              handleDescribeConfigs,
		wire.KeyAlterConfigs:                 handleAlterConfigs,
		wire.KeyDescribeLogDirs:              handleDescribeLogDirs,
		wire.KeyCreatePartitions:             handleCreatePartitions,
		wire.KeyIncrementalAlterConfigs:      handleIncrementalAlterConfigs,
		wire.KeyDescribeCluster:              handleDescribeCluster,
		wire.KeyOffsetCommit:                 handleOffsetCommit,
		wire.KeyOffsetFetch:                  handleOffsetFetch,
		wire.KeyJoinGroup:                    handleJoinGroup,
		wire.KeyHeartbeat:                    handleHeartbeat,
		wire.KeyLeaveGroup:                   handleLeaveGroup,
		wire.KeySyncGroup:                    handleSyncGroup,
		wire.KeyDescribeGroups:               handleDescribeGroups,
		wire.KeyListGroups:                   handleListGroups,
		wire.KeyDeleteGroups:                 handleDeleteGroups,
		wire.KeyOffsetDelete:                 handleOffsetDelete,
		wire.KeyElectLeaders:                 handleElectLeaders,
		wire.KeyAlterPartitionReassignments:  handleAlterPartitionReassignments,
		wire.KeyListPartitionReassignments:   handleListPartitionReassignments,
		wire.KeyDescribeAcls:                 handleDescribeAcls,
		wire.KeyCreateAcls:                   handleCreateAcls,
		wire.KeyDeleteAcls:                   handleDeleteAcls,
		wire.KeyDescribeUserScramCredentials: handleDescribeUserScramCredentials,
		wire.KeyAlterUserScramCredentials:    handleAlterUserScramCredentials,
	}
}

func (s *Server) handler(key int16) handlerFunc { return handlers[key] }

// interBrokerOnly are served APIs whose audience is other brokers: never advertised to
// clients (DESIGN.md §3).
var interBrokerOnly = map[int16]bool{wire.KeyWriteTxnMarkers: true}

// errCode is the wire code of err (0 for nil).
func errCode(err error) int16 { return wire.CodeOf(err) }

// errMessage is a nullable error message for responses that carry one.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	return &m
}
