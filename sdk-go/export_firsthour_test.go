package spool

// BufferedFetches counts the fetches cl holds for Poll that Poll has not taken yet.
func BufferedFetches(cl *Client) int { return len(cl.cons.buf) }
