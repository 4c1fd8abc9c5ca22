package spool

// PeakPartitionInFlight is the most produce batches of one partition that cl has had in
// flight at once.
func PeakPartitionInFlight(cl *Client) int { return int(cl.prod.peakInFlight.Load()) }
