package nbd

import (
	"net"
	"slices"
	"syscall"
)

// setCongestion gives a loopback connection a congestion control that
// does not pace. Pacing spaces a sender's segments to what the path is
// estimated to carry, which protects a bottleneck queue; loopback has no
// such queue, and with BBR (a common system default, and this machine's)
// the pacing timers cost the sending thread and capped it at BBR's own
// estimate: 1 MiB reads measured 3.1 GB/s with BBR and 4.4 GB/s with
// cubic, where nbdkit on BBR gave 4.0 (docs/benchmarks/nbd.md). Remote
// clients keep the system's choice: there the path is real.
func (s *Server) setCongestion(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok || slices.Equal(s.cfg.LoopbackCongestion, []string{"-"}) {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for _, cc := range s.cfg.LoopbackCongestion {
			// An unprivileged process may only choose what
			// net.ipv4.tcp_allowed_congestion_control lists; reno
			// is always there.
			err = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, cc)
			if err == nil {
				return
			}
		}
		s.log.Debug("nbd: loopback connection keeps the system's congestion control", "tried", s.cfg.LoopbackCongestion, "err", err)
	})
}
