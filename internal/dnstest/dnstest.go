// Package dnstest is a DNS server on 127.0.0.1 for tests: it answers TXT
// questions from records the test sets (UDP and TCP), NXDOMAIN for names
// it has none of, and can be made slow or failing.
package dnstest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Server is a running test DNS server.
type Server struct {
	// Addr is host:port of both the UDP and the TCP listener.
	Addr string

	mu      sync.Mutex
	txt     map[string][]string // fully qualified lower-case name → TXT strings
	delay   time.Duration
	rcode   int
	queries int
}

// Start runs a server for the rest of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	// UDP and TCP on one port: a free UDP port may be taken for TCP by
	// another process, so a few ports are tried.
	var (
		pc   net.PacketConn
		ln   net.Listener
		addr string
		err  error
	)
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("dnstest: listen udp: %v", err)
		}
		addr = pc.LocalAddr().String()
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		_ = pc.Close()
	}
	if err != nil {
		t.Fatalf("dnstest: listen tcp: %v", err)
	}
	s := &Server{Addr: addr, txt: map[string][]string{}, rcode: dns.RcodeSuccess}
	udp := &dns.Server{PacketConn: pc, Handler: s}
	tcp := &dns.Server{Listener: ln, Handler: s}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	})
	return s
}

// SetTXT sets the TXT records of name (each value one record); none
// removes them.
func (s *Server) SetTXT(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := dns.Fqdn(strings.ToLower(name))
	if len(values) == 0 {
		delete(s.txt, key)
		return
	}
	s.txt[key] = values
}

// SetDelay makes every answer wait d.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// SetFailing makes every answer SERVFAIL (true) or normal again (false).
func (s *Server) SetFailing(failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcode = dns.RcodeSuccess
	if failing {
		s.rcode = dns.RcodeServerFailure
	}
}

// Queries is how many questions the server has answered.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	s.mu.Lock()
	s.queries++
	delay, rcode := s.delay, s.rcode
	var values []string
	if len(q.Question) == 1 {
		values = s.txt[strings.ToLower(q.Question[0].Name)]
	}
	s.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	switch {
	case rcode != dns.RcodeSuccess:
		m.Rcode = rcode
	case len(q.Question) != 1 || len(values) == 0:
		m.Rcode = dns.RcodeNameError
	case q.Question[0].Qtype == dns.TypeTXT:
		for _, v := range values {
			m.Answer = append(m.Answer, &dns.TXT{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
				Txt: chunks(v),
			})
		}
	}
	_ = w.WriteMsg(m)
}

// chunks splits a TXT value into character-strings of at most 255 bytes.
func chunks(v string) []string {
	var out []string
	for len(v) > 255 {
		out = append(out, v[:255])
		v = v[255:]
	}
	return append(out, v)
}
