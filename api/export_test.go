package api

import "time"

// SetStreamTimings sets the keepalive interval of event streams and the
// poll interval of followed logs (tests shorten them).
func (s *Server) SetStreamTimings(keepalive, logPoll time.Duration) {
	s.keepalive, s.logPoll = keepalive, logPoll
}
