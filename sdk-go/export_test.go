package spool

// PeakPartitionInFlight is the most produce batches of one partition that cl has had in
// flight at once.
func PeakPartitionInFlight(cl *Client) int { return int(cl.prod.peakInFlight.Load()) }

// QueuedBatches counts the sealed batches of one partition that cl has not finished yet, and
// how many of them are encoded (ready to be sent as they are).
func QueuedBatches(cl *Client, topic string, partition int32) (queued, encoded int) {
	pb := cl.prod.part(topic, partition)
	pb.mu.Lock()
	defer pb.mu.Unlock()
	for _, b := range pb.queue {
		queued++
		if b.data != nil {
			encoded++
		}
	}
	return queued, encoded
}
